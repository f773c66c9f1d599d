package controller

// OnLogDirFailure handles /log_dir_event_notification: the brokers named
// there lost some (not all) of their log directories. Each live one gets a
// LeaderAndIsr with the current state of every partition it hosts, which
// it answers KAFKA_STORAGE_ERROR for the replicas in an offline directory;
// OnLeaderAndISRResponse takes it from there (Kafka's
// onBrokerLogDirFailure: the OnlineReplica transition of every replica on
// those brokers).
func (m *Machine) OnLogDirFailure(ids []int32) Output {
	c := m.Ctx
	s := m.begin()
	seen := map[int32]bool{}
	for _, id := range ids {
		if seen[id] || !c.IsLive(id) {
			continue
		}
		seen[id] = true
		s.replicasOnline(id)
	}
	return s.finish()
}

// replicasOnline moves every replica on broker id (of topics not being
// deleted) to ReplicaOnline and sends id a LeaderAndIsr with the current
// state of each of those partitions that has one (Kafka's
// handleStateChanges(replicasOnBroker, OnlineReplica), for a broker that
// starts and for one that lost a log dir).
func (s *step) replicasOnline(id int32) {
	c := s.m.Ctx
	for _, tp := range c.PartitionsOn(id) {
		if c.Deleting[tp.Topic] {
			continue
		}
		if err := c.moveReplica(PartitionReplica{tp, id}, ReplicaOnline); err != nil {
			s.problem(err)
			continue
		}
		if _, ok := c.States[tp]; ok {
			s.batch.LeaderAndISR(c, []int32{id}, tp, false)
		}
	}
}

// OnLeaderAndISRResponse handles broker id's answer to a LeaderAndIsr sent
// to its incarnation brokerEpoch (an answer from an earlier incarnation is
// ignored): partitions answered KAFKA_STORAGE_ERROR (stored) join the
// broker's offline-directory replicas, partitions answered without error
// (ok) leave them. Replicas newly offline are handled as Kafka's
// onReplicasBecomeOffline: partitions they led get a leader elected among
// the other online ISR members (unclean rules as for a dead leader), the
// replicas go OfflineReplica (StopReplica without delete to the broker, out
// of the ISRs) and every broker's metadata lists them offline.
func (m *Machine) OnLeaderAndISRResponse(id int32, brokerEpoch int64, stored, ok []TopicPartition) (Output, error) {
	c := m.Ctx
	if b, live := c.Live[id]; !live || b.Epoch != brokerEpoch {
		return Output{}, nil
	}
	cur := c.OfflineDirs[id]
	if cur == nil {
		cur = map[TopicPartition]bool{}
	}
	for _, tp := range ok {
		delete(cur, tp)
	}
	var fresh []TopicPartition
	for _, tp := range stored {
		if _, known := c.Assignment(tp); known && !cur[tp] {
			cur[tp] = true
			fresh = append(fresh, tp)
		}
	}
	if c.OfflineDirs == nil {
		c.OfflineDirs = map[int32]map[TopicPartition]bool{}
	}
	if len(cur) == 0 {
		delete(c.OfflineDirs, id)
	} else {
		c.OfflineDirs[id] = cur
	}
	if len(fresh) == 0 {
		return Output{}, nil
	}
	s := m.begin()
	if err := s.dirReplicasOffline(id, fresh); err != nil {
		return Output{}, err
	}
	return s.finish(), nil
}

// dirReplicasOffline is brokerFailure for some replicas of a broker that
// still runs: tps are now offline in c.OfflineDirs[id].
func (s *step) dirReplicasOffline(id int32, tps []TopicPartition) error {
	c := s.m.Ctx
	var gone []TopicPartition
	offlineLeader := 0
	for _, tp := range tps {
		if c.Deleting[tp.Topic] {
			continue
		}
		gone = append(gone, tp)
		if st, ok := c.States[tp]; ok && st.Leader == id {
			if err := c.movePartition(tp, PartitionOffline); err != nil {
				s.problem(err)
				continue
			}
			offlineLeader++
		}
	}
	if err := s.triggerOnline(); err != nil {
		return err
	}
	if err := s.replicasOffline(id, gone); err != nil {
		return err
	}
	if offlineLeader == 0 {
		s.batch.UpdateMetadata(c, c.LiveIDs())
	}
	return nil
}
