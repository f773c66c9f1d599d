package consumer

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reload replays log into a new Coordinator that takes over h's timers,
// as the host does after a failed write, and returns a harness for it at
// h's time. log is what reached __consumer_offsets: h.records without the
// records of the failed write.
func reload(h *harness, log []Record) *harness {
	h.t.Helper()
	r := newHarness(h.t, nil)
	r.now, r.topics = h.now, h.topics
	for i, rec := range log {
		if err := r.c.Replay(rec.Key, rec.Value); err != nil {
			h.t.Fatalf("record %d: %v", i, err)
		}
	}
	r.records = slices.Clone(log)
	r.c.InheritTimers(h.c, h.now)
	r.c.Loaded(h.now)
	r.check()
	return r
}

// members lists the member ids of group "g" as described.
func (h *harness) members() []string {
	h.t.Helper()
	var ids []string
	for _, m := range h.describe("g").Groups[0].Members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	return ids
}

// TestInheritTimersKeepsSessionDeadlines: a member that stopped
// heartbeating expires at the deadline it had before a reload, not a full
// session after it; a member that heartbeated keeps its later deadline.
func TestInheritTimersKeepsSessionDeadlines(t *testing.T) {
	h := newHarness(t, nil)
	a, _ := stableAB(t, h) // sessions of 45 s
	h.advance(40 * time.Second)
	h.poll(a)
	h.advance(time.Second) // B has 4 s left, A 44 s

	r := reload(h, h.records)
	r.advance(4 * time.Second)
	if got := r.members(); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("members 45 s after B's last heartbeat: %v, want only A (the reload restarted B's session)", got)
	}
	r.advance(39 * time.Second)
	if got := r.members(); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("members 43 s after A's last heartbeat: %v, want A", got)
	}
}

// TestInheritTimersExpiresFencedMembers: a member the dropped coordinator
// had fenced (its session expired; the fence was the failed write) comes
// back with the replayed state and is fenced again at the first tick after
// the reload, as Kafka retries a session timeout whose write failed, not
// a full session later.
func TestInheritTimersExpiresFencedMembers(t *testing.T) {
	h := newHarness(t, nil)
	a, _ := stableAB(t, h)
	h.advance(30 * time.Second)
	h.poll(a)
	n := len(h.records)
	h.advance(15 * time.Second) // B's session expires
	if got := h.members(); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("members after B's session: %v", got)
	}

	r := reload(h, h.records[:n])
	if got := r.members(); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("replayed members: %v, want A and B", got)
	}
	r.advance(0)
	if got := r.members(); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("members at the first tick after the reload: %v, want A only (B fenced again)", got)
	}
	r.poll(a)
	wantAssigned(t, a.owned, "t:0,1,2,3,4,5")
}

// TestInheritTimersExpiresMembersThatLeft: a member whose leave (epoch -1)
// was the failed write is fenced at the first tick after the reload.
func TestInheritTimersExpiresMembersThatLeft(t *testing.T) {
	h := newHarness(t, nil)
	_, b := stableAB(t, h)
	h.advance(time.Second)
	n := len(h.records)
	wantCode(t, h.send(withEpoch(beatReq("B", b.epoch, nil), -1)), 0)

	r := reload(h, h.records[:n])
	r.advance(0)
	if got := r.members(); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("members at the first tick after the reload: %v, want A only", got)
	}
}

// TestInheritTimersMatchesStaticMembersByInstance: a static member that
// left with epoch -2 and whose instance the dropped coordinator had handed
// to a new member id (the failed write) comes back under its logged id
// with the deadline of the instance's new member: it neither expires as a
// fenced member nor gets a session from the reload.
func TestInheritTimersMatchesStaticMembersByInstance(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("t", 4)
	a1 := &sim{id: "A1", instance: kmsg.StringPtr("inst-a"), topics: []string{"t"}}
	h.poll(a1)
	leave := withEpoch(beatReq("A1", a1.epoch, nil), -2)
	leave.InstanceID = kmsg.StringPtr("inst-a")
	wantCode(t, h.send(leave), 0)
	h.advance(5 * time.Second)
	n := len(h.records)
	a2 := &sim{id: "A2", instance: kmsg.StringPtr("inst-a"), topics: []string{"t"}}
	wantCode(t, h.poll(a2), 0) // A2's session runs to +45 s
	if got := h.members(); !slices.Equal(got, []string{"A2"}) {
		t.Fatalf("members after the static rejoin: %v", got)
	}
	h.advance(3 * time.Second)

	r := reload(h, h.records[:n])
	r.advance(time.Second)
	if got := r.members(); !slices.Equal(got, []string{"A1"}) {
		t.Fatalf("members after the reload: %v, want the instance under its logged id A1", got)
	}
	r.advance(41 * time.Second) // 45 s after A2's join, 42 s after the reload
	if got := r.members(); len(got) != 0 {
		t.Fatalf("members at the instance's deadline: %v", got)
	}
}

// TestInheritTimersUnknownGroupStartsAfresh: groups the dropped
// coordinator did not hold (a partition it did not lead, or one unloaded
// from it) start full sessions at the reload, as on any load.
func TestInheritTimersUnknownGroupStartsAfresh(t *testing.T) {
	h := newHarness(t, nil)
	stableAB(t, h)
	h.advance(40 * time.Second)
	h.c.Unload(func(id string) bool { return id == "g" })

	r := reload(h, h.records)
	r.advance(40 * time.Second)
	if got := r.members(); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("members 40 s after the reload: %v, want A and B", got)
	}
}
