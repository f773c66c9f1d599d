package coordhost

import (
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/controller"
)

// fakeClock makes h read a clock the test moves with the returned advance.
func fakeClock(h *Host) (advance func(time.Duration)) {
	var mu sync.Mutex
	clock := time.UnixMilli(1_700_000_000_000)
	h.groups.mu.Lock()
	h.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	h.groups.mu.Unlock()
	return func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
}

// newLeadingGroupsHost is a cluster host leading both partitions of
// __consumer_offsets, with a topic "t" of two partitions.
func newLeadingGroupsHost(t *testing.T) *clusterHost {
	t.Helper()
	c := newClusterHostWith(t, map[string]string{
		"offsets.topic.num.partitions":         "2",
		"transaction.state.log.num.partitions": "2",
		"group.initial.rebalance.delay.ms":     "0",
	}, []controller.Topic{
		{Name: offsetsTopic, Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "t", Partitions: 2, ReplicationFactor: 2},
	})
	c.move(offsetsTopic, 0, true)
	c.move(offsetsTopic, 1, true)
	return c
}

// classicSession is the session timeout joinReq asks for.
const classicSession = 30 * time.Second

// TestClassicSessionSurvivesReload: a classic member's session deadline is
// not pushed back when a failed write makes the host replay the group
// coordinator from its log. Kafka does not rebuild a classic group when an
// append fails, and its heartbeat timers carry on; restarting every
// session at each reload kept a member that had stopped heartbeating, and
// the partitions assigned to it, in its group for as long as writes kept
// failing less than a session timeout apart.
func TestClassicSessionSurvivesReload(t *testing.T) {
	h, f := newGroupsHost(t, 2)
	advance := fakeClock(h)
	stableGroup(t, h, "g")

	// The member stops heartbeating. Shortly before its session expires
	// a write fails, and the next call replays the coordinator.
	advance(classicSession - time.Second)
	failNextOffsetsWrite(t, h, f)
	if state, n := groupMembers(t, h, "g"); state != "Stable" || n != 1 {
		t.Fatalf("after the reload: %s with %d members", state, n)
	}
	advance(2 * time.Second)
	h.groups.tick()
	if state, n := groupMembers(t, h, "g"); n != 0 {
		t.Fatalf("%s with %d members a session timeout after the last heartbeat: the reload restarted the session", state, n)
	}
}

// reloadAfterMoveWhileDropped drops the group coordinators a second before
// the members' sessions end, moves __consumer_offsets partition 0 away and
// back meanwhile, and ticks 2 s later: the tick reloads, then times out the
// members whose deadlines passed.
func reloadAfterMoveWhileDropped(c *clusterHost, advance func(time.Duration), session time.Duration) {
	advance(session - time.Second)
	dropGroupCoordinators(c.h)
	c.move(offsetsTopic, 0, false)
	c.move(offsetsTopic, 0, true)
	advance(2 * time.Second)
	c.h.groups.tick()
}

// TestClassicSessionRestartsAfterAMoveWhileDropped: the classic members of
// a partition whose leadership changed while the coordinators were dropped
// start their sessions afresh when the partition is loaded again, as
// Kafka's do when a coordinator loads a partition; the other partition's
// keep their deadlines.
func TestClassicSessionRestartsAfterAMoveWhileDropped(t *testing.T) {
	c := newLeadingGroupsHost(t)
	advance := fakeClock(c.h)
	moved, stayed := idIn("g", 0), idIn("g", 1)
	stableGroup(t, c.h, moved)
	stableGroup(t, c.h, stayed)

	reloadAfterMoveWhileDropped(c, advance, classicSession)
	if state, n := groupMembers(t, c.h, moved); state != "Stable" || n != 1 {
		t.Fatalf("group of the moved partition: %s with %d members, want its member with a fresh session", state, n)
	}
	if state, n := groupMembers(t, c.h, stayed); n != 0 {
		t.Fatalf("group of the other partition: %s with %d members, want none: its member's session expired", state, n)
	}
	advance(classicSession)
	c.h.groups.tick()
	if state, n := groupMembers(t, c.h, moved); n != 0 {
		t.Fatalf("group of the moved partition: %s with %d members a session after the reload", state, n)
	}
}
