package coordhost

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/coordinator/share"
)

// TestShareStateWriteFailureIsRetried: a failed write of
// __share_group_state fails the call (its requester's connection is
// closed) but keeps the change, which the next call writes; a coordinator
// replayed from the log then has it.
func TestShareStateWriteFailureIsRetried(t *testing.T) {
	h, f := newFaultyHost(t, map[string]string{"share.coordinator.state.topic.num.partitions": "1"})
	sh := h.Shares()
	topic, kerrv, msg := f.CreateTopic("t", 1, 1, nil, false)
	if kerrv != nil {
		t.Fatalf("CreateTopic: %v %s", kerrv, msg)
	}
	tp := share.TopicPartition{TopicID: topic.Meta.ID, Partition: 0}
	f.setFault(failPlan(share.StateTopic, 1))
	if err := sh.Call(func(c *share.Coordinator, _ time.Time) { c.SetStartOffset("g", tp, 5) }); err == nil {
		t.Fatal("the call whose state write failed succeeded")
	}
	reload := func() share.PartitionOffset {
		t.Helper()
		sh.mu.Lock()
		sh.mu.c = nil // the next call replays the topic
		sh.mu.Unlock()
		var o share.PartitionOffset
		var ok bool
		if err := sh.Call(func(c *share.Coordinator, _ time.Time) { o, ok = c.Offset("g", tp) }); err != nil {
			t.Fatal(err)
		}
		if !ok {
			return share.PartitionOffset{StartOffset: -1}
		}
		return o
	}
	if err := sh.Call(func(*share.Coordinator, time.Time) {}); err != nil {
		t.Fatalf("the retried write failed: %v", err)
	}
	if o := reload(); o.StartOffset != 5 {
		t.Fatalf("SPSO after replay %d, want 5", o.StartOffset)
	}
}
