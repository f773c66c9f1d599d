package coordhost

// Cluster mode: the coordinators follow the leadership of their internal
// topics' partitions. replica.Manager calls OnLeadershipChange when this
// broker gains or loses the leadership of a partition; for
// __consumer_offsets and __transaction_state the coordinator drops its
// in-memory state, and the next request replays the topic from the log
// (which, after a gain, holds what the previous leader wrote and this
// broker replicated), as Kafka's coordinators load a partition on election
// and unload it on resignation.
//
// Requests for a group or transactional id whose partition this broker
// does not lead are answered NOT_COORDINATOR before they get here
// (broker/api, coordinator_cluster.go). Limit of this first cut: the whole
// coordinator reloads, not only the partition that moved (requests parked
// in the dropped state, such as a JoinGroup waiting for its rebalance,
// answer COORDINATOR_NOT_AVAILABLE and the clients retry).

import (
	"time"

	"github.com/kbroker/kbroker/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// OnLeadershipChange is replica.Manager's leadership callback.
func (h *Host) OnLeadershipChange(topic string, partition int32, leader bool) {
	switch topic {
	case offsetsTopic:
		h.groups.unload()
	case txnStateTopic:
		h.txns.unload()
	default:
		return
	}
	h.log.Info("coordinator state dropped after a leadership change; reloading on next use", "topic", topic, "partition", partition, "leader", leader)
}

// unload drops the group coordinators' state; the next call replays
// __consumer_offsets.
func (g *groups) unload() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.timer != nil {
		g.mu.timer.Stop()
		g.mu.timer = nil
	}
	g.dropLocked() // parked requests answer COORDINATOR_NOT_AVAILABLE
	g.mu.pendingTxn = nil
}

// unload drops the transaction coordinator's state (and the markers it
// was sending); the next call, or the reload timer armed here, replays the
// __transaction_state partitions this broker leads now and sends the
// markers of their prepared transactions again, so a coordinator that
// takes over a partition finishes what the old one left prepared. The
// timer coalesces the burst of changes one LeaderAndIsr brings.
func (x *txns) unload() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.dropLocked()
	if !x.mu.closed {
		now := x.b.now()
		rearm(&x.mu.timer, now, now.Add(leadershipReloadDelay), x.tick)
	}
}

// leadershipReloadDelay is how long after a leadership change of a
// __transaction_state partition the coordinator reloads when no request
// loads it first.
const leadershipReloadDelay = 200 * time.Millisecond

// SetCluster puts the coordinators in cluster mode: transaction markers go
// to each partition's leader through c (txn_marker_sender.go). Called once,
// before the broker serves; Close stops the sender.
func (h *Host) SetCluster(c Cluster) {
	h.cluster = c
	s := newMarkerSender(c, h.writeLocalMarker, h.txns.markersDone, h.log, h.now)
	h.txns.mu.Lock()
	h.txns.sender = s
	h.txns.mu.Unlock()
	s.start()
}

// writeLocalMarker is the marker sender's path to the partitions this
// broker leads.
func (h *Host) writeLocalMarker(topic string, partition int32, m txn.Marker, done func(code int16)) {
	p := h.rm.PartitionOf(topic, partition)
	if p == nil {
		done(kerr.UnknownTopicOrPartition.Code)
		return
	}
	h.WriteTxnMarker(p, m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch, done)
}
