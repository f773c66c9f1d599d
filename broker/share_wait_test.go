package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchLongPollWokenByRelease: a ShareFetch parked with nothing
// to acquire (another member holds every record) is woken by that
// member's RELEASE, not only by appends, and acquires the released record.
func TestShareFetchLongPollWokenByRelease(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), map[string]string{"num.partitions": "1"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("sh-wake"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, kgo.StringRecord("r0")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	id := b.rm.TopicByName("sh-wake").Meta.ID
	const group = "sg-wake"
	shareEarliest(ctx, t, cl, group)
	fetch := func(member string, epoch, wait int32) *kmsg.ShareFetchResponse {
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 2
		req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(member)
		req.ShareSessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords = epoch, wait, 1, 1<<20, 10
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = id
		rt.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Error(err)
			return req.ResponseKind().(*kmsg.ShareFetchResponse)
		}
		return resp
	}
	acquired := func(r *kmsg.ShareFetchResponse) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		if len(r.Topics) == 0 || len(r.Topics[0].Partitions) == 0 {
			return nil
		}
		return r.Topics[0].Partitions[0].AcquiredRecords
	}
	if a := acquired(fetch("member-a", 0, 0)); len(a) != 1 || a[0].FirstOffset != 0 {
		t.Fatalf("member a acquired %+v", a)
	}
	if a := acquired(fetch("member-b", 0, 0)); len(a) != 0 {
		t.Fatalf("member b acquired %+v while a holds the record", a)
	}

	// b parks; the lock (30 s) outlasts the test's wait for it, so only a's
	// release can end the poll with a record.
	got := make(chan *kmsg.ShareFetchResponse, 1)
	go func() { got <- fetch("member-b", 1, 50000) }()
	// Wait until b is parked on the share host before releasing, so the
	// release is what wakes it (a release before would be acquired at once).
	for b.co.Shares().Watches() == 0 {
		select {
		case r := <-got:
			t.Fatalf("poll returned before the release: %+v", r)
		case <-ctx.Done():
			t.Fatal("the long poll never parked")
		case <-time.After(time.Millisecond):
		}
	}
	ack := kmsg.NewPtrShareAcknowledgeRequest()
	ack.Version = 2
	ack.GroupID, ack.MemberID, ack.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr("member-a"), 1
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = id
	at.Partitions = []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{2}}}}}
	ack.Topics = append(ack.Topics, at)
	if aresp, err := ack.RequestWith(ctx, cl); err != nil || aresp.ErrorCode != 0 || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release: %v %+v", err, aresp)
	}
	select {
	case r := <-got:
		if a := acquired(r); len(a) != 1 || a[0].FirstOffset != 0 || a[0].DeliveryCount != 2 {
			t.Fatalf("woken poll acquired %+v", a)
		}
	case <-ctx.Done():
		t.Fatal("the release did not wake the long poll")
	}
	if n := b.co.Shares().Watches(); n != 0 {
		t.Fatalf("%d watches left after the poll returned", n)
	}
}

// shareEarliest sets the group config share.auto.offset.reset=earliest, so
// the group's share-partitions start at the log start.
func shareEarliest(ctx context.Context, t testing.TB, cl *kgo.Client, group string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("earliest")}}
	alter.Resources = append(alter.Resources, res)
	if aresp, err := alter.RequestWith(ctx, cl); err != nil || aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset=earliest for %s: %v %+v", group, err, aresp)
	}
}
