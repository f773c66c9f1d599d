package group

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinSingleMember(t *testing.T) {
	h := newHarness(t, nil)
	id := h.joinWithID("j1", joinOpts{})
	if h.answered("j1") {
		t.Fatal("join answered before the initial rebalance delay")
	}
	if got, want := h.c.NextDeadline(), h.now.Add(3*time.Second); !got.Equal(want) {
		t.Fatalf("NextDeadline = %v, want %v", got, want)
	}
	h.advance(2999 * time.Millisecond)
	if h.answered("j1") {
		t.Fatal("join answered before the delay passed")
	}
	h.advance(time.Millisecond)
	r := h.joinResp("j1")
	if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != id || r.MemberID != id ||
		r.Protocol == nil || *r.Protocol != "range" || len(r.Members) != 1 {
		t.Fatalf("join response: %+v", r)
	}
	if s := h.state("g"); s != "CompletingRebalance" {
		t.Fatalf("state %s", s)
	}
	n := len(h.records)
	h.sync("s1", "g", id, 1, map[string][]byte{id: []byte("A")})
	if sr := h.syncResp("s1"); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "A" {
		t.Fatalf("sync: %+v", sr)
	}
	if len(h.records) != n+1 {
		t.Fatalf("leader sync wrote %d records, want 1", len(h.records)-n)
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state %s", s)
	}
	if code := h.heartbeat("g", id, 1, ""); code != 0 {
		t.Fatalf("heartbeat: %d", code)
	}
}

// TestJoinThreeMembersInitialDelay checks that group.initial.rebalance.delay.ms
// is extended while members keep arriving, bounded by the rebalance timeout.
func TestJoinThreeMembersInitialDelay(t *testing.T) {
	h := newHarness(t, nil)
	start := h.now
	a := h.joinWithID("ja", joinOpts{rebalance: 10000})
	h.advance(time.Second)
	b := h.joinWithID("jb", joinOpts{rebalance: 10000})
	h.advance(2 * time.Second) // t=3s: extended to 6s, 4s left
	if h.answered("ja") {
		t.Fatal("completed while members were still arriving")
	}
	h.advance(time.Second) // t=4s
	c := h.joinWithID("jc", joinOpts{rebalance: 10000})
	h.advance(2 * time.Second) // t=6s: extended to 9s, 1s left
	if h.answered("ja") {
		t.Fatal("completed at 6s")
	}
	h.tickToNextDeadline()
	if got := h.now.Sub(start); got != 9*time.Second {
		t.Fatalf("completed at %v, want 9s", got)
	}
	for _, tok := range []string{"ja", "jb", "jc"} {
		r := h.joinResp(tok)
		if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != a {
			t.Fatalf("%s: %+v", tok, r)
		}
		want := 0
		if tok == "ja" {
			want = 3
		}
		if len(r.Members) != want {
			t.Fatalf("%s: %d members, want %d", tok, len(r.Members), want)
		}
	}
	// Followers park their SyncGroup until the leader's arrives.
	h.sync("sb", "g", b, 1, nil)
	h.sync("sc", "g", c, 1, nil)
	if h.answered("sb") || h.answered("sc") {
		t.Fatal("follower sync answered before the leader's")
	}
	h.sync("sa", "g", a, 1, map[string][]byte{a: []byte("a"), b: []byte("b")})
	for tok, want := range map[string]string{"sa": "a", "sb": "b", "sc": ""} {
		r := h.syncResp(tok)
		if r.ErrorCode != 0 || string(r.MemberAssignment) != want {
			t.Fatalf("%s: error %d assignment %q, want %q", tok, r.ErrorCode, r.MemberAssignment, want)
		}
	}
}

func TestJoinOldVersionsNeedNoMemberID(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.GroupInitialRebalanceDelayMs = 0 })
	h.join("j", joinOpts{version: 3})
	r := h.joinResp("j")
	if r.ErrorCode != 0 || r.MemberID == "" || r.Generation != 1 {
		t.Fatalf("v3 join: %+v", r)
	}
}

func TestRebalanceWhenMemberJoinsStableGroup(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	newID := h.joinWithID("jn", joinOpts{})
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	if code := h.heartbeat("g", ids[0], gen, ""); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %d", code)
	}
	h.join("j0", joinOpts{member: ids[0]})
	if h.answered("jn") {
		t.Fatal("completed without the second old member")
	}
	// The second old member never rejoins: the rebalance timeout drops it.
	h.advance(20 * time.Second)
	r := h.joinResp("j0")
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 2 {
		t.Fatalf("leader join: %+v", r)
	}
	if r := h.joinResp("jn"); r.ErrorCode != 0 || r.MemberID != newID {
		t.Fatalf("new member join: %+v", r)
	}
	if code := h.heartbeat("g", ids[1], gen, ""); code != kerr.UnknownMemberID.Code {
		t.Fatalf("dropped member heartbeat: %d", code)
	}
}

func TestRejoinCompletesImmediatelyWhenAllJoined(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	h.join("j1", joinOpts{member: ids[1], topics: []string{"t", "u"}}) // metadata changed
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	h.join("j0", joinOpts{member: ids[0]})
	for _, tok := range []string{"j0", "j1"} {
		if r := h.joinResp(tok); r.ErrorCode != 0 || r.Generation != gen+1 {
			t.Fatalf("%s: %+v", tok, r)
		}
	}
}

func TestJoinValidation(t *testing.T) {
	tests := []struct {
		name string
		opts joinOpts
		want int16
	}{
		{"session too small", joinOpts{session: 5999}, kerr.InvalidSessionTimeout.Code},
		{"session too large", joinOpts{session: 1800001}, kerr.InvalidSessionTimeout.Code},
		{"unknown member of unknown group", joinOpts{member: "nope"}, kerr.UnknownMemberID.Code},
		{"no protocols", joinOpts{protocols: []string{}}, kerr.InconsistentGroupProtocol.Code},
		{"other protocol type", joinOpts{protoType: "connect"}, kerr.InconsistentGroupProtocol.Code},
		{"no common protocol", joinOpts{protocols: []string{"roundrobin"}}, kerr.InconsistentGroupProtocol.Code},
		{"unknown member of known group", joinOpts{member: "nope"}, kerr.UnknownMemberID.Code},
	}
	h := newHarness(t, nil)
	h.stableGroup(1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			h.join(tt.name, tt.opts)
			if r := h.joinResp(tt.name); r.ErrorCode != tt.want {
				t.Fatalf("error %d, want %d", r.ErrorCode, tt.want)
			}
		})
	}
	h.t = t
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.SessionTimeoutMillis = 10000
	h.handle("empty-group", req)
	if r := h.joinResp("empty-group"); r.ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group id: %d", r.ErrorCode)
	}
}

func TestProtocolVote(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.GroupInitialRebalanceDelayMs = 0 })
	all := []string{"range", "roundrobin", "sticky"}
	h.join("a", joinOpts{version: 3, protocols: all})
	ra := h.joinResp("a")
	if ra.Protocol == nil || *ra.Protocol != "range" {
		t.Fatalf("first generation protocol: %v", ra.Protocol)
	}
	// b supports only two of a's protocols; both of them vote for the first
	// protocol they share.
	h.join("b", joinOpts{version: 3, protocols: []string{"roundrobin", "sticky"}})
	if h.answered("b") {
		t.Fatal("b answered before a rejoined")
	}
	h.join("a2", joinOpts{version: 3, member: ra.MemberID, protocols: all})
	for _, tok := range []string{"a2", "b"} {
		r := h.joinResp(tok)
		if r.ErrorCode != 0 || r.Generation != 2 || r.Protocol == nil || *r.Protocol != "roundrobin" {
			t.Fatalf("%s: %+v", tok, r)
		}
	}
	// A member sharing no protocol with the group is refused.
	h.join("c", joinOpts{version: 3, protocols: []string{"range"}})
	if r := h.joinResp("c"); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("c: %d", r.ErrorCode)
	}
}

func TestGroupMaxSize(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.GroupMaxSize = 1 })
	h.stableGroup(1)
	h.join("j", joinOpts{version: 3})
	if r := h.joinResp("j"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("error %d", r.ErrorCode)
	}
}

func TestStaticMembership(t *testing.T) {
	h := newHarness(t, nil)
	// Static members skip MEMBER_ID_REQUIRED.
	h.join("ja", joinOpts{instance: "ia"})
	h.join("jb", joinOpts{instance: "ib"})
	h.tickUntil("ja")
	ra, rb := h.joinResp("ja"), h.joinResp("jb")
	a, b, gen := ra.MemberID, rb.MemberID, ra.Generation
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.LeaderID != a {
		t.Fatalf("joins: %+v %+v", ra, rb)
	}
	h.sync("sb", "g", b, gen, nil)
	h.sync("sa", "g", a, gen, map[string][]byte{a: []byte("A"), b: []byte("B")})

	// b restarts: it rejoins with its instance id and no member id.
	n := len(h.records)
	h.join("jb2", joinOpts{instance: "ib"})
	r := h.joinResp("jb2")
	if r.ErrorCode != 0 || r.Generation != gen || r.MemberID == b || r.MemberID == "" || r.SkipAssignment {
		t.Fatalf("static rejoin: %+v", r)
	}
	b2 := r.MemberID
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("static rejoin rebalanced: state %s", s)
	}
	if len(h.records) != n+1 {
		t.Fatalf("static rejoin wrote %d records, want 1", len(h.records)-n)
	}
	if code := h.heartbeat("g", b, gen, "ib"); code != kerr.FencedInstanceID.Code {
		t.Fatalf("old member id heartbeat: %d, want FENCED_INSTANCE_ID", code)
	}
	if code := h.heartbeat("g", b2, gen, "ib"); code != 0 {
		t.Fatalf("new member id heartbeat: %d", code)
	}
	h.sync("sb2", "g", b2, gen, nil)
	if sr := h.syncResp("sb2"); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "B" {
		t.Fatalf("rejoined member keeps its assignment: %+v", sr)
	}

	// The leader restarts: v9 tells it to skip the assignment.
	h.join("ja2", joinOpts{instance: "ia"})
	r = h.joinResp("ja2")
	if r.ErrorCode != 0 || !r.SkipAssignment || r.LeaderID != r.MemberID || len(r.Members) != 2 {
		t.Fatalf("static leader rejoin: %+v", r)
	}
	// The same restart seen by a v8 client: it must not think it leads.
	h.join("ja3", joinOpts{version: 8, instance: "ia"})
	r3 := h.joinResp("ja3")
	if r3.ErrorCode != 0 || r3.LeaderID != r.MemberID || r3.MemberID == r.MemberID || len(r3.Members) != 0 {
		t.Fatalf("v8 static leader rejoin: %+v", r3)
	}

	// A rejoin that would change the selected protocol forces a rebalance;
	// one that would not (b now prefers roundrobin, a supports only range)
	// does not.
	h.join("jb3", joinOpts{instance: "ib", protocols: []string{"roundrobin", "range"}})
	if r := h.joinResp("jb3"); r.ErrorCode != 0 || h.state("g") != "Stable" {
		t.Fatalf("static rejoin keeping the protocol: %+v, state %s", r, h.state("g"))
	}
	h.join("ja4", joinOpts{instance: "ia", protocols: []string{"roundrobin", "range"}})
	if h.answered("ja4") || h.state("g") != "PreparingRebalance" {
		t.Fatalf("static rejoin changing the protocol: state %s", h.state("g"))
	}
}

func TestStaticMemberFencedWhileParked(t *testing.T) {
	h := newHarness(t, nil)
	h.join("ja", joinOpts{instance: "ia"})
	if h.answered("ja") {
		t.Fatal("answered during initial delay")
	}
	// A second process with the same instance id takes over.
	h.join("ja2", joinOpts{instance: "ia"})
	if r := h.joinResp("ja"); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("old parked join: %d, want FENCED_INSTANCE_ID", r.ErrorCode)
	}
	h.tickToNextDeadline()
	if r := h.joinResp("ja2"); r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("new join: %+v", r)
	}
}

func TestPendingMemberExpires(t *testing.T) {
	h := newHarness(t, nil)
	h.join("j", joinOpts{session: 6000})
	if r := h.joinResp("j"); r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("error %d", r.ErrorCode)
	}
	h.advance(6 * time.Second)
	if got := h.describe("g").Groups[0].State; got != "Dead" {
		t.Fatalf("group with only an expired pending member: %s", got)
	}
	h.join("j2", joinOpts{member: h.joinResp("j").MemberID})
	if r := h.joinResp("j2"); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join with expired id: %d", r.ErrorCode)
	}
}

func TestPendingSyncTimeout(t *testing.T) {
	h := newHarness(t, nil)
	a := h.joinWithID("ja", joinOpts{})
	b := h.joinWithID("jb", joinOpts{})
	h.tickUntil("ja")
	gen := h.joinResp("ja").Generation
	h.sync("sa", "g", a, gen, map[string][]byte{a: {1}, b: {2}})
	// b keeps heartbeating but never syncs; the pending-sync timeout is
	// the rebalance timeout (20s).
	for i := 0; i < 3; i++ {
		h.advance(5 * time.Second)
		for _, id := range []string{a, b} {
			if code := h.heartbeat("g", id, gen, ""); code != 0 {
				t.Fatalf("heartbeat %s: %d", id, code)
			}
		}
	}
	h.advance(5 * time.Second)
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state after pending sync timeout: %s", s)
	}
	if code := h.heartbeat("g", b, gen, ""); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unsynced member: %d", code)
	}
	if code := h.heartbeat("g", a, gen, ""); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("synced member: %d", code)
	}
}

func TestDelayedJoinAnswersEveryToken(t *testing.T) {
	h := newHarness(t, nil)
	ids, _ := h.stableGroup(3)
	h.join("j0", joinOpts{member: ids[0]})
	// The same member sends its join again before the first is answered.
	h.join("j0b", joinOpts{member: ids[0]})
	if r := h.joinResp("j0"); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("superseded join: %d", r.ErrorCode)
	}
	h.advance(20 * time.Second)
	r := h.joinResp("j0b")
	if r.ErrorCode != 0 || len(r.Members) != 1 || !bytes.Equal(r.Members[0].ProtocolMetadata, subscription("t")) {
		t.Fatalf("join: %+v", r)
	}
}
