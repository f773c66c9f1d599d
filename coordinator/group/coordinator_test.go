package group

import (
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"negative min session", func(c *Config) { c.GroupMinSessionTimeoutMs = -1 }, false},
		{"max below min", func(c *Config) { c.GroupMaxSessionTimeoutMs = 10 }, false},
		{"negative delay", func(c *Config) { c.GroupInitialRebalanceDelayMs = -1 }, false},
		{"zero max size", func(c *Config) { c.GroupMaxSize = 0 }, false},
		{"zero retention", func(c *Config) { c.OffsetsRetentionMs = 0 }, false},
		{"zero check interval", func(c *Config) { c.OffsetsRetentionCheckIntervalMs = 0 }, false},
		{"negative metadata size", func(c *Config) { c.OffsetMetadataMaxBytes = -1 }, false},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		tt.mod(&cfg)
		if _, err := New(cfg); (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

func TestHandleRefusesUnsupported(t *testing.T) {
	c, _ := New(DefaultConfig())
	tests := []kmsg.Request{
		&kmsg.JoinGroupRequest{Version: 10},
		&kmsg.OffsetFetchRequest{Version: 10},
		&kmsg.OffsetDeleteRequest{Version: 1},
		&kmsg.ProduceRequest{Version: 3},
	}
	for _, req := range tests {
		if rs, _, err := c.Handle(time.Now(), 1, Client{}, req); err == nil || len(rs) != 0 {
			t.Errorf("key %d v%d: err %v, %d replies", req.Key(), req.GetVersion(), err, len(rs))
		}
	}
}

func TestDefaultMemberID(t *testing.T) {
	c, _ := New(DefaultConfig())
	id := c.newMemberID("cli")
	if !regexp.MustCompile(`^cli-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Fatalf("member id %q", id)
	}
	if id == c.newMemberID("cli") {
		t.Fatal("member ids repeat")
	}
}

// TestEveryVersionEncodes sends each API at each version through a group's
// life and checks that every reply encodes at its version.
func TestEveryVersionEncodes(t *testing.T) {
	for v := int16(0); v <= 9; v++ {
		h := newHarness(t, func(c *Config) { c.GroupInitialRebalanceDelayMs = 0 })
		jv := max(v, 1)
		h.join("j", joinOpts{version: jv, instance: map[bool]string{true: "i"}[v >= 5]})
		if r := h.joinResp("j"); r.ErrorCode == kerr.MemberIDRequired.Code {
			h.join("j2", joinOpts{version: jv, member: r.MemberID})
		}
		for tok, r := range h.replies {
			if r.GetVersion() != jv {
				t.Fatalf("v%d %v: reply version %d", v, tok, r.GetVersion())
			}
			_ = r.AppendTo(nil)
		}
		reqs := []kmsg.Request{
			&kmsg.SyncGroupRequest{Version: min(v, 5), Group: "g"},
			&kmsg.HeartbeatRequest{Version: min(v, 4), Group: "g"},
			&kmsg.OffsetCommitRequest{Version: v, Group: "s", Generation: -1, Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Offset: 1}}}}},
			&kmsg.OffsetFetchRequest{Version: v, Group: "s", Groups: []kmsg.OffsetFetchRequestGroup{{Group: "s"}}},
			&kmsg.DescribeGroupsRequest{Version: min(v, 5), Groups: []string{"g", "s"}},
			&kmsg.ListGroupsRequest{Version: min(v, 5)},
			&kmsg.OffsetDeleteRequest{Group: "s"},
			&kmsg.LeaveGroupRequest{Version: min(v, 5), Group: "g", MemberID: "x", Members: []kmsg.LeaveGroupRequestMember{{MemberID: "x"}}},
			&kmsg.DeleteGroupsRequest{Version: min(v, 2), Groups: []string{"s"}},
		}
		for i, req := range reqs {
			h.handle(i, req)
			r := h.replies[i]
			if r.GetVersion() != req.GetVersion() || r.Key() != req.Key() {
				t.Fatalf("v%d key %d: reply %T v%d", v, req.Key(), r, r.GetVersion())
			}
			_ = r.AppendTo(nil)
		}
	}
}

func TestRepeatedJoinInCompletingRebalance(t *testing.T) {
	h := newHarness(t, nil)
	a := h.joinWithID("ja", joinOpts{})
	h.tickUntil("ja")
	// The member lost its JoinGroup answer and sends the same join again.
	h.join("ja2", joinOpts{member: a})
	r := h.joinResp("ja2")
	if r.ErrorCode != 0 || r.Generation != 1 || len(r.Members) != 1 || h.state("g") != "CompletingRebalance" {
		t.Fatalf("repeated join: %+v", r)
	}
}

func TestCommitDuringPreparingRebalance(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	h.join("j0", joinOpts{member: ids[0]})
	// Consumers commit in onPartitionsRevoked, before rejoining.
	r := h.commit("c", 8, "g", ids[1], gen, commit{"t", 0, 9, ""})
	if got := commitCodes(r); got[0] != 0 {
		t.Fatalf("commit while rebalancing: %v", got)
	}
}

func TestStaticMembersThatDoNotRejoinKeepTheirPlace(t *testing.T) {
	h := newHarness(t, nil)
	h.join("ja", joinOpts{instance: "ia"})
	h.join("jb", joinOpts{instance: "ib"})
	h.tickUntil("ja")
	a, b, gen := h.joinResp("ja").MemberID, h.joinResp("jb").MemberID, h.joinResp("ja").Generation
	h.sync("sa", "g", a, gen, map[string][]byte{a: {1}, b: {2}})
	h.sync("sb", "g", b, gen, nil)

	// A third static member comes and goes; a and b only heartbeat.
	h.join("jc", joinOpts{instance: "ic"})
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 3
	ic := "ic"
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: &ic}}
	h.handle("leave", leave)
	if r := h.joinResp("jc"); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("parked join of departed static member: %d", r.ErrorCode)
	}
	for i := 0; i < 6; i++ {
		h.advance(5 * time.Second)
		h.heartbeat("g", a, gen, "ia")
		h.heartbeat("g", b, gen, "ib")
	}
	// Nobody rejoined within the rebalance timeout: still waiting.
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	h.join("ja2", joinOpts{member: a, instance: "ia"})
	h.advance(5 * time.Second)
	h.heartbeat("g", b, gen, "ib")
	h.tickUntil("ja2")
	r := h.joinResp("ja2")
	if r.ErrorCode != 0 || r.Generation != gen+1 || r.LeaderID != a || len(r.Members) != 2 {
		t.Fatalf("rejoin: %+v", r)
	}
	if code := h.heartbeat("g", b, gen+1, "ib"); code != 0 {
		t.Fatalf("static member that did not rejoin: %d", code)
	}
}
