package consumer

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scenario drives a group through joins, a regex member, a static leave,
// a revocation in flight, a leave and a metadata change, leaving state of
// every kind behind.
func scenario(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, nil)
	h.setTopic("t", 6)
	h.setTopic("r-1", 2)
	re := "r-.*"
	a := &sim{id: "A", topics: []string{"t"}, assignor: kmsg.StringPtr("uniform")}
	b := &sim{id: "B", topics: []string{"t"}, instance: kmsg.StringPtr("inst-b")}
	c := &sim{id: "C", topics: []string{"t"}, regex: &re}
	d := &sim{id: "D", topics: []string{"t"}}
	for _, s := range []*sim{a, b, c, d} {
		h.poll(s)
	}
	for i := 0; i < 3; i++ {
		for _, s := range []*sim{a, b, c, d} {
			h.poll(s)
		}
	}
	leave := withEpoch(beatReq("B", b.epoch, nil), -2)
	leave.InstanceID = b.instance
	wantCode(t, h.send(leave), 0)
	wantCode(t, h.send(withEpoch(beatReq("D", d.epoch, nil), -1)), 0)
	h.setTopic("r-2", 1)
	h.metadataChanged()
	h.poll(a)
	h.poll(c) // C must revoke something: left mid-revocation
	h.advance(time.Second)
	return h
}

func TestReplayRoundTrip(t *testing.T) {
	h := scenario(t)
	want := dump(h.c)

	c2 := h.replayed()
	for i, r := range h.records {
		if r.Group != "g" {
			t.Fatalf("record %d for group %q", i, r.Group)
		}
	}
	if err := checkInvariants(c2, true); err != nil {
		t.Fatal(err)
	}
	if got := dump(c2); got != want {
		t.Fatalf("replayed state differs:\n--- replayed\n%s--- live\n%s", got, want)
	}

	// Records of the classic coordinator are skipped.
	ok := kmsg.NewOffsetCommitKey()
	ok.Version = 1
	ok.Group, ok.Topic = "g", "t"
	if err := c2.Replay(ok.AppendTo(nil), []byte{0, 3}); err != nil {
		t.Fatalf("offset commit record: %v", err)
	}

	// After Loaded, the members time out as live ones do; the member that
	// was revoking is fenced at its rebalance timeout.
	c2.Loaded(h.now)
	if d := c2.NextDeadline(); d.IsZero() {
		t.Fatal("no deadline after Loaded")
	}
	recs := c2.Tick(h.now.Add(46 * time.Second))
	if len(recs) == 0 || c2.HasMembers("g") {
		t.Fatalf("members survived their session: %d records", len(recs))
	}
}

func TestRecordsReencode(t *testing.T) {
	h := scenario(t)
	kinds := make(map[int16]bool)
	for i, r := range h.records {
		o, ok, err := decodeOp(r.Key, r.Value)
		if err != nil || !ok {
			t.Fatalf("record %d: ok %v err %v", i, ok, err)
		}
		again := o.record()
		if !bytes.Equal(again.Key, r.Key) || !bytes.Equal(again.Value, r.Value) || (again.Value == nil) != (r.Value == nil) {
			t.Fatalf("record %d does not re-encode identically", i)
		}
		kinds[int16(r.Key[0])<<8|int16(r.Key[1])] = true
	}
	for v := int16(groupMetadataKeyVersion); v <= currentMemberKeyVersion; v++ {
		if !kinds[v] {
			t.Errorf("scenario wrote no record of key version %d", v)
		}
	}
}

// TestRecordLayout pins the bytes of one record to Kafka's schema.
func TestRecordLayout(t *testing.T) {
	r := opGroupEpoch{group: "g", epoch: 7}.record()
	if want := []byte{0, 3, 0, 1, 'g'}; !bytes.Equal(r.Key, want) {
		t.Fatalf("key %v", r.Key)
	}
	if want := []byte{0, 0, 0, 0, 0, 7, 0}; !bytes.Equal(r.Value, want) {
		t.Fatalf("value %v", r.Value)
	}
	r = opTarget{group: "g", member: "m", target: asgOf("x:1")}.record()
	id := topicID("x")
	want := append([]byte{0, 0, 2}, id[:]...)
	want = append(want, 2, 0, 0, 0, 1, 0, 0)
	if !bytes.Equal(r.Value, want) {
		t.Fatalf("target value %v, want %v", r.Value, want)
	}
}

func TestReplayCorrupt(t *testing.T) {
	c, _ := New(DefaultConfig(), TopicsFunc(func() []TopicInfo { return nil }))
	good := opCurrent{group: "g", member: "m", cur: current{epoch: 3, assigned: asgOf("t:1,2"), pending: assignment{}}}.record()
	for _, tc := range []struct {
		name       string
		key, value []byte
	}{
		{"short key", []byte{0}, nil},
		{"negative key version", []byte{0xff, 0xff}, nil},
		{"truncated key", good.Key[:len(good.Key)-1], good.Value},
		{"truncated value", good.Key, good.Value[:len(good.Value)-3]},
		{"trailing bytes", good.Key, append(append([]byte{}, good.Value...), 9)},
		{"huge array", good.Key, []byte{0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f}},
		{"value version 1", good.Key, append([]byte{0, 1}, good.Value[2:]...)},
	} {
		if err := c.Replay(tc.key, tc.value); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func FuzzReplay(f *testing.F) {
	h := scenario(&testing.T{})
	for _, r := range h.records {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, _ := New(DefaultConfig(), TopicsFunc(func() []TopicInfo { return nil }))
		_ = c.Replay(key, value) // must not panic
		if err := checkInvariants(c, false); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDescribe(t *testing.T) {
	h := newHarness(t, nil)
	h.setTopic("t", 2)
	s := &sim{id: "A", topics: []string{"t"}, instance: kmsg.StringPtr("i")}
	req := joinReq("A", "t")
	req.InstanceID = s.instance
	req.RackID = kmsg.StringPtr("rack-1")
	wantCode(t, h.send(req), 0)

	resp := h.describe("g", "missing", "")
	if len(resp.Groups) != 3 {
		t.Fatalf("%d groups", len(resp.Groups))
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 1 || g.AssignmentEpoch != 1 || g.AssignorName != "uniform" || len(g.Members) != 1 {
		t.Fatalf("group %+v", g)
	}
	m := g.Members[0]
	if m.MemberID != "A" || *m.InstanceID != "i" || *m.RackID != "rack-1" || m.MemberEpoch != 1 ||
		m.ClientID != "cli" || m.ClientHost != "/127.0.0.1" || m.MemberType != 1 ||
		len(m.SubscribedTopics) != 1 || m.SubscribedTopicRegex != nil {
		t.Fatalf("member %+v", m)
	}
	for _, asg := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
		if len(asg.TopicPartitions) != 1 || asg.TopicPartitions[0].Topic != "t" ||
			asg.TopicPartitions[0].TopicID != topicID("t") || len(asg.TopicPartitions[0].Partitions) != 2 {
			t.Fatalf("assignment %+v", asg)
		}
	}
	if resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code || resp.Groups[2].ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("errors %d %d", resp.Groups[1].ErrorCode, resp.Groups[2].ErrorCode)
	}
	// The response encodes at both versions.
	for v := int16(0); v <= 1; v++ {
		resp.Version = v
		var back kmsg.ConsumerGroupDescribeResponse
		back.Version = v
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
	}
	if got := h.c.ListGroups(); len(got) != 1 || got[0].State != "Stable" {
		t.Fatalf("list %+v", got)
	}
	// Assigning: the epoch moved, no heartbeat computed a target yet.
	h.setTopic("t", 3)
	h.metadataChanged()
	if s := h.state(); s != "Assigning" {
		t.Fatalf("state %s", s)
	}
}
