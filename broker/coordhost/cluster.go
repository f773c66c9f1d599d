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

// unload drops the transaction coordinator's state; the next call replays
// __transaction_state.
func (x *txns) unload() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.timer != nil {
		x.mu.timer.Stop()
		x.mu.timer = nil
	}
	x.dropLocked()
}
