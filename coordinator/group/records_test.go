package group

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// snapshot is what the replay round trip compares: the encoded
// DescribeGroups and OffsetFetch answers for a set of groups.
func snapshot(t *testing.T, c *Coordinator, now time.Time, groups []string) []byte {
	t.Helper()
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Version = 5
	d.Groups = groups
	rs, _ := c.DescribeGroups(now, 0, d)
	out := rs[0].Resp.AppendTo(nil)
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 8
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		f.Groups = append(f.Groups, rg)
	}
	rs, _ = c.OffsetFetch(now, 0, f)
	return append(out, rs[0].Resp.AppendTo(nil)...)
}

func replayAll(t *testing.T, recs []Record) *Coordinator {
	t.Helper()
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if err := c.Replay(r.Key, r.Value); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	return c
}

func TestReplayRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	h.commit("c1", 8, "g", ids[0], gen, commit{"t", 0, 5, "meta"}, commit{"t", 1, 6, ""})
	h.commit("c2", 8, "g", ids[1], gen, commit{"t", 0, 7, "newer"})
	h.join("st", joinOpts{groupID: "static", instance: "i1"})
	h.tickUntil("st")
	st := h.joinResp("st")
	h.sync("sst", "static", st.MemberID, st.Generation, map[string][]byte{st.MemberID: []byte("x")})
	h.join("st2", joinOpts{groupID: "static", instance: "i1"}) // new member id, no rebalance
	h.commit("c3", 8, "simple", "", -1, commit{"a", 0, 1, ""}, commit{"b", 0, 2, ""})
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "simple"
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = "b"
	rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
	req.Topics = append(req.Topics, rt)
	h.handle("del", req)
	h.commit("c4", 8, "gone", "", -1, commit{"a", 0, 1, ""})
	dreq := kmsg.NewPtrDeleteGroupsRequest()
	dreq.Groups = []string{"gone"}
	h.handle("delg", dreq)

	groups := []string{"g", "static", "simple", "gone"}
	want := snapshot(t, h.c, h.now, groups)
	c := replayAll(t, h.records)
	c.Loaded(h.now)
	if got := snapshot(t, c, h.now, groups); !bytes.Equal(got, want) {
		t.Fatalf("replayed state differs:\n got %x\nwant %x", got, want)
	}

	// The replayed group serves its members: heartbeats succeed, the
	// static member's old id is fenced, and sessions run from Loaded.
	rh := &harness{t: t, c: c, now: h.now, replies: make(map[any]kmsg.Response)}
	if code := rh.heartbeat("g", ids[1], gen, ""); code != 0 {
		t.Fatalf("heartbeat after replay: %d", code)
	}
	if code := rh.heartbeat("static", st.MemberID, st.Generation, "i1"); code != kerr.FencedInstanceID.Code {
		t.Fatalf("fenced static id after replay: %d", code)
	}
	rh.advance(5 * time.Second)
	rh.heartbeat("g", ids[1], gen, "")
	rh.advance(5 * time.Second)
	if s := rh.state("g"); s != "PreparingRebalance" {
		t.Fatalf("replayed group after sessions ran out: %s", s)
	}
}

func TestReplayIgnoresUnknownAndRejectsCorrupt(t *testing.T) {
	c, _ := New(DefaultConfig())
	// Key version 3+ (KIP-848 records) are skipped.
	if err := c.Replay([]byte{0, 3, 0, 0}, []byte{1, 2}); err != nil {
		t.Fatalf("unknown key version: %v", err)
	}
	tests := []struct {
		name       string
		key, value []byte
	}{
		{"short key", []byte{0}, nil},
		{"negative version", []byte{0xff, 0xff}, nil},
		{"truncated offset key", []byte{0, 1, 0, 5, 'a'}, nil},
		{"truncated offset value", offsetTombstone("g", "t", 0).Key, []byte{0, 3, 0}},
		{"truncated group value", groupKey("g"), []byte{0, 3, 0, 8, 'c'}},
		{"future value version", offsetTombstone("g", "t", 0).Key, []byte{0, 9, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Replay(tt.key, tt.value); !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("err = %v, want ErrCorruptRecord", err)
			}
		})
	}
}

func TestRecordEncoding(t *testing.T) {
	r := offsetRecord("g", "t", 3, &offset{offset: 9, leaderEpoch: 2, metadata: "m", commitMs: 100, expireMs: -1})
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.Key); err != nil || k.Version != 1 || k.Group != "g" || k.Topic != "t" || k.Partition != 3 {
		t.Fatalf("key %+v err %v", k, err)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(r.Value); err != nil || v.Version != 3 || v.Offset != 9 || v.LeaderEpoch != 2 || v.Metadata != "m" || v.CommitTimestamp != 100 {
		t.Fatalf("value %+v err %v", v, err)
	}
	// Key bytes as Kafka writes them: int16 version, then strings.
	want := []byte{0, 2, 0, 1, 'g'}
	if got := groupKey("g"); !bytes.Equal(got, want) {
		t.Fatalf("group key %x, want %x", got, want)
	}
}

// FuzzReplay checks that no record bytes make Replay panic, and that a
// Coordinator fed arbitrary records still answers requests.
func FuzzReplay(f *testing.F) {
	f.Add(offsetTombstone("g", "t", 0).Key, offsetRecord("g", "t", 0, &offset{offset: 1, expireMs: -1}).Value)
	h := newHarness(&testing.T{}, nil)
	h.join("j", joinOpts{version: 3})
	h.advance(3 * time.Second)
	h.sync("s", "g", h.joinResp("j").MemberID, 1, nil)
	for _, r := range h.records {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, _ := New(DefaultConfig())
		_ = c.Replay(key, value)
		now := time.UnixMilli(1_700_000_000_000)
		c.Loaded(now)
		c.Tick(now.Add(time.Hour))
		c.DescribeGroups(now, 0, &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g"}})
		c.JoinGroup(now, 1, Client{}, &kmsg.JoinGroupRequest{Version: 3, Group: "g", SessionTimeoutMillis: 10000,
			ProtocolType: "consumer", Protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range"}}})
		c.Tick(now.Add(2 * time.Hour))
	})
}
