package controller

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// OnControlledShutdown handles a ControlledShutdown request from broker id
// at brokerEpoch: leadership of its partitions with more than one replica
// moves to another ISR member, it leaves the ISR of the partitions it
// follows, and the partitions it still leads (no other ISR member) are
// returned, which the broker retries on. Errors wrap kerr codes for the
// response: BrokerNotAvailable for an unknown broker, StaleBrokerEpoch.
func (m *Machine) OnControlledShutdown(id int32, brokerEpoch int64) (remaining []TopicPartition, out Output, err error) {
	c := m.Ctx
	b, ok := c.Live[id]
	if !ok {
		return nil, Output{}, fmt.Errorf("broker %d: %w", id, kerr.BrokerNotAvailable)
	}
	if brokerEpoch != -1 && brokerEpoch < b.Epoch {
		return nil, Output{}, fmt.Errorf("broker %d epoch %d < %d: %w", id, brokerEpoch, b.Epoch, kerr.StaleBrokerEpoch)
	}
	c.ShuttingDown[id] = true
	s := m.begin()
	var led, followed []TopicPartition
	for _, tp := range c.PartitionsOn(id) {
		a, _ := c.Assignment(tp)
		st, ok := c.States[tp]
		if !ok || len(a.Replicas) < 2 || c.Deleting[tp.Topic] {
			continue
		}
		if st.Leader == id {
			led = append(led, tp)
		} else {
			followed = append(followed, tp)
		}
	}
	if _, err := s.elect(led, ElectControlledShutdown, nil); err != nil {
		return nil, Output{}, err
	}
	if err := s.replicasOffline(id, followed); err != nil {
		return nil, Output{}, err
	}
	for _, tp := range c.PartitionsOn(id) {
		a, _ := c.Assignment(tp)
		if st, ok := c.States[tp]; ok && st.Leader == id && len(a.Replicas) > 1 {
			remaining = append(remaining, tp)
		}
	}
	return remaining, s.finish(), nil
}

// OnISRChange handles an /isr_change_notification: leaders changed these
// partitions' ISR in ZooKeeper; the controller reads them back and tells
// every live broker.
func (m *Machine) OnISRChange(tps []TopicPartition) (Output, error) {
	c := m.Ctx
	s := m.begin()
	var known []TopicPartition
	for _, tp := range tps {
		if _, ok := c.Assignment(tp); ok && !c.Deleting[tp.Topic] {
			known = append(known, tp)
		}
	}
	fresh, err := m.W.ReadPartitionStates(known)
	if err != nil {
		return Output{}, err
	}
	var changed []TopicPartition
	for _, tp := range known {
		if st, ok := fresh[tp]; ok {
			c.States[tp] = st
			changed = append(changed, tp)
		}
	}
	s.batch.UpdateMetadata(c, c.LiveIDs(), changed...)
	if err := s.completeReassignments(changed); err != nil {
		return Output{}, err
	}
	return s.finish(), nil
}

// OnElectLeaders runs a preferred (ElectPreferred) or unclean
// (ElectOffline with unclean allowed) election for tps, as the ElectLeaders
// API asks; the map holds the partitions that could not be elected, with
// the API's codes: ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION,
// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE.
func (m *Machine) OnElectLeaders(tps []TopicPartition, strategy ElectionStrategy) (map[TopicPartition]error, Output, error) {
	c := m.Ctx
	s := m.begin()
	var valid []TopicPartition
	failed := map[TopicPartition]error{}
	for _, tp := range tps {
		if _, ok := c.States[tp]; !ok || c.Deleting[tp.Topic] {
			failed[tp] = fmt.Errorf("partition %s: %w", tp, kerr.UnknownTopicOrPartition)
			continue
		}
		if strategy == ElectPreferred {
			if a, _ := c.Assignment(tp); len(a.Replicas) > 0 && c.States[tp].Leader == a.Replicas[0] {
				failed[tp] = fmt.Errorf("partition %s: %w", tp, kerr.ElectionNotNeeded)
				continue
			}
		}
		// An unclean election is for partitions without a live leader.
		if strategy == ElectOffline && c.IsReplicaOnline(c.States[tp].Leader, tp) {
			failed[tp] = fmt.Errorf("partition %s has leader %d: %w", tp, c.States[tp].Leader, kerr.ElectionNotNeeded)
			continue
		}
		valid = append(valid, tp)
	}
	var unclean func(string) bool
	if strategy == ElectOffline {
		unclean = func(string) bool { return true }
	}
	more, err := s.elect(valid, strategy, unclean)
	if err != nil {
		return nil, Output{}, err
	}
	code := kerr.PreferredLeaderNotAvailable
	if strategy != ElectPreferred {
		code = kerr.EligibleLeadersNotAvailable
	}
	for tp, e := range more {
		failed[tp] = fmt.Errorf("%w: %w", code, e)
	}
	return failed, s.finish(), nil
}
