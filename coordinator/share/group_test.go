package share

import (
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/coordinator/groupconfig"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func assigned(resp *kmsg.ShareGroupHeartbeatResponse) map[[16]byte][]int32 {
	out := map[[16]byte][]int32{}
	if resp.Assignment == nil {
		return nil
	}
	for _, tp := range resp.Assignment.TopicPartitions {
		out[tp.TopicID] = tp.Partitions
	}
	return out
}

func TestHeartbeatJoinAssignLeave(t *testing.T) {
	h := newHarness(t, nil)
	r1 := h.heartbeat("g", "m1", 0, "a", "b")
	if r1.ErrorCode != 0 || r1.MemberEpoch != 1 || r1.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r1)
	}
	if a := assigned(r1); !slices.Equal(a[topicA.ID], []int32{0, 1, 2}) || !slices.Equal(a[topicB.ID], []int32{0}) {
		t.Fatalf("m1 alone: %v", a)
	}
	r2 := h.heartbeat("g", "m2", 0, "a", "b")
	if r2.MemberEpoch != 2 {
		t.Fatalf("m2 epoch %d", r2.MemberEpoch)
	}
	// With more members than partitions, b's one partition is shared.
	if a := assigned(r2); !slices.Equal(a[topicA.ID], []int32{1}) || !slices.Equal(a[topicB.ID], []int32{0}) {
		t.Fatalf("m2: %v", a)
	}
	// m1 adopts the new assignment at its next heartbeat, at its old epoch.
	r1 = h.heartbeat("g", "m1", 1)
	if r1.MemberEpoch != 2 || !slices.Equal(assigned(r1)[topicA.ID], []int32{0, 2}) {
		t.Fatalf("m1 after m2 joined: epoch %d %v", r1.MemberEpoch, assigned(r1))
	}
	// A steady heartbeat carries no assignment.
	if r := h.heartbeat("g", "m1", 2); r.Assignment != nil || r.ErrorCode != 0 {
		t.Fatalf("steady heartbeat %+v", r)
	}
	if r := h.heartbeat("g", "m1", 7); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("stale epoch: code %d", r.ErrorCode)
	}
	if r := h.heartbeat("g", "m2", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave %+v", r)
	}
	if r := h.heartbeat("g", "m1", 2); !slices.Equal(assigned(r)[topicA.ID], []int32{0, 1, 2}) {
		t.Fatalf("m1 after m2 left: %v", assigned(r))
	}
}

func TestHeartbeatValidation(t *testing.T) {
	h := newHarness(t, nil)
	for name, code := range map[string]int16{
		"no topics on join": h.heartbeat("g", "m1", 0).ErrorCode,
		"long member id":    h.heartbeat("g", "0123456789012345678901234567890123456789", 0, "a").ErrorCode,
		"empty group":       h.heartbeat("", "m1", 0, "a").ErrorCode,
		"bad epoch":         h.heartbeat("g", "m1", -2, "a").ErrorCode,
	} {
		if code != kerr.InvalidRequest.Code {
			t.Errorf("%s: code %d", name, code)
		}
	}
	if code := h.heartbeat("nope", "m1", 3).ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Errorf("unknown group: %d", code)
	}
	h.heartbeat("g", "m1", 0, "a")
	if code := h.heartbeat("g", "m9", 1).ErrorCode; code != kerr.UnknownMemberID.Code {
		t.Errorf("unknown member: %d", code)
	}
}

func TestNewTopicReassigns(t *testing.T) {
	h := newHarness(t, nil)
	r := h.heartbeat("g", "m1", 0, "a", "c")
	h.topics = append(h.topics, TopicInfo{Name: "c", ID: [16]byte{3}, Partitions: 2})
	r2 := h.heartbeat("g", "m1", r.MemberEpoch)
	if r2.MemberEpoch <= r.MemberEpoch || !slices.Equal(assigned(r2)[[16]byte{3}], []int32{0, 1}) {
		t.Fatalf("created topic not assigned: epoch %d→%d %v", r.MemberEpoch, r2.MemberEpoch, assigned(r2))
	}
}

func TestSessionTimeoutReleasesRecords(t *testing.T) {
	h := newHarness(t, nil)
	h.setGroupConfigs("g", map[string]string{groupconfig.ShareAutoOffsetReset: "earliest", groupconfig.ShareRecordLockDurationMs: "60000"})
	h.heartbeat("g", "m1", 0, "a")
	r2 := h.heartbeat("g", "m2", 0, "a")
	h.c.OpenSession("g", "m1", []TopicPartition{tpA0})
	h.acquire("g", "m1", tpA0, 5, 100)
	// m2 keeps heartbeating; m1 goes silent for the session timeout.
	for i := 0; i < 9; i++ {
		h.advance(5 * time.Second)
		r2 = h.heartbeat("g", "m2", r2.MemberEpoch)
	}
	h.advance(1 * time.Second)
	if h.c.HasSession("g", "m1") {
		t.Fatal("fenced member kept its share session")
	}
	// The lock lasts 60s, so the records were still locked: the fence released them.
	if got := h.acquire("g", "m2", tpA0, 5, 100); !slices.Equal(got, []Range{{0, 4, 2}}) {
		t.Fatalf("after fence: %v", got)
	}
	d := h.c.Describe(&kmsg.ShareGroupDescribeRequest{GroupIDs: []string{"g"}})
	if len(d.Groups[0].Members) != 1 || d.Groups[0].Members[0].MemberID != "m2" || d.Groups[0].GroupState != "Stable" {
		t.Fatalf("describe after fence: %+v", d.Groups[0])
	}
}

func TestShareSessionEpochs(t *testing.T) {
	h := newHarness(t, nil)
	earliest(h, "g")
	if code := h.c.UpdateSession("g", "m1", 1, nil, nil); code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("no session: %d", code)
	}
	h.c.OpenSession("g", "m1", []TopicPartition{tpA0})
	if code := h.c.UpdateSession("g", "m1", 2, nil, nil); code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: %d", code)
	}
	tpA1 := TopicPartition{TopicID: topicA.ID, Partition: 1}
	if code := h.c.UpdateSession("g", "m1", 1, []TopicPartition{tpA1}, []TopicPartition{tpA0}); code != 0 {
		t.Fatalf("epoch 1: %d", code)
	}
	if got := h.c.SessionPartitions("g", "m1"); !slices.Equal(got, []TopicPartition{tpA1}) {
		t.Fatalf("session partitions %v", got)
	}
	if code := h.c.CheckAckSession("g", "m1", 2); code != 0 {
		t.Fatalf("ack at epoch 2: %d", code)
	}
	// Closing the session releases what the member holds in its partitions.
	h.acquire("g", "m1", tpA1, 3, 100)
	h.c.CloseSession("g", "m1")
	if st := h.states("g", tpA1, 0, 2); !slices.Equal(st, []State{Available, Available, Available}) {
		t.Fatalf("after close %v", st)
	}
}

func TestOffsetsAdminAndDelete(t *testing.T) {
	h := newHarness(t, nil)
	if code := h.c.CanAlterOffsets("g", true); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete on missing group: %d", code)
	}
	h.c.SetStartOffset("g", tpA0, 8)
	if o, ok := h.c.Offset("g", tpA0); !ok || o.StartOffset != 8 {
		t.Fatalf("offset %+v %v", o, ok)
	}
	if got := h.acquire("g", "m1", tpA0, 10, 100); !slices.Equal(got, []Range{{8, 9, 1}}) {
		t.Fatalf("acquired from altered SPSO: %v", got)
	}
	h.heartbeat("g", "m1", 0, "a")
	if code := h.c.CanAlterOffsets("g", false); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with members: %d", code)
	}
	if code := h.c.DeleteGroup("g"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with members: %d", code)
	}
	h.heartbeat("g", "m1", -1)
	h.c.DeleteTopicOffsets("g", topicA.ID)
	if _, ok := h.c.Offset("g", tpA0); ok {
		t.Fatal("state survived DeleteTopicOffsets")
	}
	if code := h.c.DeleteGroup("g"); code != 0 || h.c.IsShareGroup("g") {
		t.Fatalf("delete: %d", code)
	}
}

func TestGroupConfigs(t *testing.T) {
	h := newHarness(t, nil)
	h.setGroupConfigs("g", map[string]string{groupconfig.ShareRecordLockDurationMs: "15000", groupconfig.ShareIsolationLevel: "read_committed"})
	if h.c.LockDurationMs("g") != 15000 || h.c.LockDurationMs("other") != 30000 {
		t.Fatal("lock duration override not applied")
	}
	if !h.c.ReadCommitted("g") || h.c.ReadCommitted("other") || h.c.startsEarliest("g") {
		t.Fatal("isolation level or auto offset reset wrong")
	}
}
