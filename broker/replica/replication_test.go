package replica

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fastRC fetches and retries quickly so tests take milliseconds.
func fastRC(lag time.Duration) ReplicationConfig {
	return ReplicationConfig{LagTimeMax: lag, FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond}
}

// waitReplicated waits until every broker in ids has the leader's log end
// and high watermark.
func (c *testCluster) waitReplicated(leader int32, ids ...int32) {
	c.t.Helper()
	waitFor(c.t, "replication", func() bool {
		lp := c.part(leader, 0)
		leo := lp.Log.LogEndOffset()
		if lp.HighWatermark() != leo {
			return false
		}
		for _, id := range ids {
			p := c.part(id, 0)
			if p.Log.LogEndOffset() != leo || p.HighWatermark() != leo {
				return false
			}
		}
		return true
	})
}

func (c *testCluster) mustProduce(id int32, acks int16, v string) int64 {
	c.t.Helper()
	res := c.produce(id, 0, acks, v, 10*time.Second)
	if res.Err != nil {
		c.t.Fatalf("produce %q to broker %d (acks=%d): %v", v, id, acks, res.Err)
	}
	return res.BaseOffset
}

// Followers copy the leader's log byte for byte; the HW is the smallest
// LEO of the ISR; acks=all answers once every ISR member has the batch.
func TestReplicationCopiesLeaderLog(t *testing.T) {
	c := newTestCluster(t, 3, fastRC(10*time.Second), false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	for i := range 20 {
		acks := int16(1)
		if i%2 == 0 {
			acks = -1
		}
		off := c.mustProduce(1, acks, "v"+string(rune('a'+i)))
		if acks == -1 {
			// Answered only when the HW covers the batch: every ISR member has it.
			l := c.part(1, 0)
			if hw := l.HighWatermark(); hw <= off {
				t.Fatalf("acks=all answered with HW %d at offset %d", hw, off)
			}
			l.mu.Lock()
			for _, f := range []int32{2, 3} {
				if leo := l.mu.repl.leader.FollowerLEO(f); leo <= off {
					t.Errorf("acks=all answered before follower %d had offset %d (its LEO %d)", f, off, leo)
				}
			}
			l.mu.Unlock()
		}
	}
	c.waitReplicated(1, 2, 3)
	want := c.logBytes(1, 0)
	for _, id := range []int32{2, 3} {
		if got := c.logBytes(id, 0); !bytes.Equal(got, want) {
			t.Fatalf("broker %d's log differs from the leader's (%d vs %d bytes)", id, len(got), len(want))
		}
		if !slices.Equal(c.part(id, 0).Log.LeaderEpochs(), c.part(1, 0).Log.LeaderEpochs()) {
			t.Errorf("broker %d epochs %v, leader %v", id, c.part(id, 0).Log.LeaderEpochs(), c.part(1, 0).Log.LeaderEpochs())
		}
	}
	// A consumer fetch or a produce to a follower is refused.
	if res := c.produce(2, 0, 1, "x", time.Second); res.Err != kerr.NotLeaderForPartition {
		t.Fatalf("produce to a follower: %v, want NOT_LEADER_OR_FOLLOWER", res.Err)
	}
}

// A follower keeps the idempotent producer state of what it copies: after
// a leader change the new leader answers a retry with the original offset.
func TestNewLeaderDeduplicatesRetries(t *testing.T) {
	c := newTestCluster(t, 2, fastRC(10*time.Second), false, 1)
	all := []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, -1, "before")
	b, h := idempotentBatch(t, 7, 0, 0, "once")
	res := c.broker(1).m.Produce(c.part(1, 0), b, h, -1, time.Now().Add(10*time.Second))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	c.waitReplicated(1, 2)
	c.elect(0, 2, all, all, all...)
	leo := c.part(2, 0).Log.LogEndOffset()
	b, h = idempotentBatch(t, 7, 0, 0, "once")
	retry := c.broker(2).m.Produce(c.part(2, 0), b, h, -1, time.Now().Add(10*time.Second))
	if retry.Err != nil || retry.BaseOffset != res.BaseOffset {
		t.Fatalf("retry on the new leader: offset %d err %v, want the original offset %d", retry.BaseOffset, retry.Err, res.BaseOffset)
	}
	if got := c.part(2, 0).Log.LogEndOffset(); got != leo {
		t.Fatalf("retry was written again: LEO %d, want %d", got, leo)
	}
	b, h = idempotentBatch(t, 7, 0, 5, "gap")
	if r := c.broker(2).m.Produce(c.part(2, 0), b, h, -1, time.Now().Add(time.Second)); r.Err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("sequence gap on the new leader: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", r.Err)
	}
}

// acks=all waits for the ISR: without fetching followers it times out;
// a loss of leadership answers NOT_LEADER_OR_FOLLOWER at once.
func TestAcksAllWaitsForISR(t *testing.T) {
	c := newTestCluster(t, 3, fastRC(10*time.Second), false, 2)
	all := []int32{1, 2, 3}
	st := c.elect(0, 1, all, all, 1) // followers not told yet: nobody fetches
	if res := c.produce(1, 0, -1, "early", 200*time.Millisecond); res.Err != kerr.RequestTimedOut {
		t.Fatalf("acks=all without fetching followers: %v, want REQUEST_TIMED_OUT", res.Err)
	}
	c.apply(2, 0, st)
	c.apply(3, 0, st)
	off := c.mustProduce(1, -1, "late")
	if hw := c.part(1, 0).HighWatermark(); hw <= off {
		t.Fatalf("HW %d does not cover offset %d", hw, off)
	}
	c.waitReplicated(1, 2, 3)

	// Followers stop; a parked acks=all produce fails when leadership moves.
	for _, id := range []int32{2, 3} {
		if err := c.broker(id).m.StopReplica("t", 0, false); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan AppendResult, 1)
	go func() { done <- c.produce(1, 0, -1, "orphan", 30*time.Second) }()
	waitFor(t, "the produce to park", func() bool {
		p := c.part(1, 0)
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.mu.repl.waiters) == 1
	})
	c.elect(0, 2, all, all, 1, 2)
	if res := <-done; res.Err != kerr.NotLeaderForPartition {
		t.Fatalf("parked acks=all after losing leadership: %v, want NOT_LEADER_OR_FOLLOWER", res.Err)
	}
}

// A new leader epoch of the same leader (the controller dropped a follower
// from the ISR, as a controlled shutdown does) keeps a parked acks=all
// produce waiting, as Kafka's DelayedProduce does, and keeps what the other
// followers fetched: the produce completes at once on the new ISR, without
// another fetch. Before, it failed with NOT_LEADER_OR_FOLLOWER, and the HW
// waited for every follower to fetch again in the new epoch.
func TestAcksAllSurvivesReelection(t *testing.T) {
	c := newTestCluster(t, 3, fastRC(10*time.Second), false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, 1, 2) // broker 3 is never told: it fetches nothing
	done := make(chan AppendResult, 1)
	go func() { done <- c.produce(1, 0, -1, "parked", 30*time.Second) }()
	p := c.part(1, 0)
	waitFor(t, "follower 2 to fetch the parked batch", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.mu.repl.waiters) == 1 && p.mu.repl.leader.FollowerLEO(2) == p.Log.LogEndOffset()
	})
	c.broker(2).m.StopFollowing() // no fetch after the re-election may complete it
	c.elect(0, 1, []int32{1, 2}, all, 1)
	select {
	case res := <-done:
		if res.Err != nil {
			t.Fatalf("parked acks=all across a re-election: %v, want success", res.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked acks=all not answered after the re-election dropped the lagging follower")
	}
}

// A follower that stops fetching leaves the ISR after
// replica.lag.time.max.ms (written through the ISRWriter); it rejoins once
// it has caught up. With the ISR below min.insync.replicas acks=all is
// refused with NOT_ENOUGH_REPLICAS.
func TestISRShrinkAndExpand(t *testing.T) {
	c := newTestCluster(t, 3, fastRC(time.Second), false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, -1, "a")
	c.waitReplicated(1, 2, 3)
	if err := c.broker(3).m.StopReplica("t", 0, false); err != nil {
		t.Fatal(err)
	}
	c.mustProduce(1, 1, "b") // broker 3 falls behind
	// While broker 3 is in the ISR the HW is the smallest LEO of the ISR.
	l := c.part(1, 0)
	l.mu.Lock()
	if isr := l.mu.repl.leader.ISR(); slices.Contains(isr, 3) && l.HighWatermark() != c.part(3, 0).Log.LogEndOffset() {
		t.Errorf("HW %d with broker 3 (LEO %d) in the ISR %v", l.HighWatermark(), c.part(3, 0).Log.LogEndOffset(), isr)
	}
	l.mu.Unlock()
	waitFor(t, "broker 3 to leave the ISR", func() bool { return slices.Equal(c.state(0).ISR, []int32{1, 2}) })
	if isr := c.part(1, 0).ISR(); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("leader's ISR %v after the write, want [1 2]", isr)
	}
	c.mustProduce(1, -1, "c") // the smaller ISR still meets min.insync.replicas=2

	c.apply(3, 0, c.state(0)) // broker 3 follows again
	waitFor(t, "broker 3 to rejoin the ISR", func() bool { return slices.Contains(c.state(0).ISR, 3) })
	c.waitReplicated(1, 2, 3)
	if !bytes.Equal(c.logBytes(3, 0), c.logBytes(1, 0)) {
		t.Fatal("broker 3's log differs from the leader's after catching up")
	}

	for _, id := range []int32{2, 3} {
		if err := c.broker(id).m.StopReplica("t", 0, false); err != nil {
			t.Fatal(err)
		}
	}
	c.mustProduce(1, 1, "d")
	waitFor(t, "the ISR to shrink to the leader", func() bool { return slices.Equal(c.state(0).ISR, []int32{1}) })
	if res := c.produce(1, 0, -1, "e", time.Second); res.Err != kerr.NotEnoughReplicas {
		t.Fatalf("acks=all with ISR [1] and min.insync.replicas=2: %v, want NOT_ENOUGH_REPLICAS", res.Err)
	}
	if res := c.produce(1, 0, 1, "f", time.Second); res.Err != nil {
		t.Fatalf("acks=1 with a small ISR: %v", res.Err)
	}
}

// Followers fetch in incremental fetch sessions (KIP-227): the leader
// keeps one session per follower, and records still replicate and the
// followers stay in the ISR across idle rounds, in which an incremental
// request lists no partition and the leader reads them from the session.
func TestFollowersFetchInSessions(t *testing.T) {
	c := newTestCluster(t, 3, fastRC(time.Second), false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, -1, "a")
	c.waitReplicated(1, 2, 3)
	waitFor(t, "a fetch session per follower on the leader", func() bool { return c.broker(1).m.FetchSessionCount() == 2 })
	time.Sleep(3 * time.Second) // idle rounds, past replica.lag.time.max.ms
	if isr := c.state(0).ISR; len(isr) != 3 {
		t.Fatalf("ISR %v after idle rounds in sessions, want all three", isr)
	}
	for _, v := range []string{"b", "c", "d"} {
		c.mustProduce(1, -1, v)
	}
	c.waitReplicated(1, 2, 3)
	c.wantIdentical(1, 2)
	c.wantIdentical(1, 3)
	if n := c.broker(1).m.FetchSessionCount(); n != 2 {
		t.Fatalf("%d fetch sessions on the leader, want 2 (one per follower, kept)", n)
	}
}

// A broker that stopped following (its controlled shutdown done) stops
// copying at once and does not start again on a LeaderAndIsr, so its
// leader's ISR, which no longer holds it, does not take it back while it
// shuts down.
func TestStopFollowingKeepsBrokerOutOfISR(t *testing.T) {
	c := newTestCluster(t, 3, fastRC(10*time.Second), false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, -1, "a")
	c.waitReplicated(1, 2, 3)
	c.broker(3).m.StopFollowing()
	// The controller's controlled shutdown of broker 3: out of the ISR,
	// and a LeaderAndIsr that makes it a follower again.
	c.elect(0, 1, []int32{1, 2}, all, all...)
	c.mustProduce(1, -1, "b")
	c.waitReplicated(1, 2)
	// Broker 2 got "b" in more fetches than broker 3 needed to catch up
	// and rejoin, had it been fetching.
	for range 3 {
		c.mustProduce(1, -1, "c")
		c.waitReplicated(1, 2)
	}
	if got, want := c.part(3, 0).Log.LogEndOffset(), int64(1); got != want {
		t.Fatalf("broker 3 copied up to offset %d after StopFollowing, want %d", got, want)
	}
	if isr := c.state(0).ISR; slices.Contains(isr, 3) {
		t.Fatalf("broker 3 back in the ISR %v after StopFollowing", isr)
	}
}

// In its controlled shutdown a broker stops copying a partition as soon as
// a LeaderAndIsr of a new epoch takes it out of the ISR (or moves a
// leadership away from it), so that the leader does not take it back
// before it exits; a partition whose state did not change is copied on.
func TestControlledShutdownLeavesWhatChanged(t *testing.T) {
	c := newTestClusterParts(t, 3, 2, fastRC(10*time.Second), false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	c.elect(1, 1, all, all, all...)
	c.mustProduce(1, -1, "a")
	c.waitReplicated(1, 2, 3)
	c.broker(3).m.BeginControlledShutdown()
	// The controller takes broker 3 out of partition 0's ISR, not yet out
	// of partition 1's.
	c.elect(0, 1, []int32{1, 2}, all, all...)
	for i := range 3 {
		c.mustProduce(1, -1, fmt.Sprint("b", i))
		if res := c.produce(1, 1, -1, fmt.Sprint("c", i), 10*time.Second); res.Err != nil {
			t.Fatalf("acks=all produce to partition 1, broker 3 still in its ISR: %v", res.Err)
		}
		c.waitReplicated(1, 2) // broker 2 had it in more fetches than broker 3 needed to rejoin
	}
	if got, want := c.part(3, 0).Log.LogEndOffset(), int64(1); got != want {
		t.Fatalf("broker 3 copied partition 0 up to offset %d after leaving its ISR, want %d", got, want)
	}
	if isr := c.state(0).ISR; slices.Contains(isr, 3) {
		t.Fatalf("broker 3 back in partition 0's ISR %v during its controlled shutdown", isr)
	}
	if got, want := c.part(3, 1).Log.LogEndOffset(), c.part(1, 1).Log.LogEndOffset(); got != want {
		t.Fatalf("broker 3 has partition 1 up to offset %d, the leader %d: it must copy what did not change", got, want)
	}
}

// An ISR write with a stale version is not retried: the leader follows the
// state read back.
func TestISRWriteConflictFollowsStoredState(t *testing.T) {
	c := newTestCluster(t, 3, fastRC(200*time.Millisecond), false, 1)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, 1, 2) // broker 3 never fetches
	c.mustProduce(1, 1, "a")
	// The controller changes the state behind the leader's back (same epoch).
	tp := tpOf(c.part(1, 0))
	c.mu.Lock()
	stored := c.states[tp]
	stored.ISR = []int32{1, 2}
	stored.ZKVersion += 5
	c.states[tp] = stored
	c.mu.Unlock()
	waitFor(t, "the leader to adopt the stored ISR", func() bool {
		s, _ := c.part(1, 0).State()
		return s.ZKVersion == stored.ZKVersion && slices.Equal(c.part(1, 0).ISR(), []int32{1, 2})
	})
}
