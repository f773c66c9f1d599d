package zkdata

import (
	"encoding/json"
	"fmt"
)

// Leader recovery states (KIP-704): a leader chosen by an unclean election
// is RECOVERING until its ISR grows back.
const (
	LeaderRecovered  int8 = 0
	LeaderRecovering int8 = 1
)

// NoLeader is the leader id of a partition without one.
const NoLeader int32 = -1

// PartitionState is /brokers/topics/<t>/partitions/<p>/state (Kafka's
// LeaderIsrAndControllerEpoch).
//
// Invariant: every write of this znode is conditional on ZkVersion, the
// version read last, so a controller or leader with a stale view fails
// instead of overwriting a newer decision.
type PartitionState struct {
	Leader      int32
	LeaderEpoch int32
	ISR         []int32
	// ControllerEpoch is the epoch of the controller that wrote the state
	// (a leader's own ISR changes keep the last controller's epoch).
	ControllerEpoch     int32
	LeaderRecoveryState int8
	// ZkVersion is the znode's data version (Stat.Version), not part of the
	// JSON; Kafka calls it the partition epoch.
	ZkVersion int32
}

type partitionStateJSON struct {
	Version             int     `json:"version"`
	Leader              int32   `json:"leader"`
	LeaderEpoch         int32   `json:"leader_epoch"`
	ControllerEpoch     int32   `json:"controller_epoch"`
	ISR                 []int32 `json:"isr"`
	LeaderRecoveryState *int8   `json:"leader_recovery_state,omitempty"`
}

// Encode writes version 1; leader_recovery_state only when RECOVERING, as Kafka.
func (s PartitionState) Encode() ([]byte, error) {
	isr := s.ISR
	if isr == nil {
		isr = []int32{}
	}
	j := partitionStateJSON{
		Version: partitionStateVersion, Leader: s.Leader, LeaderEpoch: s.LeaderEpoch,
		ControllerEpoch: s.ControllerEpoch, ISR: isr,
	}
	if s.LeaderRecoveryState != LeaderRecovered {
		r := s.LeaderRecoveryState
		j.LeaderRecoveryState = &r
	}
	return Marshal(j)
}

// DecodePartitionState parses a state znode; zkVersion is its Stat.Version.
func DecodePartitionState(data []byte, zkVersion int32) (PartitionState, error) {
	var j partitionStateJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return PartitionState{}, fmt.Errorf("partition state %q: %w", data, err)
	}
	s := PartitionState{
		Leader: j.Leader, LeaderEpoch: j.LeaderEpoch, ISR: j.ISR,
		ControllerEpoch: j.ControllerEpoch, ZkVersion: zkVersion,
	}
	if j.LeaderRecoveryState != nil {
		s.LeaderRecoveryState = *j.LeaderRecoveryState
	}
	if s.LeaderRecoveryState != LeaderRecovered && s.LeaderRecoveryState != LeaderRecovering {
		return PartitionState{}, fmt.Errorf("partition state %q: unknown leader_recovery_state %d", data, s.LeaderRecoveryState)
	}
	return s, nil
}

// Clone returns a copy that shares no slice with s.
func (s PartitionState) Clone() PartitionState {
	s.ISR = append([]int32(nil), s.ISR...)
	return s
}
