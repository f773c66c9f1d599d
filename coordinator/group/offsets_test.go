package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type commit struct {
	topic     string
	partition int32
	offset    int64
	metadata  string
}

func (h *harness) commit(token any, version int16, group, member string, gen int32, cs ...commit) *kmsg.OffsetCommitResponse {
	h.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation = group, member, gen
	for _, c := range cs {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = c.topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = c.partition, c.offset, 7
		meta := c.metadata
		rp.Metadata = &meta
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	h.handle(token, req)
	return h.replies[token].(*kmsg.OffsetCommitResponse)
}

func commitCodes(r *kmsg.OffsetCommitResponse) []int16 {
	var out []int16
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// fetchAll returns topic/partition -> offset of OffsetFetch v7 with null
// topics.
func (h *harness) fetchAll(group string) map[string]int64 {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	tok := new(int)
	h.handle(tok, req)
	out := make(map[string]int64)
	for _, t := range h.replies[tok].(*kmsg.OffsetFetchResponse).Topics {
		for _, p := range t.Partitions {
			out[t.Topic+"/"+string(rune('0'+p.Partition))] = p.Offset
		}
	}
	return out
}

func TestOffsetCommitValidation(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(2)
	tests := []struct {
		name    string
		version int16
		group   string
		member  string
		gen     int32
		meta    string
		want    int16
	}{
		{"member commit", 8, "g", ids[1], gen, "m", 0},
		{"old generation", 8, "g", ids[1], gen - 1, "", kerr.IllegalGeneration.Code},
		{"unknown member", 8, "g", "x", gen, "", kerr.UnknownMemberID.Code},
		{"simple commit to non-empty group", 8, "g", "", -1, "", kerr.UnknownMemberID.Code},
		{"v0 commit to non-empty group", 0, "g", "", -1, "", kerr.UnknownMemberID.Code},
		{"generation for unknown group", 8, "new", "m", 3, "", kerr.IllegalGeneration.Code},
		{"generation for unknown group v9", 9, "new", "m", 3, "", kerr.GroupIDNotFound.Code},
		{"simple commit creates group", 8, "simple", "", -1, "", 0},
		{"v0 simple commit", 0, "simple", "", -1, "", 0},
		{"member id with generation -1 on Empty group", 8, "simple", "someone", -1, "", 0},
		{"metadata too large", 8, "simple", "", -1, strings.Repeat("x", 4097), kerr.OffsetMetadataTooLarge.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.t = t
			r := h.commit(tt.name, tt.version, tt.group, tt.member, tt.gen, commit{"t", 0, 42, tt.meta})
			if got := commitCodes(r); len(got) != 1 || got[0] != tt.want {
				t.Fatalf("codes %v, want %d", got, tt.want)
			}
		})
	}
	h.t = t
	if got := h.describe("new").Groups[0].State; got != "Dead" {
		t.Fatalf("refused commit created group: %s", got)
	}
	// During CompletingRebalance commits are refused.
	h.join("j0", joinOpts{member: ids[0]})
	h.join("j1", joinOpts{member: ids[1]})
	r := h.commit("c", 8, "g", ids[1], gen+1, commit{"t", 0, 1, ""})
	if got := commitCodes(r); got[0] != kerr.RebalanceInProgress.Code {
		t.Fatalf("commit in CompletingRebalance: %v", got)
	}
}

func TestOffsetCommitFetch(t *testing.T) {
	h := newHarness(t, nil)
	n := len(h.records)
	h.commit("c1", 8, "simple", "", -1, commit{"a", 0, 10, "x"}, commit{"a", 1, 11, ""}, commit{"b", 0, 20, ""})
	if len(h.records) != n+3 {
		t.Fatalf("commit wrote %d records, want 3", len(h.records)-n)
	}
	if got := h.fetchAll("simple"); len(got) != 3 || got["a/0"] != 10 || got["a/1"] != 11 || got["b/0"] != 20 {
		t.Fatalf("fetch all: %v", got)
	}
	h.commit("c2", 8, "simple", "", -1, commit{"a", 0, 15, ""})

	// v5 single group with explicit partitions, one never committed.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 5
	req.Group = "simple"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "a", []int32{0, 5}
	req.Topics = append(req.Topics, rt)
	h.handle("f5", req)
	r5 := h.replies["f5"].(*kmsg.OffsetFetchResponse)
	ps := r5.Topics[0].Partitions
	if ps[0].Offset != 15 || ps[0].LeaderEpoch != 7 || ps[1].Offset != -1 || ps[1].LeaderEpoch != -1 ||
		ps[1].Metadata == nil || *ps[1].Metadata != "" || ps[1].ErrorCode != 0 {
		t.Fatalf("v5 fetch: %+v", ps)
	}

	// v8 batch of groups, one unknown, one with all topics.
	req8 := kmsg.NewPtrOffsetFetchRequest()
	req8.Version = 8
	req8.RequireStable = true
	g1 := kmsg.NewOffsetFetchRequestGroup()
	g1.Group = "simple"
	g2 := kmsg.NewOffsetFetchRequestGroup()
	g2.Group = "unknown"
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = "a", []int32{0}
	g2.Topics = append(g2.Topics, gt)
	req8.Groups = append(req8.Groups, g1, g2)
	h.handle("f8", req8)
	r8 := h.replies["f8"].(*kmsg.OffsetFetchResponse)
	if len(r8.Groups) != 2 || len(r8.Groups[0].Topics) != 2 || r8.Groups[0].Topics[0].Partitions[1].Offset != 11 ||
		r8.Groups[1].ErrorCode != 0 || r8.Groups[1].Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("v8 fetch: %+v", r8)
	}
	if got := h.fetchAll("unknown"); len(got) != 0 {
		t.Fatalf("unknown group: %v", got)
	}
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t, nil)
	ids, gen := h.stableGroup(1) // subscribes to topic "t"
	h.commit("c", 8, "g", ids[0], gen, commit{"t", 0, 1, ""}, commit{"old", 0, 2, ""})
	del := func(tok string, group string, topics ...string) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for _, topic := range topics {
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = topic
			rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
			req.Topics = append(req.Topics, rt)
		}
		h.handle(tok, req)
		return h.replies[tok].(*kmsg.OffsetDeleteResponse)
	}
	n := len(h.records)
	r := del("d1", "g", "t", "old")
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code ||
		r.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete from active group: %+v", r)
	}
	if len(h.records) != n+1 || h.records[n].Value != nil {
		t.Fatalf("want one tombstone, got %d records", len(h.records)-n)
	}
	if got := h.fetchAll("g"); len(got) != 1 {
		t.Fatalf("after delete: %v", got)
	}
	if r := del("d2", "nope", "t"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group: %d", r.ErrorCode)
	}
}

func TestOffsetExpiration(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.OffsetsRetentionMs = int64(time.Hour / time.Millisecond)
		c.OffsetsRetentionCheckIntervalMs = int64(time.Minute / time.Millisecond)
	})
	ids, gen := h.stableGroup(1)
	h.commit("c", 8, "g", ids[0], gen, commit{"t", 0, 1, ""})
	h.commit("s", 8, "simple", "", -1, commit{"t", 0, 1, ""})
	// A Stable group keeps the offsets of topics it subscribes to.
	for i := 0; i < 70*12; i++ {
		h.advance(5 * time.Second)
		h.heartbeat("g", ids[0], gen, "")
	}
	if got := h.fetchAll("g"); len(got) != 1 {
		t.Fatalf("stable group lost offsets: %v", got)
	}
	if s := h.state("simple"); s != "Dead" {
		t.Fatalf("simple group after retention: %s", s)
	}
	// Once Empty, the retention counts from the transition.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g", ids[0]
	h.handle("leave", leave)
	h.advance(59 * time.Minute)
	if got := h.fetchAll("g"); len(got) != 1 {
		t.Fatalf("offsets expired early: %v", got)
	}
	n := len(h.records)
	h.advance(time.Minute)
	if got := h.fetchAll("g"); len(got) != 0 {
		t.Fatalf("offsets not expired: %v", got)
	}
	if s := h.state("g"); s != "Dead" {
		t.Fatalf("state %s", s)
	}
	if len(h.records) != n+2 || h.records[n].Value != nil || h.records[n+1].Value != nil {
		t.Fatalf("want offset and group tombstones, got %d records", len(h.records)-n)
	}
}

func TestExplicitRetentionV2(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.OffsetsRetentionCheckIntervalMs = 1000 })
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 2
	req.Group, req.Generation, req.RetentionTimeMillis = "s", -1, 5000
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}
	req.Topics = append(req.Topics, rt)
	h.handle("c", req)
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(h.records[len(h.records)-1].Value); err != nil || v.Version != 1 || v.ExpireTimestamp != h.now.UnixMilli()+5000 {
		t.Fatalf("value %+v err %v", v, err)
	}
	h.advance(4 * time.Second)
	if len(h.fetchAll("s")) != 1 {
		t.Fatal("expired early")
	}
	h.advance(time.Second)
	if len(h.fetchAll("s")) != 0 {
		t.Fatal("not expired at its explicit expiration")
	}
}
