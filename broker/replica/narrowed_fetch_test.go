package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A follower's incremental session fetch reads the partitions it lists
// and, of the others, only those with news for it: records past its fetch
// offset, a new HW or log start offset, an error; and every partition once
// it went unread for the refresh interval. What it reads is what the
// answer may carry: every round still delivers what the full read did.
func TestNarrowedFollowerSession(t *testing.T) {
	c := newTestClusterParts(t, 3, 4, fastRC(time.Hour), true, 1)
	all3 := []int32{1, 2, 3}
	for p := range int32(4) {
		c.elect(p, 1, all3, all3, all3...)
	}
	m := c.broker(1).m
	const refresh = 10 * time.Second
	now := time.Now()
	// round sends replica 2's Fetch for listed (partition → fetch offset)
	// as Manager.FetchSpliced does, without the wait, and returns the
	// partitions the narrowed request read and those the answer carries.
	var id, epoch int32
	round := func(listed map[int32]int64) (read, answered []int32) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID, req.SessionID, req.SessionEpoch = 2, id, epoch
		req.MinBytes, req.MaxBytes = 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = c.topic.Name
		for p, off := range listed {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p, off, c.state(p).LeaderEpoch, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			req.Topics = append(req.Topics, rt)
		}
		var visit func(*fsPartition, time.Time) bool
		if epoch > 0 {
			visit = m.followerVisit(req.Version, refresh)
		}
		fc, code := m.fetchSessions.begin(now, req, visit)
		if code != 0 {
			t.Fatalf("session error %d", code)
		}
		for _, rt := range fc.req.Topics {
			for _, rp := range rt.Partitions {
				read = append(read, rp.Partition)
			}
		}
		m.recordFollowerFetches(fc.req, 2)
		resp := kmsg.NewPtrFetchResponse()
		m.fillFetch(fc.req, resp, nil)
		m.fetchSessions.finish(now, fc, resp)
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 && rp.Partition != 1 {
					t.Fatalf("partition %d: error %d", rp.Partition, rp.ErrorCode)
				}
				answered = append(answered, rp.Partition)
			}
		}
		slices.Sort(read)
		slices.Sort(answered)
		id, epoch = resp.SessionID, nextFetchEpoch(epoch)
		return read, answered
	}
	check := func(what string, listed map[int32]int64, wantRead, wantAnswered []int32) {
		t.Helper()
		read, answered := round(listed)
		if !slices.Equal(read, wantRead) || !slices.Equal(answered, wantAnswered) {
			t.Fatalf("%s: read %v, answered %v; want %v and %v", what, read, answered, wantRead, wantAnswered)
		}
	}

	all := []int32{0, 1, 2, 3}
	check("full request", map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}, all, all)
	check("first incremental: nothing read yet in the session", nil, all, nil)
	check("nothing changed", nil, nil, nil)
	if r := c.produce(1, 2, 1, "x", time.Second); r.Err != nil {
		t.Fatal(r.Err)
	}
	check("records on 2", nil, []int32{2}, []int32{2})
	check("2 still unfetched", nil, []int32{2}, []int32{2})
	check("2 fetched by replica 2", map[int32]int64{2: 1}, []int32{2}, nil)
	check("2 caught up, HW still 0", nil, nil, nil)
	// Replica 3 fetches partition 2 at 1 (session-less): the HW moves.
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.SessionEpoch = 12, 3, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = c.topic.Name
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = 2, 1, c.state(2).LeaderEpoch, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	m.Fetch(req, kmsg.NewPtrFetchResponse())
	if hw := c.part(1, 2).HighWatermark(); hw != 1 {
		t.Fatalf("HW %d after both followers fetched at 1, want 1", hw)
	}
	check("HW of 2 moved", nil, []int32{2}, []int32{2})
	check("2 caught up", nil, nil, nil)
	if err := c.part(1, 2).SetLogStartOffset(1); err != nil {
		t.Fatal(err)
	}
	check("log start of 2 moved", nil, []int32{2}, []int32{2})
	check("listed without change", map[int32]int64{3: 0}, []int32{3}, nil)
	now = now.Add(refresh)
	check("refresh", nil, all, nil)
	check("after refresh", nil, nil, nil)
	c.elect(1, 2, all3, all3, all3...)
	check("1 led elsewhere: NOT_LEADER_OR_FOLLOWER, every round", nil, []int32{1}, []int32{1})
	check("1 still led elsewhere", nil, []int32{1}, []int32{1})
}
