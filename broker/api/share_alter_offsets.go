package api

// AlterShareGroupOffsets v0 (KIP-932): sets the SPSO of share-partitions
// of a group with no members (NON_EMPTY_GROUP otherwise), creating the
// share group if it does not exist; in-flight state of those partitions is
// forgotten. Unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION; an
// offset below zero: INVALID_REQUEST.

import (
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleAlterShareGroupOffsets(ctx *network.RequestContext, req *kmsg.AlterShareGroupOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if req.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	if b.cluster != nil {
		return b.alterShareGroupOffsetsCluster(ctx, req) // share_offsets_cluster.go
	}
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) {
		if code := c.CanAlterOffsets(req.GroupID, false); code != 0 {
			resp.ErrorCode = code
			return
		}
		resp.Topics = b.alterShareOffsetsTopics(req, func(tp share.TopicPartition, start int64) int16 {
			c.SetStartOffset(req.GroupID, tp, start)
			return 0
		})
	})
	if err != nil {
		ctx.CloseConn = true
		return nil
	}
	return resp
}

// alterShareOffsetsTopics answers the topics of an AlterShareGroupOffsets:
// an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, a negative
// offset INVALID_REQUEST, every other partition the code set returns.
func (b *API) alterShareOffsetsTopics(req *kmsg.AlterShareGroupOffsetsRequest, set func(tp share.TopicPartition, start int64) int16) []kmsg.AlterShareGroupOffsetsResponseTopic {
	var out []kmsg.AlterShareGroupOffsetsResponseTopic
	for _, rt := range req.Topics {
		st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, ok := b.topicNamed(rt.Topic) // topic_lookup.go
		if ok {
			st.TopicID = t.ID
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case !ok || !t.has(rp.Partition):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.StartOffset < 0:
				sp.ErrorCode = kerr.InvalidRequest.Code
			default:
				sp.ErrorCode = set(share.TopicPartition{TopicID: t.ID, Partition: rp.Partition}, rp.StartOffset)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		out = append(out, st)
	}
	return out
}
