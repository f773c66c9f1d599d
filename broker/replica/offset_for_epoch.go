package replica

import (
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch answers OffsetForLeaderEpoch (KIP-101, KIP-279,
// KIP-320): for each partition and leader epoch, the largest epoch <= the
// requested one this log knows and the offset where it ended (the log end
// offset for the latest epoch), from the leader-epoch cache. An epoch this
// log has no entry for answers UNDEFINED_EPOCH (-1) and offset -1 with no
// error, as Kafka. From v2 CurrentLeaderEpoch fences (FENCED_LEADER_EPOCH
// below ours, UNKNOWN_LEADER_EPOCH above). In cluster mode only the leader
// answers (NOT_LEADER_OR_FOLLOWER elsewhere), except to ReplicaID -2, the
// debugging id Kafka lets read any replica.
func (m *Manager) OffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			p := m.PartitionOf(rt.Topic, rp.Partition)
			var epoch int32
			if p != nil {
				epoch = p.LeaderEpoch()
			}
			switch {
			case p == nil:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case !p.IsLeader() && !(req.Version >= 3 && req.ReplicaID == -2):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			case req.Version >= 2 && rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch < epoch:
				sp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case req.Version >= 2 && rp.CurrentLeaderEpoch > epoch:
				sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			case rp.LeaderEpoch == epoch && p.Log.LatestEpoch() < epoch:
				// Our epoch began at the log end: no batch carries it yet.
				sp.LeaderEpoch, sp.EndOffset = epoch, p.Log.LogEndOffset()
			default:
				e, end := p.Log.EndOffsetForEpoch(rp.LeaderEpoch)
				if e == storage.UndefinedEpoch {
					end = -1
				}
				sp.LeaderEpoch, sp.EndOffset = e, end
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
