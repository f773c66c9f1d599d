package controller

import (
	"fmt"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Partition reassignment (KIP-455, Kafka's onPartitionReassignment). With
// ORS the original replicas, TRS the target and RS = TRS ∪ ORS:
//
//	start:  assignment RS with adding TRS−ORS and removing ORS−TRS written
//	        to the topic znode; leader epoch + 1; LeaderAndIsr to RS, so
//	        the new replicas start fetching.
//	finish: once TRS ⊆ ISR (learned from an ISR change): leadership moves
//	        into TRS if needed (else the epoch is bumped), the removed
//	        replicas leave the ISR and get StopReplica with delete, and the
//	        topic znode holds TRS alone.

// Origin is the replicas a partition had before its current reassignment.
func (a Assignment) Origin() []int32 {
	return filter(a.Replicas, func(r int32) bool { return !contains(a.Adding, r) })
}

// Target is the replicas a partition's current reassignment moves it to.
func (a Assignment) Target() []int32 {
	return filter(a.Replicas, func(r int32) bool { return !contains(a.Removing, r) })
}

// Reassigning reports whether a reassignment is in progress.
func (a Assignment) Reassigning() bool { return len(a.Adding)+len(a.Removing) > 0 }

// reassignTo is Kafka's ReplicaAssignment.reassignTo.
func (a Assignment) reassignTo(target []int32) Assignment {
	origin := a.Origin()
	rs := append([]int32(nil), target...)
	for _, r := range origin {
		if !contains(rs, r) {
			rs = append(rs, r)
		}
	}
	return Assignment{
		Replicas: rs,
		Adding:   filter(rs, func(r int32) bool { return !contains(origin, r) }),
		Removing: filter(rs, func(r int32) bool { return !contains(target, r) }),
	}
}

// OnReassign starts reassignments (AlterPartitionReassignments): each
// partition moves to its target replicas; a target equal to the original
// replicas cancels an ongoing reassignment. Targets must be distinct live
// brokers; failures are per partition, with kerr codes.
func (m *Machine) OnReassign(targets map[TopicPartition][]int32) (map[TopicPartition]error, Output, error) {
	c := m.Ctx
	s := m.begin()
	failed := map[TopicPartition]error{}
	tps := make([]TopicPartition, 0, len(targets))
	for tp := range targets {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	var started []TopicPartition
	dropped := map[TopicPartition][]int32{}
	for _, tp := range tps {
		target := targets[tp]
		cur, ok := c.Assignment(tp)
		if _, hasState := c.States[tp]; !ok || !hasState || c.Deleting[tp.Topic] {
			failed[tp] = fmt.Errorf("partition %s: %w", tp, kerr.UnknownTopicOrPartition)
			continue
		}
		if err := c.validTarget(target); err != nil {
			failed[tp] = fmt.Errorf("partition %s: %w", tp, err)
			continue
		}
		next := cur.reassignTo(target)
		// Replicas added by a reassignment this one replaces (or cancels)
		// leave the ISR below, then stop and delete their logs.
		for _, r := range cur.Replicas {
			if !contains(next.Replicas, r) {
				dropped[tp] = append(dropped[tp], r)
				s.batch.StopReplica(c, r, tp, true)
				delete(c.Replicas, PartitionReplica{tp, r})
			}
		}
		c.Topics[tp.Topic].Partitions[tp.Partition] = next
		started = append(started, tp)
	}
	if err := s.writeAssignments(started); err != nil {
		return nil, Output{}, err
	}
	// Bump the epoch so every replica, the new ones included, hears of
	// the new replica set at once.
	bump := func(tp TopicPartition, cur zkdata.PartitionState) (zkdata.PartitionState, bool) {
		next := cur.Clone()
		next.LeaderEpoch++
		if isr := filter(cur.ISR, func(r int32) bool { return !contains(dropped[tp], r) }); len(isr) > 0 {
			next.ISR = isr
		}
		return next, true
	}
	done, err := s.update(started, bump)
	if err != nil {
		return nil, Output{}, err
	}
	for _, tp := range done {
		a, _ := c.Assignment(tp)
		for _, r := range a.Adding {
			pr := PartitionReplica{tp, r}
			if c.Replicas[pr] == ReplicaNonExistent {
				c.Replicas[pr] = ReplicaNew
			}
		}
		s.batch.LeaderAndISR(c, a.Replicas, tp, false)
	}
	if err := s.completeReassignments(done); err != nil {
		return nil, Output{}, err
	}
	return failed, s.finish(), nil
}

func (c *Context) validTarget(target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("empty replica list: %w", kerr.InvalidReplicaAssignment)
	}
	seen := map[int32]bool{}
	for _, r := range target {
		if seen[r] {
			return fmt.Errorf("replica %d twice: %w", r, kerr.InvalidReplicaAssignment)
		}
		seen[r] = true
		if !c.IsLive(r) {
			return fmt.Errorf("broker %d is not available: %w", r, kerr.InvalidReplicaAssignment)
		}
	}
	return nil
}

// completeReassignments finishes the reassignments among tps whose target
// replicas are all in the ISR.
func (s *step) completeReassignments(tps []TopicPartition) error {
	c := s.m.Ctx
	var ready []TopicPartition
	for _, tp := range tps {
		a, ok := c.Assignment(tp)
		if !ok || !a.Reassigning() {
			continue
		}
		isr := c.States[tp].ISR
		if len(filter(a.Target(), func(r int32) bool { return !contains(isr, r) })) == 0 {
			ready = append(ready, tp)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	removed := map[TopicPartition][]int32{}
	var move, bump []TopicPartition
	for _, tp := range ready {
		a, _ := c.Assignment(tp)
		removed[tp] = a.Removing
		for _, r := range a.Adding {
			pr := PartitionReplica{tp, r}
			if c.IsLive(r) && ValidReplicaTransition(c.Replicas[pr], ReplicaOnline) {
				c.Replicas[pr] = ReplicaOnline
			}
		}
		c.Topics[tp.Topic].Partitions[tp.Partition] = Assignment{Replicas: a.Target()}
		if leader := c.States[tp].Leader; !contains(a.Target(), leader) || !c.IsLive(leader) {
			move = append(move, tp)
		} else {
			bump = append(bump, tp)
		}
	}
	if _, err := s.elect(move, ElectReassign, nil); err != nil {
		return err
	}
	done, err := s.update(bump, func(_ TopicPartition, cur zkdata.PartitionState) (zkdata.PartitionState, bool) {
		next := cur.Clone()
		next.LeaderEpoch++
		return next, true
	})
	if err != nil {
		return err
	}
	for _, tp := range done {
		a, _ := c.Assignment(tp)
		s.batch.LeaderAndISR(c, a.Replicas, tp, false)
	}
	// The removed replicas leave the ISR, stop and delete their logs.
	shrink := func(tp TopicPartition, cur zkdata.PartitionState) (zkdata.PartitionState, bool) {
		isr := filter(cur.ISR, func(r int32) bool { return !contains(removed[tp], r) })
		if len(isr) == len(cur.ISR) {
			return cur, false
		}
		next := cur.Clone()
		next.ISR = isr
		next.LeaderEpoch++
		return next, true
	}
	shrunk, err := s.update(ready, shrink)
	if err != nil {
		return err
	}
	for _, tp := range shrunk {
		a, _ := c.Assignment(tp)
		s.batch.LeaderAndISR(c, a.Replicas, tp, false)
	}
	for _, tp := range ready {
		for _, r := range removed[tp] {
			s.batch.StopReplica(c, r, tp, true)
			delete(c.Replicas, PartitionReplica{tp, r})
		}
	}
	if err := s.writeAssignments(ready); err != nil {
		return err
	}
	s.batch.UpdateMetadata(c, c.LiveIDs(), ready...)
	return nil
}

// writeAssignments rewrites the topic znodes of tps from the context.
func (s *step) writeAssignments(tps []TopicPartition) error {
	c := s.m.Ctx
	topics := map[string]bool{}
	for _, tp := range tps {
		topics[tp.Topic] = true
	}
	var names []string
	for n := range topics {
		names = append(names, n)
	}
	sortStrings(names)
	for _, n := range names {
		t := c.Topics[n]
		a := zkdata.TopicAssignment{TopicID: t.ID, Partitions: map[int32][]int32{},
			AddingReplicas: map[int32][]int32{}, RemovingReplicas: map[int32][]int32{}}
		for p, pa := range t.Partitions {
			a.Partitions[p] = pa.Replicas
			if len(pa.Adding) > 0 {
				a.AddingReplicas[p] = pa.Adding
			}
			if len(pa.Removing) > 0 {
				a.RemovingReplicas[p] = pa.Removing
			}
		}
		if err := s.m.W.WriteTopicAssignment(c.EpochZkVersion, n, a); err != nil {
			return fmt.Errorf("writing assignment of %s: %w", n, err)
		}
	}
	return nil
}

// Reassignments lists the partitions being reassigned
// (ListPartitionReassignments).
func (c *Context) Reassignments() map[TopicPartition]Assignment {
	out := map[TopicPartition]Assignment{}
	for _, tp := range c.AllPartitions() {
		if a, _ := c.Assignment(tp); a.Reassigning() {
			out[tp] = a
		}
	}
	return out
}
