package api

// DeleteRecords v0–v2 (KIP-107): moves each partition's log start offset
// (low watermark) up to the requested offset; segments wholly below it are
// deleted and reads below it get OFFSET_OUT_OF_RANGE. v1 changed only
// throttling behaviour; v2 is flexible.
//
// Offset -1 means the high watermark. A negative offset or one beyond the
// high watermark is OFFSET_OUT_OF_RANGE; an offset at or below the current
// log start changes nothing. A topic whose cleanup.policy lacks delete is
// POLICY_VIOLATION, as in Kafka. The new log start offset is written to
// log-start-offset-checkpoint before answering.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDeleteRecords(ctx *network.RequestContext, req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	dirty := map[*storage.Dir]bool{}
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			if kerrv := b.deleteRecords(ctx, rt.Topic, rp, &sp, dirty); kerrv != nil {
				sp.ErrorCode = kerrv.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.rm.CheckpointDirs(dirty)
	return resp
}

func (b *API) deleteRecords(ctx *network.RequestContext, topicName string, rp kmsg.DeleteRecordsRequestTopicPartition, sp *kmsg.DeleteRecordsResponseTopicPartition, dirty map[*storage.Dir]bool) *kerr.Error {
	p := b.rm.PartitionOf(topicName, rp.Partition)
	if p == nil {
		return b.notHostedErr(topicName, rp.Partition)
	}
	if !p.IsLeader() {
		return kerr.NotLeaderForPartition // as Kafka: only the leader moves the log start
	}
	if !p.Topic.Settings().CleanupDelete {
		return kerr.PolicyViolation
	}
	hw := p.HighWatermark()
	off := rp.Offset
	if off == -1 {
		off = hw
	}
	if off < 0 || off > hw {
		return kerr.OffsetOutOfRange
	}
	if off > p.Log.LogStartOffset() {
		if err := p.SetLogStartOffset(off); err != nil {
			b.log.Error("delete records failed", clientAttrs(ctx, "topic", topicName, "partition", rp.Partition, "offset", off, "err", err)...)
			return kerr.KafkaStorageError
		}
		dirty[p.Dir] = true
		b.log.Info("deleted records", "topic", topicName, "partition", rp.Partition, "log_start_offset", off)
	}
	sp.LowWatermark = p.Log.LogStartOffset()
	return nil
}
