package replica

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A follower builds the transaction state from what it copies as the
// leader does: the same last stable offset while a transaction is open, and
// the same aborted transactions once it is aborted.
func TestFollowerTransactionState(t *testing.T) {
	c := newTestCluster(t, 2, fastRC(10*time.Second), false, 1)
	all := []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, -1, "plain")
	b, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), Attributes: 0x10, ProducerID: 9, BaseSequence: 0},
		[]records.Record{{Value: []byte("txn")}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := records.ParseHeader(b)
	if res := c.broker(1).m.Produce(c.part(1, 0), b, h, -1, time.Now().Add(10*time.Second)); res.Err != nil {
		t.Fatal(res.Err)
	}
	c.waitReplicated(1, 2)
	if l, f := c.part(1, 0).LastStableOffset(), c.part(2, 0).LastStableOffset(); l != 1 || f != 1 {
		t.Fatalf("LSO with an open transaction: leader %d, follower %d, want 1", l, f)
	}
	done := make(chan error, 1)
	c.broker(1).m.AppendMarker(c.part(1, 0), 9, 0, records.ControlAbort, 0, time.Now().UnixMilli(), func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.waitReplicated(1, 2)
	leo := c.part(1, 0).Log.LogEndOffset()
	for _, id := range all {
		p := c.part(id, 0)
		if lso := p.LastStableOffset(); lso != leo {
			t.Errorf("broker %d LSO %d after the abort, want %d", id, lso, leo)
		}
		want := []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 9, FirstOffset: 1}}
		if got := p.AbortedBetween(0, leo); !slices.EqualFunc(got, want, func(a, b kmsg.FetchResponseTopicPartitionAbortedTransaction) bool {
			return a.ProducerID == b.ProducerID && a.FirstOffset == b.FirstOffset
		}) {
			t.Errorf("broker %d aborted transactions %+v, want %+v", id, got, want)
		}
	}
}

// Stop ends every fetcher and the leader loop: nothing the cluster started
// is left running.
func TestReplicationLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Run("cluster", func(t *testing.T) {
		c := newTestCluster(t, 3, fastRC(10*time.Second), false, 2)
		all := []int32{1, 2, 3}
		c.elect(0, 1, all, all, all...)
		c.mustProduce(1, -1, "a")
		c.elect(0, 2, all, all, all...)
		c.mustProduce(2, -1, "b")
		// The new leader stopped its fetcher; the others follow broker 2 only.
		for id, want := range map[int32][]int32{1: {2}, 2: nil, 3: {2}} {
			m := c.broker(id).m
			m.repl.mu.Lock()
			var leaders []int32
			for k := range m.repl.mu.fetchers {
				leaders = append(leaders, k.leader)
			}
			m.repl.mu.Unlock()
			if !slices.Equal(leaders, want) {
				t.Errorf("broker %d fetches from %v, want %v", id, leaders, want)
			}
		}
	})
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// StopReplica with delete removes the log and, once every partition of the
// topic is gone, the topic; a later MakeFollower creates the log again and
// copies the leader's data from the start.
func TestStopReplicaDeleteAndRecreate(t *testing.T) {
	c := newTestCluster(t, 2, fastRC(10*time.Second), false, 1)
	all := []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, -1, "a")
	c.waitReplicated(1, 2)
	m := c.broker(2).m
	if err := m.StopReplica("t", 0, true); err != nil {
		t.Fatal(err)
	}
	if m.TopicByName("t") != nil {
		t.Fatal("topic still registered after its only partition was deleted")
	}
	if err := m.MakeFollower("t", 0, [16]byte{1}, c.state(0)); err == nil {
		t.Fatal("MakeFollower with another topic id succeeded")
	}
	c.apply(2, 0, c.state(0))
	c.waitReplicated(1, 2)
	if got := c.values(2, 0); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("recreated follower holds %q, want [a]", got)
	}
}

// TestFollowerSendsBrokerEpoch: a follower's Fetch (v15 and later) names
// it in ReplicaState with its registration epoch, as Kafka's ZooKeeper-mode
// followers do (they used to send -1).
func TestFollowerSendsBrokerEpoch(t *testing.T) {
	c := newTestCluster(t, 2, fastRC(10*time.Second), false, 1)
	all := []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, -1, "x")
	c.waitReplicated(1, 2)
	b := c.broker(1)
	b.connMu.Lock()
	got, ok := b.fetchEpochs[2]
	b.connMu.Unlock()
	if !ok || got != harnessBrokerEpoch(2) {
		t.Fatalf("leader saw follower 2's Fetch with broker epoch %d (seen %v), want %d", got, ok, harnessBrokerEpoch(2))
	}
}
