package controller

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Fence is the broker side of controller fencing: the highest controller
// epoch a broker has obeyed. A LeaderAndIsr, UpdateMetadata or StopReplica
// from an older controller (one deposed while its request was in flight)
// is refused with STALE_CONTROLLER_EPOCH, and one addressed to a previous
// registration of this broker with STALE_BROKER_EPOCH, as Kafka's
// KafkaApis and ReplicaManager do. Safe for concurrent use.
type Fence struct {
	mu    sync.Mutex
	epoch int32
}

// Admit checks a controller request's epochs against the fence and this
// broker's current registration epoch (zkclient.Registration.Epoch); on
// success the fence moves up to controllerEpoch. A request broker epoch of
// -1 (sent by controllers that predate broker epochs) is not checked.
func (f *Fence) Admit(controllerEpoch int32, requestBrokerEpoch, myBrokerEpoch int64) error {
	if requestBrokerEpoch != -1 && requestBrokerEpoch < myBrokerEpoch {
		return fmt.Errorf("request for broker epoch %d, registered at %d: %w", requestBrokerEpoch, myBrokerEpoch, kerr.StaleBrokerEpoch)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if controllerEpoch < f.epoch {
		return fmt.Errorf("request from controller epoch %d, already at %d: %w", controllerEpoch, f.epoch, kerr.StaleControllerEpoch)
	}
	f.epoch = controllerEpoch
	return nil
}

// Epoch is the highest controller epoch admitted so far.
func (f *Fence) Epoch() int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch
}

// AdmitPartitionState decides whether a LeaderAndIsr partition state with
// requestLeaderEpoch applies to a partition this broker knows at
// currentLeaderEpoch (-1 when it has none): a newer or equal epoch applies
// (equal: an ISR or replica change that did not move leadership), as do
// the "no epoch" and "during delete" sentinels; an older one is
// STALE_CONTROLLER_EPOCH for that partition, as in Kafka's ReplicaManager.
// newLeaderEpoch tells the caller whether the leader epoch moved, i.e.
// whether followers must truncate and fetch anew.
func AdmitPartitionState(requestLeaderEpoch, currentLeaderEpoch int32) (newLeaderEpoch bool, err error) {
	switch {
	case requestLeaderEpoch == EpochDuringDelete, requestLeaderEpoch == -1:
		return false, nil
	case requestLeaderEpoch > currentLeaderEpoch:
		return true, nil
	case requestLeaderEpoch == currentLeaderEpoch:
		return false, nil
	}
	return false, fmt.Errorf("leader epoch %d older than the current %d: %w", requestLeaderEpoch, currentLeaderEpoch, kerr.StaleControllerEpoch)
}
