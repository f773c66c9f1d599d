package api

// OffsetForLeaderEpoch v0–v4 (KIP-101, KIP-279, KIP-320): for each partition
// and leader epoch, the largest epoch <= the requested one this log knows
// and the offset where it ended (the log end offset for the latest epoch),
// from the leader-epoch cache (storage.Log.EndOffsetForEpoch). v1 returns
// the epoch found (LeaderEpoch); v2 CurrentLeaderEpoch (FENCED_LEADER_EPOCH
// below ours, UNKNOWN_LEADER_EPOCH above); v3 ReplicaID (consumers send -1;
// on a single node every caller is answered alike); v4 flexible.
//
// An epoch this log has no entry for answers UNDEFINED_EPOCH (-1) and
// offset -1 with no error, as Kafka. The current leader epoch of an empty
// log (no batch appended in it yet) answers the log end offset.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleOffsetForLeaderEpoch(_ *network.RequestContext, req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p := b.rm.PartitionOf(rt.Topic, rp.Partition)
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case req.Version >= 2 && rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch < p.LeaderEpoch:
				sp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case req.Version >= 2 && rp.CurrentLeaderEpoch > p.LeaderEpoch:
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case rp.LeaderEpoch == p.LeaderEpoch && p.Log.LatestEpoch() < p.LeaderEpoch:
				// Our epoch began at the log end: no batch carries it yet.
				sp.LeaderEpoch, sp.EndOffset = p.LeaderEpoch, p.Log.LogEndOffset()
			default:
				epoch, end := p.Log.EndOffsetForEpoch(rp.LeaderEpoch)
				if epoch == storage.UndefinedEpoch {
					end = -1
				}
				sp.LeaderEpoch, sp.EndOffset = epoch, end
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
