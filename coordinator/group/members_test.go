package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestHeartbeatErrors(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	h.join("static", joinOpts{groupID: "s", instance: "i1"})
	h.tickUntil("static")
	sr := h.joinResp("static")

	tests := []struct {
		name     string
		group    string
		member   string
		gen      int32
		instance string
		want     int16
	}{
		{"ok", "g", ids[1], gen, "", 0},
		{"empty group id", "", ids[1], gen, "", kerr.InvalidGroupID.Code},
		{"unknown group", "nope", ids[1], gen, "", kerr.UnknownMemberID.Code},
		{"unknown member", "g", "nope", gen, "", kerr.UnknownMemberID.Code},
		{"old generation", "g", ids[1], gen - 1, "", kerr.IllegalGeneration.Code},
		{"future generation", "g", ids[1], gen + 1, "", kerr.IllegalGeneration.Code},
		{"unknown instance", "g", ids[1], gen, "i9", kerr.UnknownMemberID.Code},
		{"static ok in CompletingRebalance", "s", sr.MemberID, sr.Generation, "i1", 0},
		{"fenced instance", "s", "other", sr.Generation, "i1", kerr.FencedInstanceID.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			if got := h.heartbeat(tt.group, tt.member, tt.gen, tt.instance); got != tt.want {
				t.Fatalf("error %d, want %d", got, tt.want)
			}
		})
	}
	h.t = t
	h.join("j", joinOpts{member: ids[0]}) // leader rejoin: rebalance
	if got := h.heartbeat("g", ids[1], gen, ""); got != kerr.RebalanceInProgress.Code {
		t.Fatalf("during rebalance: %d", got)
	}
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	// Member 0 heartbeats every 4s; member 1 goes silent.
	for i := 0; i < 2; i++ {
		h.advance(4 * time.Second)
		if code := h.heartbeat("g", ids[0], gen, ""); code != 0 {
			t.Fatalf("heartbeat: %d", code)
		}
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state %s before expiry", s)
	}
	h.advance(2 * time.Second) // member 1's 10s session ends
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s after expiry", s)
	}
	if code := h.heartbeat("g", ids[1], gen, ""); code != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member heartbeat: %d", code)
	}
	if code := h.heartbeat("g", ids[0], gen, ""); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("survivor heartbeat: %d", code)
	}
	h.join("j0", joinOpts{member: ids[0]})
	r := h.joinResp("j0")
	if r.ErrorCode != 0 || r.Generation != gen+1 || len(r.Members) != 1 || r.LeaderID != ids[0] {
		t.Fatalf("rejoin: %+v", r)
	}
}

func TestSessionExpiryOfLeaderMovesLeadership(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	h.advance(5 * time.Second)
	h.heartbeat("g", ids[1], gen, "")
	h.advance(5 * time.Second) // leader expires
	h.join("j1", joinOpts{member: ids[1]})
	if r := h.joinResp("j1"); r.ErrorCode != 0 || r.LeaderID != ids[1] {
		t.Fatalf("rejoin: %+v", r)
	}
}

func TestAllMembersLeaveGroupBecomesEmpty(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 3
	req.Group = "g"
	for _, id := range ids {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		req.Members = append(req.Members, m)
	}
	n := len(h.records)
	h.handle("leave", req)
	resp := h.replies["leave"].(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode != 0 || len(resp.Members) != 2 || resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != 0 {
		t.Fatalf("leave: %+v", resp)
	}
	if s := h.state("g"); s != "Empty" {
		t.Fatalf("state %s", s)
	}
	if len(h.records) != n+1 {
		t.Fatalf("becoming Empty wrote %d records, want 1", len(h.records)-n)
	}
	if code := h.heartbeat("g", ids[0], gen+1, ""); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after leave: %d", code)
	}
}

func TestLeaveGroup(t *testing.T) {
	h := newHarness(t, nil)
	ids, _ := h.stableGroup(2)
	h.join("st", joinOpts{instance: "is"})
	h.join("j0", joinOpts{member: ids[0]})
	h.join("j1", joinOpts{member: ids[1]})
	if r := h.joinResp("j0"); r.ErrorCode != 0 || len(r.Members) != 3 {
		t.Fatalf("setup: %+v", r)
	}

	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		version int16
		members []kmsg.LeaveGroupRequestMember
		want    []int16
		top     int16
	}{
		{"v0 unknown member", 0, []kmsg.LeaveGroupRequestMember{{MemberID: "nope"}}, nil, kerr.UnknownMemberID.Code},
		{"v3 batch", 3, []kmsg.LeaveGroupRequestMember{
			{MemberID: ids[1]},
			{InstanceID: str("is")},
			{MemberID: "nope"},
			{MemberID: "x", InstanceID: str("unknown")},
		}, []int16{0, 0, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code}, 0},
		{"v1 known member", 1, []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Version = tt.version
			req.Group = "g"
			if tt.version < 3 {
				req.MemberID = tt.members[0].MemberID
			} else {
				req.Members = tt.members
			}
			h.handle(tt.name, req)
			resp := h.replies[tt.name].(*kmsg.LeaveGroupResponse)
			if resp.ErrorCode != tt.top || len(resp.Members) != len(tt.want) {
				t.Fatalf("response %+v", resp)
			}
			for i, w := range tt.want {
				if resp.Members[i].ErrorCode != w {
					t.Fatalf("member %d: %d, want %d", i, resp.Members[i].ErrorCode, w)
				}
			}
		})
	}
	h.t = t
	if d := h.describe("g").Groups[0]; d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after leaves: %+v", d)
	}
}

func TestLeaveAnswersParkedJoin(t *testing.T) {
	h := newHarness(t, nil)
	ids, _ := h.stableGroup(2)
	h.join("j1", joinOpts{member: ids[1], topics: []string{"u"}})
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 0
	req.Group, req.MemberID = "g", ids[1]
	h.handle("leave", req)
	if r := h.joinResp("j1"); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("parked join of departed member: %d", r.ErrorCode)
	}
}

func TestSyncGroupErrors(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		group  string
		member string
		gen    int32
		ptype  *string
		proto  *string
		want   int16
	}{
		{"ok", "g", ids[1], gen, nil, nil, 0},
		{"empty group", "", ids[1], gen, nil, nil, kerr.InvalidGroupID.Code},
		{"unknown group", "x", ids[1], gen, nil, nil, kerr.UnknownMemberID.Code},
		{"unknown member", "g", "x", gen, nil, nil, kerr.UnknownMemberID.Code},
		{"bad generation", "g", ids[1], gen + 1, nil, nil, kerr.IllegalGeneration.Code},
		{"protocol type", "g", ids[1], gen, str("connect"), nil, kerr.InconsistentGroupProtocol.Code},
		{"protocol", "g", ids[1], gen, str("consumer"), str("sticky"), kerr.InconsistentGroupProtocol.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			req := kmsg.NewPtrSyncGroupRequest()
			req.Version = 5
			req.Group, req.MemberID, req.Generation = tt.group, tt.member, tt.gen
			req.ProtocolType, req.Protocol = tt.ptype, tt.proto
			h.handle(tt.name, req)
			if got := h.syncResp(tt.name).ErrorCode; got != tt.want {
				t.Fatalf("error %d, want %d", got, tt.want)
			}
		})
	}
	h.t = t
	// A rebalance answers parked follower syncs with REBALANCE_IN_PROGRESS.
	h.join("j0", joinOpts{member: ids[0]})
	h.join("j1", joinOpts{member: ids[1]})
	gen2 := h.joinResp("j0").Generation
	h.sync("s1", "g", ids[1], gen2, nil)
	h.join("j0b", joinOpts{member: ids[0], topics: []string{"v"}})
	if r := h.syncResp("s1"); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("parked sync during new rebalance: %d", r.ErrorCode)
	}
	h.sync("s2", "g", ids[1], gen2, nil)
	if r := h.syncResp("s2"); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("sync in PreparingRebalance: %d", r.ErrorCode)
	}
}
