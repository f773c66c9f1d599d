package group

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
	c := replayAll(h.t, log)
	c.InheritTimers(h.c, h.now)
	c.Loaded(h.now)
	return &harness{t: h.t, c: c, now: h.now, replies: map[any]kmsg.Response{}}
}

// leave sends a LeaveGroup v3 of member.
func (h *harness) leave(token any, group, member string) {
	h.t.Helper()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 3
	req.Group = group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
	h.handle(token, req)
}

// members lists the member ids of group as described.
func (h *harness) members(group string) []string {
	h.t.Helper()
	var ids []string
	for _, m := range h.describe(group).Groups[0].Members {
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
	ids, gen := h.stableGroup(2) // sessions of 10 s
	h.advance(8 * time.Second)
	if code := h.heartbeat("g", ids[1], gen, ""); code != 0 {
		t.Fatalf("heartbeat: %d", code)
	}
	h.advance(time.Second) // ids[0] has 1 s left, ids[1] 9 s

	r := reload(h, h.records)
	r.advance(1500 * time.Millisecond)
	if got := r.members("g"); !slices.Equal(got, []string{ids[1]}) {
		t.Fatalf("members 10.5 s after ids[0]'s last heartbeat: %v, want only %s (the reload restarted its session)", got, ids[1])
	}
	if s := r.state("g"); s != "PreparingRebalance" {
		t.Fatalf("group after a member expired: %s", s)
	}
}

// TestInheritTimersExpiresRemovedMembers: a member the dropped coordinator
// had removed (here it left; the removal is written only with the next
// generation) comes back with the replayed generation and expires at once,
// as it stays removed in Kafka, whose classic group is not rebuilt when an
// append fails.
func TestInheritTimersExpiresRemovedMembers(t *testing.T) {
	h := newHarness(t, nil)
	ids, _ := h.stableGroup(2)
	h.advance(time.Second)
	h.leave("leave", "g", ids[1])
	n := len(h.records)
	if got := h.members("g"); !slices.Equal(got, []string{ids[0]}) {
		t.Fatalf("members after the leave: %v", got)
	}

	r := reload(h, h.records[:n])
	if got := r.members("g"); len(got) != 2 {
		t.Fatalf("replayed members: %v, want both of the persisted generation", got)
	}
	r.advance(0)
	if got := r.members("g"); !slices.Equal(got, []string{ids[0]}) {
		t.Fatalf("members at the first tick after the reload: %v, want %s only", got, ids[0])
	}
}

// TestInheritTimersRestartsAnsweredRequests: a member whose JoinGroup the
// dropped coordinator held (answered COORDINATOR_NOT_AVAILABLE by the host
// when it dropped it) gets a full session from the reload, as a member
// does when its join is answered; its deadline from before the join may
// have passed while it waited, alive.
func TestInheritTimersRestartsAnsweredRequests(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	h.join("rejoin", joinOpts{member: ids[0]}) // waits for ids[1]
	h.advance(5 * time.Second)
	if code := h.heartbeat("g", ids[1], gen, ""); code == 0 {
		t.Fatalf("heartbeat during the rebalance answered 0")
	}
	h.advance(6 * time.Second) // past ids[0]'s deadline; its join keeps it
	if h.answered("rejoin") {
		t.Fatalf("join answered early: %+v", h.joinResp("rejoin"))
	}

	r := reload(h, h.records)
	r.advance(9 * time.Second)
	if got := r.members("g"); !slices.Equal(got, []string{ids[0]}) {
		t.Fatalf("members 9 s after the reload: %v, want %s (session from the reload) without %s (inherited deadline)", got, ids[0], ids[1])
	}
	r.advance(time.Second)
	if got := r.members("g"); len(got) != 0 {
		t.Fatalf("members a session after the reload: %v", got)
	}
}

// TestInheritTimersMatchesStaticMembersByInstance: a static member whose
// instance the dropped coordinator had given a new member id (its write
// failed, so the log still holds the old id) keeps the deadline of that
// instance's member, not expiring as a removed member nor restarting.
func TestInheritTimersMatchesStaticMembersByInstance(t *testing.T) {
	h := newHarness(t, nil)
	h.join("st", joinOpts{groupID: "s", instance: "i1"})
	h.tickUntil("st")
	st := h.joinResp("st")
	h.sync("sst", "s", st.MemberID, st.Generation, map[string][]byte{st.MemberID: []byte("x")})
	if r := h.syncResp("sst"); r.ErrorCode != 0 {
		t.Fatalf("sync: %d", r.ErrorCode)
	}
	h.advance(5 * time.Second)
	n := len(h.records)
	h.join("st2", joinOpts{groupID: "s", instance: "i1"}) // new member id, session to +10 s
	if r := h.joinResp("st2"); r.ErrorCode != 0 || r.MemberID == st.MemberID {
		t.Fatalf("static rejoin: error %d member %q", r.ErrorCode, r.MemberID)
	}
	h.advance(3 * time.Second)

	r := reload(h, h.records[:n]) // the new id's record failed
	r.advance(time.Second)
	if got := r.members("s"); !slices.Equal(got, []string{st.MemberID}) {
		t.Fatalf("members after the reload: %v, want the instance under its logged id %s", got, st.MemberID)
	}
	r.advance(6 * time.Second) // 10 s after the rejoin, 7 s after the reload
	if got := r.members("s"); len(got) != 0 {
		t.Fatalf("members at the instance's deadline: %v", got)
	}
}

// TestInheritTimersUnknownGroupStartsAfresh: groups the dropped
// coordinator did not hold (a partition it did not lead, or one unloaded
// from it) start full sessions at the reload, as on any load.
func TestInheritTimersUnknownGroupStartsAfresh(t *testing.T) {
	h := newHarness(t, nil)
	ids, _ := h.stableGroup(1)
	h.advance(9 * time.Second)
	h.c.Unload(PartitionFor("g", 50), 50)

	r := reload(h, h.records)
	r.advance(9 * time.Second)
	if got := r.members("g"); !slices.Equal(got, ids) {
		t.Fatalf("members 9 s after the reload: %v, want %v", got, ids)
	}
}
