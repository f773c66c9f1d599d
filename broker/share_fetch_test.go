package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupConsumeAll: a franz-go share consumer reads every record of
// a topic (share.auto.offset.reset=earliest set as a GROUP config), accepts
// them, and the SPSO ends at the high watermark; the group is listed as a
// share group and can be deleted once its member left.
func TestShareGroupConsumeAll(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), map[string]string{"num.partitions": "3"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := newClient(t, b, kgo.DefaultProduceTopic("sh-events"), kgo.AllowAutoTopicCreation())
	const n = 300
	for i := range n {
		if err := admin.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	aresp, err := alter.RequestWith(ctx, admin)
	if err != nil || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter group config: %v %+v", err, aresp)
	}
	desc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "sg", []string{"share.auto.offset.reset"}
	desc.Resources = append(desc.Resources, dr)
	dresp, err := desc.RequestWith(ctx, admin)
	if err != nil || len(dresp.Resources[0].Configs) != 1 || *dresp.Resources[0].Configs[0].Value != "earliest" {
		t.Fatalf("describe group config: %v %+v", err, dresp)
	}

	cl := newClient(t, b, kgo.ShareGroup("sg"), kgo.ConsumeTopics("sh-events"))
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", len(seen), n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.DeliveryCount() < 1 {
				t.Errorf("record %s delivery count %d", r.Value, r.DeliveryCount())
			}
			seen[string(r.Value)] = true
			r.Ack(kgo.AckAccept)
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}

	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	lresp, err := lg.RequestWith(ctx, admin)
	if err != nil || len(lresp.Groups) != 1 || lresp.Groups[0].Group != "sg" || lresp.Groups[0].GroupType != "share" {
		t.Fatalf("list share groups: %v %+v", err, lresp)
	}

	var spso int64
	describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	describe.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}
	offs, err := describe.RequestWith(ctx, admin)
	if err != nil || len(offs.Groups) != 1 {
		t.Fatalf("describe offsets: %v %+v", err, offs)
	}
	for _, tt := range offs.Groups[0].Topics {
		for _, p := range tt.Partitions {
			spso += p.StartOffset
			if p.Lag != 0 {
				t.Errorf("partition %d lag %d after all acks", p.Partition, p.Lag)
			}
		}
	}
	if spso != n {
		t.Fatalf("sum of SPSOs %d, want %d", spso, n)
	}

	cl.Close() // leaves the group
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"sg", "not-a-group"}
	delResp, err := del.RequestWith(ctx, admin)
	if err != nil || len(delResp.Groups) != 2 {
		t.Fatalf("delete groups: %v %+v", err, delResp)
	}
	if delResp.Groups[0].Group != "sg" || delResp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete share group: %+v", delResp.Groups[0])
	}
	if delResp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete unknown group: %+v", delResp.Groups[1])
	}
}

// TestShareFetchSessionAndLongPoll drives ShareFetch and ShareAcknowledge
// by hand: session epochs, a long poll woken by a produce, a release that
// redelivers with delivery count 2, and closing the session.
func TestShareFetchSessionAndLongPoll(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), map[string]string{"num.partitions": "1"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("sh-poll"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, kgo.StringRecord("r0")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id := b.rm.TopicByName("sh-poll").Meta.ID

	group, member := "sg-raw", "member-1"
	fetch := func(epoch int32, wait int32, acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 2
		req.GroupID, req.MemberID = &group, &member
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, wait, 1, 1<<20, 100
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, AcknowledgementBatches: acks}}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	acquired := func(resp *kmsg.ShareFetchResponse) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		for _, tt := range resp.Topics {
			for _, p := range tt.Partitions {
				return p.AcquiredRecords
			}
		}
		return nil
	}

	// The default share.auto.offset.reset is latest: r0 is before the SPSO.
	if r := fetch(0, 0, nil); r.ErrorCode != 0 || len(acquired(r)) != 0 || r.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("epoch 0: %+v", r)
	}
	if r := fetch(5, 0, nil); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: code %d", r.ErrorCode)
	}

	// A long poll at epoch 1 returns when r1 is produced.
	got := make(chan *kmsg.ShareFetchResponse, 1)
	go func() { got <- fetch(1, 30000, nil) }()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("r1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var r *kmsg.ShareFetchResponse
	select {
	case r = <-got:
	case <-ctx.Done():
		t.Fatal("long poll never returned")
	}
	if a := acquired(r); len(a) != 1 || a[0].FirstOffset != 1 || a[0].LastOffset != 1 || a[0].DeliveryCount != 1 {
		t.Fatalf("long poll acquired %+v", a)
	}

	// Release r1 (piggybacked); it is acquired again with delivery count 2.
	rel := []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 1, LastOffset: 1, AcknowledgeTypes: []int8{2}}}
	r = fetch(2, 0, rel)
	if a := acquired(r); len(a) != 1 || a[0].DeliveryCount != 2 {
		t.Fatalf("after release %+v", r.Topics)
	}

	// Accept via ShareAcknowledge and close the session.
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 2
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = &group, &member, -1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = id
	at.Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 1, LastOffset: 1, AcknowledgeTypes: []int8{1}}}}}
	ack.Topics = append(ack.Topics, at)
	aresp, err := ack.RequestWith(ctx, cl)
	if err != nil || aresp.ErrorCode != 0 || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ack and close: %v %+v", err, aresp)
	}
	if r := fetch(3, 0, nil); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("after close: code %d", r.ErrorCode)
	}
}
