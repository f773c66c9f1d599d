package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fsReq builds a v12 (name-keyed) fetch request for topic "t" with the
// given partitions fetched at offset 10*partition.
func fsReq(id, epoch int32, parts ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionID, req.SessionEpoch = 12, id, epoch
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, int64(10*p), 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// fsState is what a fake log answers for one partition.
type fsState struct {
	hw, lso, logStart int64
	records           bool
	err               int16
}

// fsFill answers req's partitions from state, as fillFetch would.
func fsFill(req *kmsg.FetchRequest, state map[int32]fsState) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			s := state[rp.Partition]
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset, sp.ErrorCode = rp.Partition, s.hw, s.lso, s.logStart, s.err
			sp.RecordBatches = []byte{}
			if s.records {
				sp.RecordBatches = []byte{1}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// fsRun serves req against the cache as Manager.fetch does.
func fsRun(c *fetchSessionCache, now time.Time, req *kmsg.FetchRequest, state map[int32]fsState) (*kmsg.FetchResponse, []int32) {
	fc, code := c.begin(now, req, nil)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	resp := fsFill(fc.req, state)
	c.finish(now, fc, resp)
	var got []int32
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			got = append(got, rp.Partition)
		}
	}
	return resp, got
}

func TestFetchSessionIncrementalRules(t *testing.T) {
	c := newFetchSessionCache(10)
	now := time.Unix(1000, 0)
	state := map[int32]fsState{0: {hw: 5, lso: 5}, 1: {hw: 7, lso: 7}, 2: {hw: 9, lso: 9}}

	resp, got := fsRun(c, now, fsReq(0, 0, 0, 1, 2), state)
	if resp.SessionID == 0 || len(got) != 3 {
		t.Fatalf("full: session %d, partitions %v", resp.SessionID, got)
	}
	id := resp.SessionID

	// Nothing new: the incremental answer is empty but keeps the session.
	if resp, got = fsRun(c, now, fsReq(id, 1), state); resp.ErrorCode != 0 || resp.SessionID != id || len(got) != 0 {
		t.Fatalf("idle incremental: %+v %v", resp, got)
	}
	// Records on 1, HW move on 2 (no records), log start move on 0.
	state[1] = fsState{hw: 7, lso: 7, records: true}
	state[2] = fsState{hw: 10, lso: 10}
	if _, got = fsRun(c, now, fsReq(id, 2), state); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("records + hw: got %v", got)
	}
	state[1] = fsState{hw: 7, lso: 7}
	state[0] = fsState{hw: 5, lso: 5, logStart: 3}
	if _, got = fsRun(c, now, fsReq(id, 3), state); fmt.Sprint(got) != "[0]" {
		t.Fatalf("log start: got %v", got)
	}
	// An error is always sent, and the partition is sent again once it clears.
	state[0] = fsState{hw: 5, lso: 5, logStart: 3, err: kerr.OffsetOutOfRange.Code}
	if _, got = fsRun(c, now, fsReq(id, 4), state); fmt.Sprint(got) != "[0]" {
		t.Fatalf("error: got %v", got)
	}
	state[0] = fsState{hw: 5, lso: 5, logStart: 3}
	if _, got = fsRun(c, now, fsReq(id, 5), state); fmt.Sprint(got) != "[0]" {
		t.Fatalf("error cleared: got %v", got)
	}
	// Partition 1 returned records, so it moved to the end of the order.
	state[0] = fsState{hw: 5, lso: 5, logStart: 3, records: true}
	state[1] = fsState{hw: 7, lso: 7, records: true}
	if _, got = fsRun(c, now, fsReq(id, 6), state); fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("order: got %v", got)
	}
	fc, _ := c.begin(now, fsReq(id, 7), nil)
	if ps := fc.req.Topics[0].Partitions; len(ps) != 3 || ps[0].Partition != 2 || ps[2].Partition != 1 {
		t.Fatalf("session order after records: %+v", ps)
	}
	c.finish(now, fc, fsFill(fc.req, state))

	// Add partition 3 (always sent first: nothing answered yet), update
	// partition 0's offset, forget partition 2.
	state = map[int32]fsState{0: {hw: 5, lso: 5, logStart: 3}, 1: {hw: 7, lso: 7}, 2: {hw: 10, lso: 10}, 3: {hw: 1, lso: 1}}
	req := fsReq(id, 8, 3, 0)
	req.Topics[0].Partitions[1].FetchOffset = 4
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "t", Partitions: []int32{2}}}
	fc, _ = c.begin(now, req, nil)
	var offs []string
	for _, rp := range fc.req.Topics[0].Partitions {
		offs = append(offs, fmt.Sprintf("%d@%d", rp.Partition, rp.FetchOffset))
	}
	if fmt.Sprint(offs) != "[0@4 1@10 3@30]" {
		t.Fatalf("session after add/update/forget: %v", offs)
	}
	resp = fsFill(fc.req, state)
	c.finish(now, fc, resp)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 3 {
		t.Fatalf("added partition answer: %+v", resp.Topics)
	}

	// Epoch errors, unknown id, topic-id mismatch.
	if resp, _ = fsRun(c, now, fsReq(id, 8), state); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code || resp.SessionID != 0 {
		t.Fatalf("stale epoch: %+v", resp)
	}
	if resp, _ = fsRun(c, now, fsReq(id+1, 1), state); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown id: %+v", resp)
	}
	v13 := fsReq(id, 9)
	v13.Version = 13
	if resp, _ = fsRun(c, now, v13, state); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("v13 on a v12 session: %+v", resp)
	}
	// Forgetting every partition closes the session.
	req = fsReq(id, 9)
	req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "t", Partitions: []int32{0, 1, 3}}}
	if resp, got = fsRun(c, now, req, state); resp.ErrorCode != 0 || resp.SessionID != 0 || len(got) != 0 || c.len() != 0 {
		t.Fatalf("emptied session: %+v %v, %d sessions", resp, got, c.len())
	}

	// FINAL closes the named session and answers session-less; epoch 0 with
	// an id replaces the session.
	resp, _ = fsRun(c, now, fsReq(0, 0, 0), state)
	id = resp.SessionID
	if resp, _ = fsRun(c, now, fsReq(id, 0, 0), state); resp.SessionID == 0 || resp.SessionID == id || c.len() != 1 {
		t.Fatalf("re-init: %+v, %d sessions", resp, c.len())
	}
	if resp, got = fsRun(c, now, fsReq(resp.SessionID, -1, 0), state); resp.SessionID != 0 || len(got) != 1 || c.len() != 0 {
		t.Fatalf("final: %+v %v, %d sessions", resp, got, c.len())
	}
	// Below v7 and with no slots, no session.
	old := fsReq(0, 0, 0)
	old.Version = 6
	if resp, _ = fsRun(c, now, old, state); resp.SessionID != 0 || c.len() != 0 {
		t.Fatalf("v6: %+v", resp)
	}
	if resp, _ = fsRun(newFetchSessionCache(0), now, fsReq(0, 0, 0), state); resp.SessionID != 0 {
		t.Fatalf("0 slots: %+v", resp)
	}
}

func TestFetchSessionTopicIDs(t *testing.T) {
	c := newFetchSessionCache(10)
	now := time.Unix(1000, 0)
	idA, idB := [16]byte{1}, [16]byte{2}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.SessionEpoch = 13, 0
	for _, id := range [][16]byte{idA, idB} {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	state := map[int32]fsState{0: {hw: 1, lso: 1}}
	resp, got := fsRun(c, now, req, state)
	if resp.SessionID == 0 || len(got) != 2 {
		t.Fatalf("full: %+v", resp)
	}
	inc := kmsg.NewPtrFetchRequest()
	inc.Version, inc.SessionID, inc.SessionEpoch = 13, resp.SessionID, 1
	inc.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{TopicID: idA, Partitions: []int32{0}}}
	fc, code := c.begin(now, inc, nil)
	if code != 0 || len(fc.req.Topics) != 1 || fc.req.Topics[0].TopicID != idB {
		t.Fatalf("forget by id: code %d, %+v", code, fc.req.Topics)
	}
	// An UNKNOWN_TOPIC_ID partition is answered every time.
	r := fsFill(fc.req, map[int32]fsState{0: {hw: -1, lso: -1, logStart: -1, err: kerr.UnknownTopicID.Code}})
	c.finish(now, fc, r)
	inc.SessionEpoch, inc.ForgottenTopics = 2, nil
	fc, _ = c.begin(now, inc, nil)
	r = fsFill(fc.req, map[int32]fsState{0: {hw: -1, lso: -1, logStart: -1, err: kerr.UnknownTopicID.Code}})
	c.finish(now, fc, r)
	if len(r.Topics) != 1 || r.Topics[0].TopicID != idB || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %+v", r.Topics)
	}
}

func TestFetchSessionEviction(t *testing.T) {
	c := newFetchSessionCache(2)
	t0 := time.Unix(1000, 0)
	state := map[int32]fsState{}
	create := func(now time.Time, parts ...int32) int32 {
		resp, _ := fsRun(c, now, fsReq(0, 0, parts...), state)
		return resp.SessionID
	}
	a := create(t0, 0, 1)
	bID := create(t0.Add(time.Second), 0, 1, 2)
	if a == 0 || bID == 0 {
		t.Fatal("no room for two sessions in two slots")
	}
	// Full, nothing stale or old enough: no session.
	if id := create(t0.Add(time.Minute), 0, 1, 2, 3); id != 0 || c.len() != 2 {
		t.Fatalf("young sessions evicted: id %d", id)
	}
	// Both older than the eviction age but recently used: the smallest goes
	// for a new session at least as big, not for a smaller one.
	t1 := t0.Add(3 * time.Minute)
	fsRun(c, t1, fsReq(a, 1), state)
	fsRun(c, t1, fsReq(bID, 1), state)
	if id := create(t1, 0); id != 0 {
		t.Fatal("a smaller session evicted a bigger one")
	}
	cID := create(t1, 0, 1, 2)
	if cID == 0 || c.len() != 2 {
		t.Fatalf("no eviction by size: %d, %d sessions", cID, c.len())
	}
	if resp, _ := fsRun(c, t1, fsReq(a, 2), state); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("smallest session not evicted: %+v", resp)
	}
	// Idle beyond the eviction age: the least recently used goes, whatever its size.
	t2 := t1.Add(2*time.Minute + time.Second)
	fsRun(c, t2.Add(-time.Second), fsReq(cID, 1), state)
	if id := create(t2, 0); id == 0 {
		t.Fatal("stale session not evicted")
	}
	if resp, _ := fsRun(c, t2, fsReq(bID, 2), state); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("stale session kept: %+v", resp)
	}
	if resp, _ := fsRun(c, t2, fsReq(cID, 2), state); resp.ErrorCode != 0 {
		t.Fatalf("recent session lost: %+v", resp)
	}
}
