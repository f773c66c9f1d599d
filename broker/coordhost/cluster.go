package coordhost

// Cluster mode: the coordinators follow the leadership of their internal
// topics' partitions. replica.Manager calls OnLeadershipChange when this
// broker gains or loses the leadership of a partition; for
// __consumer_offsets and __transaction_state the coordinator loads that
// partition (replays its log, which after a gain holds what the previous
// leader wrote and this broker replicated) or unloads it (forgets its
// groups or transactional ids, answers the requests parked for them
// NOT_COORDINATOR, and stops sending the markers of its transactions), as
// Kafka's coordinators load a partition on election and unload it on
// resignation. The state of the other partitions, and the requests parked
// for it, are untouched. A coordinator holds only the partitions this
// broker leads: a follower's copy would bring back groups and transactions
// owned elsewhere, whose timers would write where this broker cannot.
//
// Requests for a group or transactional id whose partition this broker
// does not lead are answered NOT_COORDINATOR before they get here
// (broker/api, coordinator_cluster.go).

import (
	"time"

	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/kbroker/kbroker/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// OnLeadershipChange is replica.Manager's leadership callback.
func (h *Host) OnLeadershipChange(topic string, partition int32, leader bool) {
	switch topic {
	case offsetsTopic:
		h.groups.leadershipChanged(partition, leader)
	case txnStateTopic:
		h.txns.leadershipChanged(partition, leader)
	case share.StateTopic:
		h.shareStore.leadershipChanged(partition, leader)
	}
	switch topic {
	case offsetsTopic:
		if !leader {
			h.shares.groupsLeadershipLost(partition)
		}
	case txnStateTopic, share.StateTopic:
	default:
		h.shares.dataLeadershipChanged(topic, partition)
	}
}

// leadershipReloadDelay is how long after this broker gains a
// __transaction_state partition, with its transaction coordinator not
// loaded, the coordinator loads when no request loads it first. It
// coalesces the burst of partitions one LeaderAndIsr brings.
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
	h.shares.startCluster()
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
