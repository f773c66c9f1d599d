package api

// ListOffsets v1–v11. v1 single offset plus timestamp; v2 isolation level
// (read_committed latest = the last stable offset); v4 CurrentLeaderEpoch and LeaderEpoch; v6 flexible;
// v7 MAX_TIMESTAMP (-3); v8 EARLIEST_LOCAL (-4), the log start offset here
// since there is no tiered storage; v9 LATEST_TIERED (-5, KIP-1005) and v11
// EARLIEST_PENDING_UPLOAD (-6, KIP-1023), which without tiered storage find
// no offset (-1), as Kafka answers with remote storage off; v10
// TimeoutMillis, which a single node never waits long enough to need.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// debuggingConsumerID is the ListOffsets replica id that may read any
// replica, not only the leader (Kafka's DebuggingConsumerId).
const debuggingConsumerID = -2

// Special timestamps of ListOffsets.
const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
	listLatestTiered  = -5
	listPendingUpload = -6
)

func (b *API) handleListOffsets(_ *network.RequestContext, req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp = -1
			sp.Offset = -1
			sp.LeaderEpoch = -1
			if kerrv := b.listOffset(req.Version, req.IsolationLevel, req.ReplicaID, rt.Topic, rp, &sp); kerrv != nil {
				sp.ErrorCode = kerrv.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// listOffset answers one partition. Only its leader answers (Kafka's
// fetchOnlyFromLeader) unless the request comes from the debugging
// consumer id -2: a replica without a role yet, just restarted, knows only
// its checkpointed HW, and a client told that as the end offset would stop
// reading short of acknowledged records.
func (b *API) listOffset(version int16, isolation int8, replicaID int32, topicName string, rp kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) *kerr.Error {
	p := b.rm.PartitionOf(topicName, rp.Partition)
	if p == nil {
		return b.notHostedErr(topicName, rp.Partition) // topic_lookup.go
	}
	if !p.Hosted() {
		return kerr.NotLeaderForPartition // a debugging consumer asked a broker with no replica
	}
	if replicaID != debuggingConsumerID && !p.IsLeader() {
		return kerr.NotLeaderForPartition
	}
	if version >= 4 && rp.CurrentLeaderEpoch >= 0 {
		switch {
		case rp.CurrentLeaderEpoch < p.LeaderEpoch():
			return kerr.FencedLeaderEpoch
		case rp.CurrentLeaderEpoch > p.LeaderEpoch():
			return kerr.UnknownLeaderEpoch
		}
	}
	switch ts := rp.Timestamp; {
	case ts == listLatest && isolation == 1:
		sp.Offset = p.LastStableOffset()
		sp.LeaderEpoch = p.LeaderEpoch()
	case ts == listLatest:
		sp.Offset = p.HighWatermark()
		sp.LeaderEpoch = p.LeaderEpoch()
	case ts == listEarliest || (ts == listEarliestLocal && version >= 8):
		sp.Offset = p.Log.LogStartOffset()
		sp.LeaderEpoch = p.LeaderEpoch()
	case ts == listMaxTimestamp && version >= 7:
		off, mts := p.Log.MaxTimestamp()
		if off >= 0 {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, mts, p.LeaderEpoch()
		}
	case ts == listLatestTiered || ts == listPendingUpload:
		// Nothing is tiered: no offset, no epoch.
	case ts >= 0:
		if off, fts, ok := p.Log.OffsetForTimestamp(ts); ok && off < p.HighWatermark() {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, fts, p.LeaderEpoch()
		}
	default:
		return kerr.InvalidRequest
	}
	if version == 0 {
		sp.OldStyleOffsets = []int64{sp.Offset}
	}
	return nil
}
