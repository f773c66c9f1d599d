package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareStateSurvivesRestart: records a share group acknowledged are
// not delivered again after the broker restarts on the same log dir,
// because the share-partition state is in __share_group_state. Twenty
// records are acquired by hand; the first ten are accepted, the rest left
// acquired when the broker stops. After the restart the SPSO is 10 and a
// new franz-go share consumer receives exactly records 10..19, each for
// the second time.
func TestShareStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	props := map[string]string{"num.partitions": "1", "share.coordinator.state.topic.num.partitions": "3"}
	b := startTestBroker(t, dir, props)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("sh-restart"), kgo.AllowAutoTopicCreation())
	const n = 20
	for i := range n {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const group = "sg-restart"
	shareEarliest(ctx, t, cl, group)
	id := b.rm.TopicByName("sh-restart").Meta.ID

	member := "member-before-restart"
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.Version = 2
	fetch.GroupID, fetch.MemberID = kmsg.StringPtr(group), &member
	fetch.MaxBytes, fetch.MaxRecords = 1<<20, 100
	ft := kmsg.NewShareFetchRequestTopic()
	ft.TopicID = id
	ft.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
	fetch.Topics = append(fetch.Topics, ft)
	fresp, err := fetch.RequestWith(ctx, cl)
	if err != nil || fresp.ErrorCode != 0 {
		t.Fatalf("share fetch: %v %+v", err, fresp)
	}
	if a := fresp.Topics[0].Partitions[0].AcquiredRecords; len(a) != 1 || a[0].FirstOffset != 0 || a[0].LastOffset != n-1 {
		t.Fatalf("acquired %+v", a)
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 2
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), &member, 1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = id
	at.Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 9, AcknowledgeTypes: []int8{1}}}}}
	ack.Topics = append(ack.Topics, at)
	if aresp, err := ack.RequestWith(ctx, cl); err != nil || aresp.ErrorCode != 0 || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept 0..9: %v %+v", err, aresp)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	b2 := startTestBroker(t, dir, props)
	admin := newClient(t, b2)
	describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	describe.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	offs, err := describe.RequestWith(ctx, admin)
	if err != nil || len(offs.Groups) != 1 || len(offs.Groups[0].Topics) != 1 {
		t.Fatalf("describe offsets after restart: %v %+v", err, offs)
	}
	if p := offs.Groups[0].Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StartOffset != 10 {
		t.Fatalf("SPSO after restart: %+v", p)
	}

	cons := newClient(t, b2, kgo.ShareGroup(group), kgo.ConsumeTopics("sh-restart"))
	seen := map[int]bool{}
	for len(seen) < n-10 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d after the restart", len(seen), n-10)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, _ := strconv.Atoi(string(r.Value))
			if v < 10 {
				t.Errorf("record %d was accepted before the restart and delivered again", v)
			}
			if r.DeliveryCount() != 2 {
				t.Errorf("record %d: delivery count %d, want 2 (delivered once before the restart)", v, r.DeliveryCount())
			}
			seen[v] = true
			r.Ack(kgo.AckAccept)
		})
	}
	if err := cons.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
}
