package group

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var errAppend = errors.New("append not replicated")

// A commit is visible to OffsetFetch only once its append is acknowledged,
// and a failed append leaves the offset committed before it (Kafka's
// pendingOffsetCommits). Before: the offset was applied when the commit
// arrived, so a read between the append and its failure saw an offset that
// was never durable.
func TestCommitVisibleOnlyAfterAppend(t *testing.T) {
	h := newHarness(t, nil)
	h.holdAppends = true
	if r := h.commit("c1", 8, "simple", "", -1, commit{topic: "t", partition: 0, offset: 100}); commitCodes(r)[0] != 0 {
		t.Fatalf("commit: %v", commitCodes(r))
	}
	if got := h.fetchAll("simple"); len(got) != 0 {
		t.Fatalf("before the append is acknowledged: fetched %v, want nothing", got)
	}
	if !h.c.HasPendingOffset("simple", "t", 0) {
		t.Fatal("no pending offset while the append is in flight")
	}
	h.ack(0, nil)
	if got := h.fetchAll("simple")["t/0"]; got != 100 {
		t.Fatalf("after the append: fetched %d, want 100", got)
	}
	h.commit("c2", 8, "simple", "", -1, commit{topic: "t", partition: 0, offset: 200})
	if got := h.fetchAll("simple")["t/0"]; got != 100 {
		t.Fatalf("while the second append is in flight: fetched %d, want 100", got)
	}
	h.ack(1, errAppend)
	if got := h.fetchAll("simple")["t/0"]; got != 100 {
		t.Fatalf("after the second append failed: fetched %d, want 100", got)
	}
	if h.c.HasPendingOffset("simple", "t", 0) {
		t.Fatal("pending offset left after its append failed")
	}
}

// Acknowledgements may be handled out of log order (each waits for the
// high watermark on its own); the offset appended last wins, as in the log.
func TestCommitsApplyInLogOrder(t *testing.T) {
	h := newHarness(t, nil)
	h.holdAppends = true
	h.commit("c1", 8, "simple", "", -1, commit{topic: "t", partition: 0, offset: 100})
	h.commit("c2", 8, "simple", "", -1, commit{topic: "t", partition: 0, offset: 200})
	h.ack(1, nil)
	h.ack(0, nil)
	if got := h.fetchAll("simple")["t/0"]; got != 200 {
		t.Fatalf("fetched %d, want 200 (the later commit)", got)
	}
}

// An offset deleted while its commit is being written stays deleted.
func TestOffsetDeleteDropsPendingCommit(t *testing.T) {
	h := newHarness(t, nil)
	h.holdAppends = true
	h.commit("c1", 8, "simple", "", -1, commit{topic: "t", partition: 0, offset: 100})
	h.ack(0, nil)
	h.commit("c2", 8, "simple", "", -1, commit{topic: "t", partition: 0, offset: 200})
	h.deleteOffsets("simple", "t", 0)
	h.ack(1, nil)
	if got := h.fetchAll("simple"); len(got) != 0 {
		t.Fatalf("fetched %v after the delete, want nothing", got)
	}
}

// syncedWithHeldAppends is group "g" of two members whose follower ("s1")
// and leader ("s0", with the assignment) sent SyncGroup while every append
// is held.
func syncedWithHeldAppends(t *testing.T) (h *harness, follower string, gen int32) {
	t.Helper()
	h = newHarness(t, nil)
	h.holdAppends = true
	lead := h.joinWithID("j0", joinOpts{})
	follower = h.joinWithID("j1", joinOpts{})
	h.tickUntil("j0")
	gen = h.joinResp("j0").Generation
	h.sync("s1", "g", follower, gen, nil)
	h.sync("s0", "g", lead, gen, map[string][]byte{lead: {0}, follower: {1}})
	return h, follower, gen
}

// The anomaly of TestFaultsConsumerGroup ("committed offset moved back"):
// a rebalance's assignment was handed to members (the group went Stable
// when the leader's SyncGroup arrived, and a follower's SyncGroup was
// answered at once) before the group record storing it was replicated. A
// coordinator failover then lost that generation; a member of the old
// generation still owning the partition committed a higher offset to the
// new coordinator, and the new owner, which had fetched the committed
// offset before that commit, later committed a lower one. As Kafka, the
// group now stays CompletingRebalance with every SyncGroup parked (and
// OffsetCommit answering REBALANCE_IN_PROGRESS) until the append is
// acknowledged.
func TestAssignmentHandedOutOnlyAfterAppend(t *testing.T) {
	h, follower, gen := syncedWithHeldAppends(t)
	if h.answered("s0") || h.answered("s1") {
		t.Fatal("SyncGroup answered before the assignment was appended")
	}
	if s := h.state("g"); s != "CompletingRebalance" {
		t.Fatalf("state %s before the assignment was appended, want CompletingRebalance", s)
	}
	if r := h.commit("oc", 8, "g", follower, gen, commit{topic: "t", partition: 0, offset: 5}); commitCodes(r)[0] != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit before the assignment was appended: %v, want REBALANCE_IN_PROGRESS", commitCodes(r))
	}
	if len(h.held) != 1 {
		t.Fatalf("%d appends held, want 1 (the group record)", len(h.held))
	}
	h.ack(0, nil)
	if r := h.syncResp("s1"); r.ErrorCode != 0 || string(r.MemberAssignment) != "\x01" {
		t.Fatalf("follower sync: error %d assignment %q", r.ErrorCode, r.MemberAssignment)
	}
	if r := h.syncResp("s0"); r.ErrorCode != 0 || string(r.MemberAssignment) != "\x00" {
		t.Fatalf("leader sync: error %d assignment %q", r.ErrorCode, r.MemberAssignment)
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state %s after the append, want Stable", s)
	}
	// A follower syncing now is answered at once.
	h.sync("s1b", "g", follower, gen, nil)
	if r := h.syncResp("s1b"); r.ErrorCode != 0 {
		t.Fatalf("late follower sync: error %d", r.ErrorCode)
	}
}

// A failed append of the assignment answers the parked SyncGroups
// COORDINATOR_NOT_AVAILABLE and rebalances again.
func TestAssignmentAppendFailureRebalances(t *testing.T) {
	h, _, _ := syncedWithHeldAppends(t)
	h.ack(0, errAppend)
	for _, tok := range []string{"s0", "s1"} {
		if r := h.syncResp(tok); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("%s: error %d, want COORDINATOR_NOT_AVAILABLE", tok, r.ErrorCode)
		}
	}
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s after the failed append, want PreparingRebalance", s)
	}
}

func (h *harness) deleteOffsets(group, topic string, partition int32) {
	h.t.Helper()
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = group
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = topic
	rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: partition}}
	req.Topics = append(req.Topics, rt)
	h.handle(new(int), req)
}

// A transactional offset applied at its marker (Replay) is newer than a
// commit that was pending before it.
func TestReplayedOffsetNewerThanPendingCommit(t *testing.T) {
	h := newHarness(t, nil)
	h.holdAppends = true
	h.commit("c1", 8, "simple", "", -1, commit{topic: "t", partition: 0, offset: 100})
	r := offsetRecord("simple", "t", 0, &offset{offset: 150, leaderEpoch: -1, expireMs: -1})
	if err := h.c.Replay(r.Key, r.Value); err != nil {
		t.Fatal(err)
	}
	h.ack(0, nil)
	if got := h.fetchAll("simple")["t/0"]; got != 150 {
		t.Fatalf("fetched %d, want 150 (the transactional offset)", got)
	}
}
