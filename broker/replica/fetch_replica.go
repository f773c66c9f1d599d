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

// replicaFetch answers a follower's Fetch.
func (m *Manager) replicaFetch(fc fetchCtx, resp *kmsg.FetchResponse, spl *protocol.Spliced, replicaID int32) {
	m.recordFollowerFetches(fc.req, replicaID)
	deadline := m.now().Add(time.Duration(fc.req.MaxWaitMillis) * time.Millisecond)
	(&delayedFetch{m: m, req: fc.req, unique: fc.incremental, resp: resp, spl: spl}).run(deadline)
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
