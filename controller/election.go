package controller

import "github.com/kbroker/kbroker/controller/zkdata"

// Leader election, as Kafka's PartitionLeaderElectionAlgorithms: each
// strategy picks a leader from the replicas in assignment order (the first
// is the preferred leader) and says what the ISR becomes. None touches
// ZooKeeper; the caller writes the result with a version check.

// ElectionStrategy names why a leader is being chosen.
type ElectionStrategy int8

const (
	// ElectOffline replaces a leader that is gone (broker failure, new
	// partition with a dead leader): the first live ISR member, else — only
	// when unclean.leader.election.enable — the first live replica.
	ElectOffline ElectionStrategy = iota
	// ElectPreferred moves leadership back to the first replica when it is
	// live and in the ISR (ElectLeaders PREFERRED, auto.leader.rebalance.enable).
	ElectPreferred
	// ElectReassign picks the first live ISR member of the target replicas
	// of a reassignment.
	ElectReassign
	// ElectControlledShutdown picks the first live ISR member that is not
	// shutting down and removes the shutting-down brokers from the ISR.
	ElectControlledShutdown
)

func (s ElectionStrategy) String() string {
	return [...]string{"offline", "preferred", "reassign", "controlled-shutdown"}[s]
}

// ElectionInput is what a strategy looks at.
type ElectionInput struct {
	// Assignment is the partition's replicas (for ElectReassign, the target
	// replicas) in preference order.
	Assignment []int32
	Current    zkdata.PartitionState
	Live       func(id int32) bool
	// ShuttingDown is consulted by ElectControlledShutdown only.
	ShuttingDown func(id int32) bool
	// Unclean allows ElectOffline to choose a replica outside the ISR.
	Unclean bool
}

// Elect returns the partition's next state — new leader, leader epoch + 1,
// new ISR — or ok=false when the strategy finds no eligible leader (the
// partition stays as it is). The result keeps Current's ZkVersion, which the
// write is conditional on, and carries no controller epoch: the caller sets it.
func Elect(s ElectionStrategy, in ElectionInput) (next zkdata.PartitionState, ok bool) {
	inISR := func(id int32) bool { return contains(in.Current.ISR, id) }
	first := func(pred func(int32) bool) (int32, bool) {
		for _, id := range in.Assignment {
			if pred(id) {
				return id, true
			}
		}
		return zkdata.NoLeader, false
	}
	next = in.Current.Clone()
	next.LeaderEpoch++
	switch s {
	case ElectOffline:
		leader, found := first(func(id int32) bool { return in.Live(id) && inISR(id) })
		if found {
			next.Leader = leader
			next.ISR = filter(in.Current.ISR, in.Live)
			next.LeaderRecoveryState = zkdata.LeaderRecovered
			return next, true
		}
		if !in.Unclean {
			return in.Current, false
		}
		if leader, found = first(in.Live); !found {
			return in.Current, false
		}
		// Data the old ISR had may be lost: the new leader alone is in sync,
		// and it is RECOVERING until followers catch up (KIP-704).
		next.Leader, next.ISR = leader, []int32{leader}
		next.LeaderRecoveryState = zkdata.LeaderRecovering
		return next, true
	case ElectPreferred:
		if len(in.Assignment) == 0 {
			return in.Current, false
		}
		p := in.Assignment[0]
		if !in.Live(p) || !inISR(p) {
			return in.Current, false
		}
		next.Leader = p
		return next, true
	case ElectReassign:
		leader, found := first(func(id int32) bool { return in.Live(id) && inISR(id) })
		if !found {
			return in.Current, false
		}
		next.Leader = leader
		return next, true
	case ElectControlledShutdown:
		down := in.ShuttingDown
		if down == nil {
			down = func(int32) bool { return false }
		}
		leader, found := first(func(id int32) bool { return in.Live(id) && inISR(id) && !down(id) })
		if !found {
			return in.Current, false
		}
		next.Leader = leader
		next.ISR = filter(in.Current.ISR, func(id int32) bool { return !down(id) })
		return next, true
	}
	return in.Current, false
}

func contains(s []int32, id int32) bool {
	for _, v := range s {
		if v == id {
			return true
		}
	}
	return false
}

func filter(s []int32, keep func(int32) bool) []int32 {
	out := make([]int32, 0, len(s))
	for _, v := range s {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}
