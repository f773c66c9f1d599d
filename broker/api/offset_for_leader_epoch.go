package api

// OffsetForLeaderEpoch v0–v4 (KIP-101, KIP-279, KIP-320), answered by the
// partitions (replica.Manager.OffsetForLeaderEpoch): v1 returns the epoch
// found (LeaderEpoch); v2 CurrentLeaderEpoch (FENCED_LEADER_EPOCH below
// ours, UNKNOWN_LEADER_EPOCH above); v3 ReplicaID (followers send their
// broker id; consumers -1); v4 flexible.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleOffsetForLeaderEpoch(_ *network.RequestContext, req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	return b.rm.OffsetForLeaderEpoch(req)
}
