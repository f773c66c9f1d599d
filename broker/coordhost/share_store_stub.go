package coordhost

import (
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TEMPORARY until the share-store branch merges.
func (h *Host) ShareStateRead(group string, tp share.TopicPartition, leaderEpoch int32) (share.Snapshot, bool, int16) {
	return share.Snapshot{}, false, kerr.NotCoordinator.Code
}
func (h *Host) ShareStateWrite(group string, tp share.TopicPartition, s share.Snapshot, done func(code int16)) {
	done(kerr.NotCoordinator.Code)
}
func (h *Host) ShareStateDelete(group string, tp share.TopicPartition, done func(code int16)) {
	done(kerr.NotCoordinator.Code)
}
func (h *Host) ShareStateInitialize(group string, tp share.TopicPartition, stateEpoch int32, startOffset int64, done func(code int16)) {
	done(kerr.NotCoordinator.Code)
}
func (h *Host) ShareStateSummary(group string, tp share.TopicPartition, leaderEpoch int32) (int32, int64, int64, bool, int16) {
	return 0, 0, 0, false, kerr.NotCoordinator.Code
}
