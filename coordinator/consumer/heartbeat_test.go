package consumer

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFirstMemberGetsAllPartitions(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("t", 6)
	a := &sim{id: "A", topics: []string{"t"}}
	r := h.poll(a)
	wantCode(t, r, 0)
	if r.MemberEpoch != 1 || *r.MemberID != "A" || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: epoch %d id %q interval %d", r.MemberEpoch, *r.MemberID, r.HeartbeatIntervalMillis)
	}
	wantAssigned(t, a.owned, "t:0,1,2,3,4,5")
	if s := h.state(); s != "Stable" {
		t.Fatalf("state %s", s)
	}
	// A keep-alive with nothing changed carries no assignment.
	r = h.send(beatReq("A", 1, nil))
	wantCode(t, r, 0)
	if r.Assignment != nil || r.MemberEpoch != 1 {
		t.Fatalf("keep-alive: epoch %d assignment %v", r.MemberEpoch, r.Assignment)
	}
}

// TestSecondMemberWaitsForRevocation is the heart of KIP-848: the new
// member receives partitions only after the old owner's heartbeat no
// longer reports them.
func TestSecondMemberWaitsForRevocation(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("t", 6)
	a := &sim{id: "A", topics: []string{"t"}}
	b := &sim{id: "B", topics: []string{"t"}}
	h.poll(a)

	r := h.poll(b)
	wantCode(t, r, 0)
	if r.MemberEpoch != 2 {
		t.Fatalf("B joined at epoch %d, want 2", r.MemberEpoch)
	}
	wantAssigned(t, b.owned, "") // its target is still owned by A
	if got := h.member("B").cur.state; got != MemberUnreleasedPartitions {
		t.Fatalf("B state %v", got)
	}
	if s := h.state(); s != "Reconciling" {
		t.Fatalf("state %s", s)
	}

	// B polls again before A revoked: still nothing.
	h.poll(b)
	wantAssigned(t, b.owned, "")

	// A learns that it must give up half; it stays at epoch 1.
	r = h.poll(a)
	if r.MemberEpoch != 1 || r.Assignment == nil {
		t.Fatalf("A: epoch %d assignment %v", r.MemberEpoch, r.Assignment)
	}
	wantAssigned(t, a.owned, "t:0,1,2")
	if got := h.member("A").cur.state; got != MemberUnrevokedPartitions {
		t.Fatalf("A state %v", got)
	}
	h.assertDisjoint(a, b)
	h.poll(b)
	wantAssigned(t, b.owned, "") // A has not acknowledged yet

	// A acknowledges by reporting only t:0-2 and moves to epoch 2.
	r = h.poll(a)
	if r.MemberEpoch != 2 {
		t.Fatalf("A after revoking: epoch %d", r.MemberEpoch)
	}
	h.poll(b)
	wantAssigned(t, b.owned, "t:3,4,5")
	h.assertDisjoint(a, b)
	if s := h.state(); s != "Stable" {
		t.Fatalf("state %s", s)
	}
}

func stableAB(t *testing.T, h *harness) (*sim, *sim) {
	t.Helper()
	h.setTopic("t", 6)
	a := &sim{id: "A", topics: []string{"t"}}
	b := &sim{id: "B", topics: []string{"t"}}
	h.poll(a)
	h.poll(b)
	h.settle(a, b)
	wantAssigned(t, a.owned, "t:0,1,2")
	wantAssigned(t, b.owned, "t:3,4,5")
	return a, b
}

func TestLeaveMovesPartitions(t *testing.T) {
	h := newHarness(t, nil)
	a, b := stableAB(t, h)
	epoch := h.c.groups["g"].epoch
	r := h.send(withEpoch(beatReq("B", b.epoch, nil), -1))
	wantCode(t, r, 0)
	if r.MemberEpoch != -1 || *r.MemberID != "B" {
		t.Fatalf("leave: %d %q", r.MemberEpoch, *r.MemberID)
	}
	if g := h.c.groups["g"]; g.epoch != epoch+1 || g.members["B"] != nil {
		t.Fatalf("after leave: epoch %d, B present %v", g.epoch, g.members["B"] != nil)
	}
	// B's partitions are free, so A gets them at once.
	r = h.poll(a)
	if r.MemberEpoch != epoch+1 {
		t.Fatalf("A epoch %d", r.MemberEpoch)
	}
	wantAssigned(t, a.owned, "t:0,1,2,3,4,5")
	// B is gone.
	wantCode(t, h.send(beatReq("B", b.epoch, nil)), kerr.UnknownMemberID.Code)
	wantCode(t, h.send(withEpoch(beatReq("B", b.epoch, nil), -1)), kerr.UnknownMemberID.Code)
}

func withEpoch(r *kmsgReq, e int32) *kmsgReq { r.MemberEpoch = e; return r }

type kmsgReq = kmsg.ConsumerGroupHeartbeatRequest

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t, nil)
	a, b := stableAB(t, h)
	_ = b
	deadline := h.c.NextDeadline()
	if want := h.now.Add(45 * time.Second); !deadline.Equal(want) {
		t.Fatalf("next deadline %v, want %v", deadline, want)
	}
	// A heartbeats every 5s; B is silent.
	for i := 0; i < 9; i++ {
		h.advance(5 * time.Second)
		if i < 8 && h.c.groups["g"].members["B"] == nil {
			t.Fatalf("B expired early, after %d heartbeats", i)
		}
		h.poll(a)
	}
	if h.c.groups["g"].members["B"] != nil {
		t.Fatal("B did not expire after 45s")
	}
	h.poll(a)
	wantAssigned(t, a.owned, "t:0,1,2,3,4,5")
}

func TestRebalanceTimeoutFencesMemberThatDoesNotRevoke(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("t", 4)
	a := &sim{id: "A", topics: []string{"t"}}
	b := &sim{id: "B", topics: []string{"t"}}
	h.poll(a)
	h.poll(b)
	r := h.poll(a) // A is asked to revoke 2 partitions
	if h.member("A").cur.state != MemberUnrevokedPartitions {
		t.Fatalf("A state %v", h.member("A").cur.state)
	}
	// A keeps heartbeating but never stops reporting the revoked ones.
	stale := asgOf("t:0,1,2,3")
	for i := 0; i < 5; i++ {
		h.advance(5 * time.Second)
		wantCode(t, h.send(beatReq("A", r.MemberEpoch, stale)), 0)
	}
	h.advance(5 * time.Second) // 30s rebalance timeout reached
	if h.c.groups["g"].members["A"] != nil {
		t.Fatal("A not fenced after its rebalance timeout")
	}
	wantCode(t, h.send(beatReq("A", r.MemberEpoch, stale)), kerr.UnknownMemberID.Code)
	h.poll(b)
	wantAssigned(t, b.owned, "t:0,1,2,3")
}

func TestRegexPicksUpNewTopic(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("foo-1", 2)
	h.setTopic("foobar", 1)
	h.setTopic("__consumer_offsets", 50)
	re := "foo-.*"
	s := &sim{id: "A", regex: &re}
	wantCode(t, h.poll(s), 0)
	wantAssigned(t, s.owned, "foo-1:0,1")

	h.setTopic("foo-2", 3)
	h.setTopic("bar", 1)
	epoch := h.c.groups["g"].epoch
	h.metadataChanged()
	if h.c.groups["g"].epoch != epoch+1 {
		t.Fatal("metadata change did not bump the group epoch")
	}
	h.poll(s)
	wantAssigned(t, s.owned, "foo-1:0,1 foo-2:0,1,2")

	// Growing a topic is picked up too; unrelated topics change nothing.
	h.setTopic("foo-1", 3)
	h.metadataChanged()
	h.poll(s)
	wantAssigned(t, s.owned, "foo-1:0,1,2 foo-2:0,1,2")
	epoch = h.c.groups["g"].epoch
	h.setTopic("bar", 5)
	if recs := h.c.MetadataChanged(h.now); len(recs) != 0 || h.c.groups["g"].epoch != epoch {
		t.Fatalf("unrelated topic change wrote %d records", len(recs))
	}

	bad := joinReq("B")
	bad.SubscribedTopicRegex = kmsg.StringPtr("foo-(")
	wantCode(t, h.send(bad), kerr.InvalidRegularExpression.Code)
}

func TestTopicNamesSubscriptionChange(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("x", 2)
	h.setTopic("y", 2)
	s := &sim{id: "A", topics: []string{"x"}}
	h.poll(s)
	wantAssigned(t, s.owned, "x:0,1")
	req := beatReq("A", s.epoch, s.owned)
	req.SubscribedTopicNames = []string{"y"}
	r := h.send(req)
	// x must be revoked first; y is free so it comes with the next epoch.
	if r.MemberEpoch != s.epoch || respAssignment(r).count() != 0 {
		t.Fatalf("resubscribe: epoch %d assignment %v", r.MemberEpoch, respAssignment(r))
	}
	s.owned = respAssignment(r)
	h.poll(s)
	wantAssigned(t, s.owned, "y:0,1")
}

func TestStaleEpochIsFenced(t *testing.T) {
	h := newHarness(t, nil)
	a, b := stableAB(t, h)
	// One more rebalance so that epochs older than the previous one exist.
	wantCode(t, h.send(withEpoch(beatReq("B", b.epoch, nil), -1)), 0)
	h.poll(a)
	cur := a.epoch
	prev := h.member("A").cur.prevEpoch
	if prev < 2 || cur <= prev {
		t.Fatalf("setup: epoch %d previous %d", cur, prev)
	}
	wantCode(t, h.send(beatReq("A", cur+3, a.owned)), kerr.FencedMemberEpoch.Code)
	// An older epoch is fenced unless it is the previous one and the
	// member owns a subset of its assignment (a lost response).
	wantCode(t, h.send(beatReq("A", prev-1, a.owned)), kerr.FencedMemberEpoch.Code)
	wantCode(t, h.send(beatReq("A", prev, asgOf("t:0,1,2,3,4,5,6"))), kerr.FencedMemberEpoch.Code)
	wantCode(t, h.send(beatReq("A", prev, nil)), kerr.FencedMemberEpoch.Code)
	r := h.send(beatReq("A", prev, asgOf("t:0,1,2")))
	wantCode(t, r, 0)
	if r.MemberEpoch != cur {
		t.Fatalf("previous epoch answered with %d, want %d", r.MemberEpoch, cur)
	}

	wantCode(t, h.send(beatReq("Z", 1, nil)), kerr.UnknownMemberID.Code)
	other := beatReq("A", 1, nil)
	other.Group = "nope"
	wantCode(t, h.send(other), kerr.GroupIDNotFound.Code)
}

func TestStaticMemberRejoinKeepsPartitions(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("t", 4)
	a := &sim{id: "A1", instance: kmsg.StringPtr("inst-a"), topics: []string{"t"}}
	b := &sim{id: "B", topics: []string{"t"}}
	h.poll(a)
	h.poll(b)
	for i := 0; i < 3; i++ {
		h.poll(a)
		h.poll(b)
	}
	wantAssigned(t, a.owned, "t:0,1")
	epoch := h.c.groups["g"].epoch

	// The instance id is taken while A1 is active.
	dup := joinReq("A2", "t")
	dup.InstanceID = kmsg.StringPtr("inst-a")
	wantCode(t, h.send(dup), kerr.UnreleasedInstanceID.Code)

	// A1 leaves temporarily: it keeps its partitions, nobody else gets them.
	leave := withEpoch(beatReq("A1", a.epoch, nil), -2)
	leave.InstanceID = kmsg.StringPtr("inst-a")
	r := h.send(leave)
	wantCode(t, r, 0)
	if r.MemberEpoch != -2 {
		t.Fatalf("static leave answered epoch %d", r.MemberEpoch)
	}
	h.poll(b)
	wantAssigned(t, b.owned, "t:2,3")

	// A restarts with a new member id and the same instance id: it gets
	// its partitions back at the current epoch, without a rebalance.
	a2 := &sim{id: "A2", instance: kmsg.StringPtr("inst-a"), topics: []string{"t"}}
	r = h.poll(a2)
	wantCode(t, r, 0)
	wantAssigned(t, a2.owned, "t:0,1")
	if g := h.c.groups["g"]; g.epoch != epoch || r.MemberEpoch != epoch || g.members["A1"] != nil {
		t.Fatalf("rejoin: group epoch %d (was %d), member epoch %d, A1 present %v", g.epoch, epoch, r.MemberEpoch, g.members["A1"] != nil)
	}
	if s := h.state(); s != "Stable" {
		t.Fatalf("state %s", s)
	}
	// The old member id is fenced.
	old := beatReq("A1", epoch, nil)
	old.InstanceID = kmsg.StringPtr("inst-a")
	wantCode(t, h.send(old), kerr.FencedInstanceID.Code)

	// A static member that left and never comes back expires.
	leave = withEpoch(beatReq("A2", a2.epoch, nil), -2)
	leave.InstanceID = kmsg.StringPtr("inst-a")
	wantCode(t, h.send(leave), 0)
	for i := 0; i < 10; i++ {
		h.advance(5 * time.Second)
		h.poll(b)
	}
	if h.c.groups["g"].members["A2"] != nil {
		t.Fatal("departed static member did not expire")
	}
	h.poll(b)
	wantAssigned(t, b.owned, "t:0,1,2,3")
}

func TestInvalidRequests(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxSize = 1 })
	h.setTopic("t", 1)
	mod := func(f func(r *kmsgReq)) *kmsgReq { r := joinReq("A", "t"); f(r); return r }
	tests := []struct {
		name string
		req  *kmsgReq
		code int16
		msg  string
	}{
		{"v1 without member id", mod(func(r *kmsgReq) { r.MemberID = "" }), kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{"blank group", mod(func(r *kmsgReq) { r.Group = " " }), kerr.InvalidRequest.Code, "GroupId can't be empty."},
		{"blank instance", mod(func(r *kmsgReq) { r.InstanceID = kmsg.StringPtr("") }), kerr.InvalidRequest.Code, "InstanceId can't be empty."},
		{"blank rack", mod(func(r *kmsgReq) { r.RackID = kmsg.StringPtr("") }), kerr.InvalidRequest.Code, "RackId can't be empty."},
		{"join without rebalance timeout", mod(func(r *kmsgReq) { r.RebalanceTimeoutMillis = -1 }), kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."},
		{"join with null owned", mod(func(r *kmsgReq) { r.Topics = nil }), kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining."},
		{"join owning partitions", mod(func(r *kmsgReq) { r.Topics = beatReq("A", 0, asgOf("t:0")).Topics }), kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining."},
		{"join without subscription", mod(func(r *kmsgReq) { r.SubscribedTopicNames = nil }), kerr.InvalidRequest.Code, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"static leave without instance", mod(func(r *kmsgReq) { r.MemberEpoch = -2 }), kerr.InvalidRequest.Code, "InstanceId can't be null."},
		{"epoch below -2", mod(func(r *kmsgReq) { r.MemberEpoch = -3 }), kerr.InvalidRequest.Code, "MemberEpoch is invalid."},
		{"unknown assignor", mod(func(r *kmsgReq) { r.ServerAssignor = kmsg.StringPtr("sticky") }), kerr.UnsupportedAssignor.Code, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.send(tt.req)
			wantCode(t, r, tt.code)
			if r.ErrorMessage == nil || *r.ErrorMessage != tt.msg {
				t.Fatalf("message %v, want %q", r.ErrorMessage, tt.msg)
			}
		})
	}
	if len(h.c.groups) != 0 {
		t.Fatal("refused requests created a group")
	}
	// v0: the coordinator generates the member id.
	v0 := joinReq("", "t")
	v0.Version = 0
	r := h.send(v0)
	wantCode(t, r, 0)
	if *r.MemberID != "gen-1" {
		t.Fatalf("v0 member id %q", *r.MemberID)
	}
	// group.consumer.max.size = 1.
	wantCode(t, h.send(joinReq("B", "t")), kerr.GroupMaxSizeReached.Code)
}

func TestClassicGroupIsNotTakenOver(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.ClassicGroupHasMembers = func(g string) bool { return g == "g" }
	})
	h.setTopic("t", 1)
	wantCode(t, h.send(joinReq("A", "t")), kerr.GroupIDNotFound.Code)
}

func TestValidateCommit(t *testing.T) {
	h := newHarness(t, nil)
	a, _ := stableAB(t, h)
	mine := []CommitPartition{{Topic: "t", Partition: 0}}
	tests := []struct {
		group, member string
		epoch         int32
		want          int16
	}{
		{"g", "A", a.epoch, 0},
		{"g", "A", a.epoch + 1, kerr.StaleMemberEpoch.Code},
		{"g", "A", 0, kerr.StaleMemberEpoch.Code}, // before A owned t:0
		{"g", "Z", a.epoch, kerr.UnknownMemberID.Code},
		{"g", "", -1, kerr.UnknownMemberID.Code}, // members exist
		{"other", "A", 1, kerr.GroupIDNotFound.Code},
	}
	for _, tt := range tests {
		if got := h.c.ValidateCommit(tt.group, tt.member, tt.epoch, mine); got != tt.want {
			t.Errorf("ValidateCommit(%q, %q, %d) = %d, want %d", tt.group, tt.member, tt.epoch, got, tt.want)
		}
	}
	if got := h.c.ValidateOffsetFetch("g", nil, -1); got != 0 {
		t.Errorf("admin fetch: %d", got)
	}
	if got := h.c.ValidateOffsetFetch("g", kmsg.StringPtr("A"), a.epoch+1); got != kerr.StaleMemberEpoch.Code {
		t.Errorf("stale fetch: %d", got)
	}
	// Once everyone left, anyone may commit with epoch -1.
	for _, id := range []string{"A", "B"} {
		wantCode(t, h.send(withEpoch(beatReq(id, 0, nil), -1)), 0)
	}
	if got := h.c.ValidateCommit("g", "", -1, mine); got != 0 {
		t.Errorf("commit to empty group: %d", got)
	}
	code, recs := h.c.DeleteGroup("g")
	if code != 0 || len(recs) == 0 || h.c.IsConsumerGroup("g") {
		t.Fatalf("delete: code %d, %d records", code, len(recs))
	}
}

// TestCommitWithOlderEpoch is KIP-1251 (Kafka 4.3): a commit sent with the
// member's previous epoch, racing the heartbeat that moved it on, lands
// for partitions the member kept since that epoch; it is
// STALE_MEMBER_EPOCH, for the whole commit, if any partition was given to
// the member later or is no longer its own. The assignment epochs survive
// a reload that replays the member's records.
func TestCommitWithOlderEpoch(t *testing.T) {
	h := newHarness(t, nil)
	a, b := stableAB(t, h)
	old := a.epoch
	parts := func(ps ...int32) []CommitPartition {
		var out []CommitPartition
		for _, p := range ps {
			out = append(out, CommitPartition{Topic: "t", Partition: p})
		}
		return out
	}
	// B leaves: A moves on at once, keeping t:0-2 and gaining t:3-5.
	wantCode(t, h.send(withEpoch(beatReq("B", b.epoch, nil), -1)), 0)
	h.poll(a)
	if a.epoch <= old {
		t.Fatalf("A stayed at epoch %d", a.epoch)
	}
	wantAssigned(t, a.owned, "t:0,1,2,3,4,5")
	mid := a.epoch
	kept := parts(0, 1, 2)
	byID := []CommitPartition{{TopicID: topicID("t"), Partition: 1}}
	for _, tt := range []struct {
		name  string
		epoch int32
		parts []CommitPartition
		want  int16
	}{
		{"kept, older epoch", old, kept, 0},
		{"kept, by topic id", old, byID, 0},
		{"gained after that epoch", old, parts(0, 3), kerr.StaleMemberEpoch.Code},
		{"current epoch", a.epoch, parts(0, 3), 0},
		{"before the member owned anything", 0, kept, kerr.StaleMemberEpoch.Code},
		{"unknown topic", old, []CommitPartition{{Topic: "nope", Partition: 0}}, kerr.StaleMemberEpoch.Code},
	} {
		if got := h.c.ValidateCommit("g", "A", tt.epoch, tt.parts); got != tt.want {
			t.Errorf("%s: ValidateCommit(epoch %d) = %d, want %d", tt.name, tt.epoch, got, tt.want)
		}
	}

	// C joins: A must revoke half; once it has, a commit from its older
	// epoch for a revoked partition is stale, for a kept one it lands.
	c := &sim{id: "C", topics: []string{"t"}}
	h.poll(c)
	h.settle(a, c)
	var keptA, lostA []CommitPartition
	for p := int32(0); p < 6; p++ {
		if a.owned.contains(topicID("t"), p) {
			keptA = append(keptA, CommitPartition{Topic: "t", Partition: p})
		} else {
			lostA = append(lostA, CommitPartition{Topic: "t", Partition: p})
		}
	}
	if len(keptA) == 0 || len(lostA) == 0 || a.epoch <= mid {
		t.Fatalf("A owns %v at epoch %d after C joined", a.owned, a.epoch)
	}
	if got := h.c.ValidateCommit("g", "A", mid, keptA); got != 0 {
		t.Errorf("kept partitions %v at the older epoch %d: %d", keptA, mid, got)
	}
	for _, p := range lostA {
		if got := h.c.ValidateCommit("g", "A", mid, []CommitPartition{p}); got != kerr.StaleMemberEpoch.Code {
			t.Errorf("revoked partition %d at the older epoch %d: %d, want STALE_MEMBER_EPOCH", p.Partition, mid, got)
		}
	}

	// A coordinator that replays the records knows the same epochs.
	if got, want := dump(h.replayed()), dump(h.c); got != want {
		t.Fatalf("replayed state differs:\n--- replayed\n%s--- live\n%s", got, want)
	}
}

// TestGroupConfigTimeouts checks that a group's consumer.session.timeout.ms
// and consumer.heartbeat.interval.ms group configs replace the broker's
// defaults for that group only.
func TestGroupConfigTimeouts(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.GroupTimeouts = func(group string) (int32, int32) {
			if group == "g" {
				return 50000, 7000
			}
			return c.SessionTimeoutMs, c.HeartbeatIntervalMs
		}
	})
	h.setTopic("t", 2)
	a := &sim{id: "A", topics: []string{"t"}}
	r := h.poll(a)
	wantCode(t, r, 0)
	if r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("heartbeat interval %d, want the group's 7000", r.HeartbeatIntervalMillis)
	}
	if want := h.now.Add(50 * time.Second); !h.c.NextDeadline().Equal(want) {
		t.Fatalf("session deadline %v, want %v", h.c.NextDeadline(), want)
	}
	h.advance(46 * time.Second)
	if h.c.groups["g"].members["A"] == nil {
		t.Fatal("A expired at the broker default, not the group's 50s")
	}
	h.advance(5 * time.Second)
	if h.c.groups["g"].members["A"] != nil {
		t.Fatal("A did not expire after the group's 50s session timeout")
	}
}

// TestLostAssignmentOfReleasedPartitionsIsResent: a member in
// MemberUnreleasedPartitions picks up the released partitions without a
// new epoch. If the response carrying them is lost and the client resends
// the same keep-alive (franz-go's request retry does), the retry has the
// same epoch and no owned partitions; the coordinator must send the
// assignment again, or the client never learns of the partitions while the
// coordinator keeps them assigned to it and gives them to nobody else.
func TestLostAssignmentOfReleasedPartitionsIsResent(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("t", 6)
	a := &sim{id: "A", topics: []string{"t"}}
	b := &sim{id: "B", topics: []string{"t"}}
	h.poll(a)
	h.poll(b)
	h.poll(a) // A must revoke t:3-5
	h.poll(a) // A revoked; B's target is free
	if got := h.member("B").cur.state; got != MemberUnreleasedPartitions {
		t.Fatalf("B state %v", got)
	}
	keepAlive := beatReq("B", b.epoch, nil)
	r := h.send(keepAlive) // the response is lost
	wantCode(t, r, 0)
	wantAssigned(t, respAssignment(r), "t:3,4,5")
	if r.MemberEpoch != b.epoch {
		t.Fatalf("B's epoch moved from %d to %d", b.epoch, r.MemberEpoch)
	}
	r = h.send(beatReq("B", b.epoch, nil)) // the client's retry
	wantCode(t, r, 0)
	if r.Assignment == nil {
		t.Fatal("the retried keep-alive got no assignment: the client never learns of t:3-5")
	}
	wantAssigned(t, respAssignment(r), "t:3,4,5")

	// Once the member reports owning its assignment, keep-alives are
	// empty again.
	wantCode(t, h.send(beatReq("B", b.epoch, asgOf("t:3,4,5"))), 0)
	r = h.send(beatReq("B", b.epoch, nil))
	if r.Assignment != nil {
		t.Fatalf("keep-alive after the acknowledgement: assignment %v", r.Assignment)
	}
}

// TestFencedMemberRejoinsWithEpochZero is KAFKA-19233: a member fenced for
// its epoch abandons its partitions and rejoins with its member id and
// epoch 0 (franz-go and the Java client keep the id). The coordinator,
// which still knows it at a later epoch, takes it back in place and sends
// its assignment again, whatever state it is in. Refusing it (Kafka before
// 4.2) fences every retry until the member's session expires, and all that
// time the partitions the coordinator still assigns to it are consumed by
// nobody.
func TestFencedMemberRejoinsWithEpochZero(t *testing.T) {
	h := newHarness(t, nil)
	a, b := stableAB(t, h)
	// Two epochs behind, as a client is after two lost responses (or
	// after a coordinator reloaded records it never answered).
	wantCode(t, h.send(withEpoch(beatReq("B", b.epoch, nil), -1)), 0)
	h.poll(a)
	c := &sim{id: "C", topics: []string{"t"}}
	h.poll(c)
	h.poll(a) // A must revoke some of t:0-5 for C
	if got := h.member("A").cur.state; got != MemberUnrevokedPartitions {
		t.Fatalf("setup: A state %v", got)
	}
	stale := a.epoch - 2
	wantCode(t, h.send(beatReq("A", stale, a.owned)), kerr.FencedMemberEpoch.Code)

	// A abandons everything and rejoins with its id at epoch 0.
	r := h.send(joinReq("A", "t"))
	wantCode(t, r, 0)
	if *r.MemberID != "A" || r.MemberEpoch != h.c.groups["g"].assignmentEpoch {
		t.Fatalf("rejoin: member %q epoch %d, want A at %d", *r.MemberID, r.MemberEpoch, h.c.groups["g"].assignmentEpoch)
	}
	if r.Assignment == nil {
		t.Fatal("rejoin answered without an assignment")
	}
	a.epoch, a.owned = r.MemberEpoch, respAssignment(r)
	// Reporting nothing revoked what A had to give up: C gets it.
	for range 2 {
		h.poll(c)
		h.poll(a)
		h.assertDisjoint(a, c)
	}
	if s := h.state(); s != "Stable" {
		t.Fatalf("state %s after the rejoin, want Stable", s)
	}
	both := a.owned.clone()
	for tid, ps := range c.owned {
		for _, p := range ps {
			both.add(tid, p)
		}
	}
	wantAssigned(t, both, "t:0,1,2,3,4,5")
	if a.owned.count() != 3 || c.owned.count() != 3 {
		t.Fatalf("A owns %v, C owns %v", a.owned, c.owned)
	}
}
