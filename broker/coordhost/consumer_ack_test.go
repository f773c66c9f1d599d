package coordhost

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-848 consumer group coordinator applies a call's state at once, so
// the host answers nothing from it before its __consumer_offsets records are
// acknowledged, and never from a coordinator dropped (and replayed up to its
// HW) meanwhile. These tests hold the records of group cg's partition (0)
// unacknowledged by giving it the ISR {1, 2}, as txn_ack_test.go does.

// consumerAckSetup leads both __consumer_offsets partitions and a topic "t"
// of two partitions, and joins member m1 to a KIP-848 group of partition 0
// (acknowledged at once: ISR {1}); m1 owns both partitions at epoch 1. Then
// __consumer_offsets-0 gets the ISR {1, 2}.
func consumerAckSetup(t *testing.T) (c *clusterHost, groupID string) {
	t.Helper()
	c = newClusterHostWith(t, map[string]string{
		"offsets.topic.num.partitions":         "2",
		"transaction.state.log.num.partitions": "2",
		"group.initial.rebalance.delay.ms":     "0",
	}, []controller.Topic{
		{Name: offsetsTopic, Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: txnStateTopic, Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "t", Partitions: 2, ReplicationFactor: 2},
	})
	c.move(offsetsTopic, 0, true)
	c.move(offsetsTopic, 1, true)
	groupID = idIn("cg", 0)
	r := consumerJoin(t, c.h, groupID, "m1")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.Topics) != 1 || len(r.Assignment.Topics[0].Partitions) != 2 {
		t.Fatalf("m1 joins: %v epoch %d assignment %+v", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, r.Assignment)
	}
	c.setISR(offsetsTopic, 0, []int32{1, 2})
	return c, groupID
}

// consumerHeartbeat sends a KIP-848 member's first heartbeat (epoch 0,
// subscribed to "t") and returns its token.
func consumerHeartbeat(t *testing.T, h *Host, groupID, member string) Token {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = groupID, member, 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{"t"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return groupRequest(t, h, req)
}

// dropGroupCoordinators drops the group coordinators, as a failed write of
// another call does.
func dropGroupCoordinators(h *Host) {
	h.groups.mu.Lock()
	defer h.groups.mu.Unlock()
	h.groups.dropLocked()
}

// consumerMembers describes a KIP-848 group: its members by id with their
// epochs.
func consumerMembers(t *testing.T, h *Host, groupID string) map[string]int32 {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{groupID}
	r := await(t, groupRequest(t, h, req), "describe").(*kmsg.ConsumerGroupDescribeResponse)
	out := map[string]int32{}
	for _, g := range r.Groups {
		for _, m := range g.Members {
			out[m.MemberID] = m.MemberEpoch
		}
	}
	return out
}

// TestConsumerHeartbeatWaitsForEarlierWrite: member m2 joins; while the
// records of its join (a new group epoch and target assignment) are not
// replicated, its retried first heartbeat (the client timed out) and a
// ConsumerGroupDescribe, which write nothing, must not be answered from
// them. Before, both answered at once: m2 was handed epoch 2 and a
// partition, and if the write was then lost the reloaded coordinator had
// no m2 while m2 consumed its partition.
func TestConsumerHeartbeatWaitsForEarlierWrite(t *testing.T) {
	c, groupID := consumerAckSetup(t)
	join := consumerHeartbeat(t, c.h, groupID, "m2")
	notWithin(t, (<-chan kmsg.Response)(join), 300*time.Millisecond, "m2's join")
	retry := consumerHeartbeat(t, c.h, groupID, "m2")
	notWithin(t, (<-chan kmsg.Response)(retry), 300*time.Millisecond, "m2's retried join")
	desc := kmsg.NewPtrConsumerGroupDescribeRequest()
	desc.Groups = []string{groupID}
	dtok := groupRequest(t, c.h, desc)
	notWithin(t, (<-chan kmsg.Response)(dtok), 300*time.Millisecond, "ConsumerGroupDescribe")

	c.followerFetch(offsetsTopic, 0)
	for _, tok := range []Token{join, retry} {
		r := within(t, (<-chan kmsg.Response)(tok), "m2's heartbeat").(*kmsg.ConsumerGroupHeartbeatResponse)
		if r.ErrorCode != 0 || r.MemberEpoch != 2 {
			t.Fatalf("m2's heartbeat after the write was replicated: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
		}
	}
	if d := within(t, (<-chan kmsg.Response)(dtok), "describe").(*kmsg.ConsumerGroupDescribeResponse); len(d.Groups) != 1 || len(d.Groups[0].Members) != 2 {
		t.Fatalf("describe after the write was replicated: %+v", d.Groups)
	}
}

// TestConsumerHeartbeatLostWithItsCoordinator: the coordinator that wrote
// m2's join is dropped before the records are acknowledged, and the
// reloaded one (replayed up to the HW) has no m2. When the records are
// acknowledged later, m2 must get an error, not the epoch and assignment
// of a member the serving coordinator does not know; it then joins again.
func TestConsumerHeartbeatLostWithItsCoordinator(t *testing.T) {
	c, groupID := consumerAckSetup(t)
	join := consumerHeartbeat(t, c.h, groupID, "m2")
	notWithin(t, (<-chan kmsg.Response)(join), 300*time.Millisecond, "m2's join")

	dropGroupCoordinators(c.h)
	if ms := consumerMembers(t, c.h, groupID); len(ms) != 1 || ms["m1"] != 1 {
		t.Fatalf("members of the reloaded coordinator: %v, want m1 at epoch 1 only", ms)
	}
	c.followerFetch(offsetsTopic, 0)
	r := within(t, (<-chan kmsg.Response)(join), "m2's join").(*kmsg.ConsumerGroupHeartbeatResponse)
	if r.ErrorCode == 0 {
		t.Fatalf("m2's join acknowledged after the reload answered epoch %d assignment %+v; the serving coordinator has no m2", r.MemberEpoch, r.Assignment)
	}
}

// TestConsumerCommitAcknowledgedAfterReload: an OffsetCommit by a KIP-848
// member is invisible to OffsetFetch until its record is replicated (this
// held before the fix too: the classic coordinator stores it pending), and a
// commit acknowledged only after its coordinator was dropped and replayed
// without it is answered with an error: the offset the client was told is
// committed would not be what the serving coordinator returns.
func TestConsumerCommitAcknowledgedAfterReload(t *testing.T) {
	c, groupID := consumerAckSetup(t)
	commit := func(offset int64) Token {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = groupID, "m1", 1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return groupRequest(t, c.h, req)
	}
	fetchReq := func() Token {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberEpoch = groupID, -1
		req.Groups = append(req.Groups, rg)
		return groupRequest(t, c.h, req)
	}
	offsetOf := func(resp kmsg.Response) int64 {
		for _, g := range resp.(*kmsg.OffsetFetchResponse).Groups {
			for _, tp := range g.Topics {
				for _, p := range tp.Partitions {
					if tp.Topic == "t" && p.Partition == 0 {
						return p.Offset
					}
				}
			}
		}
		return -1
	}
	fetch := func() int64 { return offsetOf(await(t, fetchReq(), "fetch")) }
	first := commit(100)
	notWithin(t, (<-chan kmsg.Response)(first), 300*time.Millisecond, "OffsetCommit")
	// A fetch of the group waits for the commit in flight (it checks the
	// member epoch in the consumer coordinator's state, which may be
	// unacknowledged) and does not show the offset, which the classic
	// coordinator kept pending when the fetch read it.
	early := fetchReq()
	notWithin(t, (<-chan kmsg.Response)(early), 300*time.Millisecond, "OffsetFetch")
	c.followerFetch(offsetsTopic, 0)
	if r := within(t, (<-chan kmsg.Response)(first), "commit").(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if o := offsetOf(within(t, (<-chan kmsg.Response)(early), "fetch")); o != -1 {
		t.Fatalf("OffsetFetch sent before the commit was replicated: %d, want none (it read the group before)", o)
	}
	if o := fetch(); o != 100 {
		t.Fatalf("OffsetFetch after the commit was replicated: %d, want 100", o)
	}

	second := commit(200)
	notWithin(t, (<-chan kmsg.Response)(second), 300*time.Millisecond, "second OffsetCommit")
	dropGroupCoordinators(c.h)
	if o := fetch(); o != 100 {
		t.Fatalf("OffsetFetch of the reloaded coordinator: %d, want 100", o)
	}
	c.followerFetch(offsetsTopic, 0)
	r := within(t, (<-chan kmsg.Response)(second), "second commit").(*kmsg.OffsetCommitResponse)
	if code := r.Topics[0].Partitions[0].ErrorCode; code == 0 {
		t.Fatalf("commit acknowledged after the reload answered success while the serving coordinator returns %d", fetch())
	}
}

// TestGroupCallsWaitOnlyForTheirPartition: a write in flight in
// __consumer_offsets-0 holds back the answers of calls of that partition
// only; a group of partition 1 is answered at once.
func TestGroupCallsWaitOnlyForTheirPartition(t *testing.T) {
	c, groupID := consumerAckSetup(t)
	join := consumerHeartbeat(t, c.h, groupID, "m2")
	notWithin(t, (<-chan kmsg.Response)(join), 300*time.Millisecond, "m2's join")
	other := idIn("other", 1)
	if r := consumerJoin(t, c.h, other, "o1"); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("join of %s (partition 1): %v epoch %d", other, kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	if ms := consumerMembers(t, c.h, other); len(ms) != 1 {
		t.Fatalf("members of %s: %v", other, ms)
	}
	c.followerFetch(offsetsTopic, 0)
	if r := within(t, (<-chan kmsg.Response)(join), "m2's join").(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("m2's join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// joinedConsumer is a groups host on a fake clock whose KIP-848 group cg
// has member "gone", which never heartbeats again, and the session
// timeout of its members.
func joinedConsumer(t *testing.T) (h *Host, f *faultyReplicas, advance func(time.Duration), session time.Duration) {
	t.Helper()
	h, f = newGroupsHost(t, 2)
	advance = fakeClock(h)
	session = time.Duration(h.cfg.GroupConsumerSessionTimeoutMs) * time.Millisecond
	if r := consumerJoin(t, h, "cg", "gone"); r.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	return h, f, advance, session
}

// TestConsumerSessionSurvivesReload: a member's session deadline is not
// pushed back when a failed write makes the host replay the coordinator
// from its log. Kafka's coordinator keeps its timers when it reverts a
// failed write; restarting every session timeout at each reload kept the
// members that had left without being removed (their LeaveGroup's write
// failed, or their client stopped) in the group for as long as writes
// kept failing less than a session timeout apart, and with them the
// partitions the coordinator assigned to them, which nobody consumed.
func TestConsumerSessionSurvivesReload(t *testing.T) {
	h, f, advance, session := joinedConsumer(t)
	// The member stops heartbeating. Shortly before its session expires
	// a write fails, and the next call replays the coordinator.
	advance(session - time.Second)
	failNextOffsetsWrite(t, h, f)
	if ms := consumerMembers(t, h, "cg"); len(ms) != 1 {
		t.Fatalf("members after the reload: %v", ms)
	}
	advance(2 * time.Second)
	h.groups.tick()
	if ms := consumerMembers(t, h, "cg"); len(ms) != 0 {
		t.Fatalf("members %v a session timeout after the last heartbeat: the reload restarted the session", ms)
	}
}

// TestConsumerFenceRetriedAfterReload: a member whose session expired,
// and whose fence was a write that failed, is fenced again by the first
// tick after the reload, as Kafka retries a session timeout whose write
// failed. Before, the member came back from the log with a full session,
// and a member whose fence kept failing never left.
func TestConsumerFenceRetriedAfterReload(t *testing.T) {
	h, f, advance, session := joinedConsumer(t)
	advance(session + time.Second)
	var failed atomic.Bool
	f.setFault(func(topic string) error {
		if topic != offsetsTopic {
			return nil
		}
		failed.Store(true)
		return errInjected
	})
	h.groups.tick() // fences the member; the write fails
	f.setFault(nil)
	if !failed.Load() {
		t.Fatal("the tick wrote no fence")
	}
	h.groups.tick() // reloads, then fences it again
	if ms := consumerMembers(t, h, "cg"); len(ms) != 0 {
		t.Fatalf("members %v at the first tick after the reload: the fenced member came back with a new session", ms)
	}
}

// TestConsumerSessionRestartsAfterAMoveWhileDropped: the members of a
// partition whose leadership changed while the coordinators were dropped
// start their sessions afresh when the partition is loaded again, as
// Kafka's do when a coordinator loads a partition: the dropped
// coordinator's deadlines are older than what the log's new leader saw.
func TestConsumerSessionRestartsAfterAMoveWhileDropped(t *testing.T) {
	c := newLeadingGroupsHost(t)
	advance := fakeClock(c.h)
	session := time.Duration(c.h.cfg.GroupConsumerSessionTimeoutMs) * time.Millisecond
	moved, stayed := idIn("cg", 0), idIn("cg", 1)
	for _, id := range []string{moved, stayed} {
		if r := consumerJoin(t, c.h, id, "m-"+id); r.ErrorCode != 0 {
			t.Fatalf("join %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
	}

	reloadAfterMoveWhileDropped(c, advance, session)
	if ms := consumerMembers(t, c.h, moved); len(ms) != 1 {
		t.Fatalf("members of the moved partition's group %v, want its member with a fresh session", ms)
	}
	if ms := consumerMembers(t, c.h, stayed); len(ms) != 0 {
		t.Fatalf("members of the other group %v, want none: its member's session expired", ms)
	}
	advance(session)
	c.h.groups.tick()
	if ms := consumerMembers(t, c.h, moved); len(ms) != 0 {
		t.Fatalf("members %v a session after the reload", ms)
	}
}
