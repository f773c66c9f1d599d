package replica

// The leader side of follower fetches, as Kafka's
// ReplicaManager.fetchMessages with a replica id: a Fetch whose ReplicaID
// (ReplicaState.ID from v15) is a broker id reads up to the log end offset,
// not the HW. Before reading, each partition's fetch offset is recorded in
// the leader's isr.Leader (FollowerFetch), unless its last fetched epoch
// shows that the follower's log diverged: the follower holds everything
// below it, so the HW may advance (waking parked acks=all produces and
// consumer fetches) and a caught-up follower may rejoin the ISR (written by
// the leader loop). The fetch then parks like a consumer's until MinBytes
// arrive or MaxWaitMs passes; appends wake it.

import (
	"time"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchReplicaID is the broker id a Fetch comes from, -1 for consumers.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// replicaFetch answers a follower's Fetch; w is in Manager.parkedFollowers
// since before the session was narrowed.
func (m *Manager) replicaFetch(fc fetchCtx, w *fetchWatch, resp *kmsg.FetchResponse, spl *protocol.Spliced, replicaID int32) {
	m.recordFollowerFetches(fc.req, replicaID)
	deadline := m.now().Add(time.Duration(fc.req.MaxWaitMillis) * time.Millisecond)
	if fc.visit != nil {
		m.narrowedFetch(fc, w, resp, spl, deadline)
		return
	}
	(&delayedFetch{m: m, req: fc.req, unique: fc.incremental, resp: resp, spl: spl}).run(deadline)
}

// A follower's incremental Fetch in a session is narrowed (fetch_session.go
// begin with followerVisit): it reads the partitions it lists (their fetch
// state changed) and, of the others, only those whose answer would carry
// news, which followerVisit tells from the partition's atomics (log end,
// HW, LSO, log start, role, leader epoch) without reading it. A round of
// a session of thousands of partitions in which a few were written reads
// those few: reading, recording and filtering every session partition
// each round was most of a cluster's CPU under acks=all produce to many
// partitions (BenchmarkAcksAllPartitions). Kafka reads every partition of
// the session each round.
//
// What a partition not read misses is its follower's FollowerFetch: the
// leader's view of that follower (isr.Leader: caught-up time) is of its
// last read. followerVisit reads every partition at least every refresh
// (replica.lag.time.max.ms / 8, at most 1 s), so a follower that keeps
// fetching is never seen as lagging; one that stopped leaves the ISR at
// most refresh earlier than Kafka would drop it.
//
// Parked, a narrowed fetch is woken by a change of any partition of the
// broker (Manager.parkedFollowers: one signal per change, to the few
// follower fetches parked), adds what followerVisit picks now and reads
// again, until MinBytes, the deadline or shutdown.

// followerVisit is the visit of a follower's session (see above); version
// is the request's, refresh the longest a partition goes unread.
func (m *Manager) followerVisit(version int16, refresh time.Duration) func(*fsPartition, time.Time) bool {
	return func(fp *fsPartition, now time.Time) bool {
		p := fp.part
		if p == nil || p.role.Load() != uint32(replLeader) {
			fp.part = m.sessionPartition(version, fp)
			return true // an error to answer, or a new partition
		}
		return fp.hw < 0 || now.Sub(fp.visited) >= refresh ||
			p.Log.LogEndOffset() != fp.req.FetchOffset ||
			p.HighWatermark() != fp.hw || p.LastStableOffset() != fp.lso || p.Log.LogStartOffset() != fp.logStart ||
			fp.req.CurrentLeaderEpoch >= 0 && fp.req.CurrentLeaderEpoch != p.LeaderEpoch()
	}
}

// sessionPartition resolves a session partition; nil if there is none.
func (m *Manager) sessionPartition(version int16, fp *fsPartition) *Partition {
	var t *Topic
	if version >= 13 {
		t = m.TopicByID(fp.id)
	} else {
		t = m.TopicByName(fp.topic)
	}
	if t == nil || fp.key.partition < 0 || int(fp.key.partition) >= len(t.Partitions) {
		return nil
	}
	return t.Partitions[fp.key.partition]
}

// narrowedFetch answers a narrowed follower fetch: now if the first read
// has MinBytes or an error, else at the first wake-up of w whose read has,
// at the deadline or at shutdown.
func (m *Manager) narrowedFetch(fc fetchCtx, w *fetchWatch, resp *kmsg.FetchResponse, spl *protocol.Spliced, deadline time.Time) {
	minBytes := int64(fc.req.MinBytes)
	read := func() bool {
		n, stop := m.fillFetch(fc.req, resp, spl)
		return stop || int64(n) >= minBytes
	}
	m.park(w, deadline, read, func() bool {
		m.fetchSessions.narrow(m.now(), &fc)
		return read()
	})
}

// recordFollowerFetches applies FollowerFetch for every requested partition
// this broker leads, moving HWs and proposing ISR expansions.
func (m *Manager) recordFollowerFetches(req *kmsg.FetchRequest, replicaID int32) {
	now := m.now()
	propose := false
	for _, rt := range req.Topics {
		t := m.fetchTopic(req.Version, rt)
		if t == nil {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
				continue
			}
			p := t.Partitions[rp.Partition]
			if req.Version >= 9 && rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch != p.LeaderEpoch() {
				continue // fenced or unknown: readPartition answers it
			}
			if req.Version >= 12 && rp.LastFetchedEpoch >= 0 && p.Hosted() {
				// A follower whose log diverged from this one (its
				// last fetched epoch ends earlier here) does not hold
				// what this leader has below its fetch offset: it
				// must truncate first (readPartition answers
				// DivergingEpoch). Counting its offset would let the
				// HW pass records it lacks and put it in the ISR
				// without them, as Kafka's Partition.fetchRecords
				// avoids by updating a follower's state only for a
				// fetch without a diverging epoch.
				sp := kmsg.NewFetchResponseTopicPartition()
				if kerrv := divergence(p, rp, &sp); kerrv != nil || sp.DivergingEpoch.Epoch >= 0 {
					continue
				}
			}
			propose = p.followerFetched(replicaID, rp.FetchOffset, now) || propose
		}
	}
	if propose {
		m.wakeISRWriter()
	}
}

// followerFetched records a follower's fetch offset. It reports whether an
// ISR expansion was proposed.
func (p *Partition) followerFetched(replicaID int32, offset int64, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.mu.repl.leader
	if l == nil || p.mu.closed {
		return false
	}
	u, err := l.FollowerFetch(replicaID, offset, now)
	if err != nil {
		return false // not a replica, or beyond the log end: readPartition answers it
	}
	if u.HWMoved {
		p.setHWLocked(l.HW())
	}
	return u.Propose != nil
}

// checkFetch checks that p may serve a fetch: in cluster mode only its
// leader serves consumers and followers (NOT_LEADER_OR_FOLLOWER).
func (p *Partition) checkFetch(replica bool) *kerr.Error {
	switch r := p.role.Load(); {
	case r == uint32(replLeader):
	case r == uint32(replSingle) && !replica:
	default:
		return kerr.NotLeaderForPartition
	}
	return nil
}
