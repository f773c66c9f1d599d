package controller

// Auto leader rebalance (auto.leader.rebalance.enable, Kafka's
// checkAndTriggerAutoLeaderRebalance): every
// leader.imbalance.check.interval.seconds the controller counts, per
// broker, the partitions whose preferred replica it is but which another
// broker leads; past leader.imbalance.per.broker.percentage it runs a
// preferred election for those whose preferred replica is live and in the
// ISR. After a rolling restart this moves leadership back where the
// assignment put it.

// ImbalancedPartitions returns, per live broker that is not shutting down,
// the partitions it should lead but does not, when they exceed percent of
// the partitions whose preferred replica it is. Partitions of topics being
// deleted are left out.
func (c *Context) ImbalancedPartitions(percent int) map[int32][]TopicPartition {
	preferred := map[int32][]TopicPartition{}
	for _, tp := range c.AllPartitions() {
		if c.Deleting[tp.Topic] {
			continue
		}
		a, _ := c.Assignment(tp)
		if len(a.Replicas) == 0 {
			continue
		}
		preferred[a.Replicas[0]] = append(preferred[a.Replicas[0]], tp)
	}
	out := map[int32][]TopicPartition{}
	for id, tps := range preferred {
		if !c.IsLive(id) || c.ShuttingDown[id] {
			continue
		}
		var off []TopicPartition
		for _, tp := range tps {
			if st, ok := c.States[tp]; ok && st.Leader != id {
				off = append(off, tp)
			}
		}
		if len(off)*100 > percent*len(tps) {
			out[id] = off
		}
	}
	return out
}

// OnAutoRebalance runs the preferred elections ImbalancedPartitions asks
// for, for partitions whose preferred replica is live and in the ISR.
func (m *Machine) OnAutoRebalance(percent int) (Output, error) {
	c := m.Ctx
	s := m.begin()
	var tps []TopicPartition
	for id, off := range c.ImbalancedPartitions(percent) {
		for _, tp := range off {
			if contains(c.States[tp].ISR, id) {
				tps = append(tps, tp)
			}
		}
	}
	sortTPs(tps)
	if _, err := s.elect(tps, ElectPreferred, nil); err != nil {
		return Output{}, err
	}
	return s.finish(), nil
}
