package api

// DeleteShareGroupOffsets v0 (KIP-932): drops a share group's state of
// every partition of the named topics, so delivery starts again from
// share.auto.offset.reset. The group must exist (GROUP_ID_NOT_FOUND) and
// have no members (NON_EMPTY_GROUP); unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION.

import (
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDeleteShareGroupOffsets(ctx *network.RequestContext, req *kmsg.DeleteShareGroupOffsetsRequest) kmsg.Response {
	if b.cluster != nil {
		return b.deleteShareGroupOffsetsCluster(ctx, req) // share_offsets_cluster.go
	}
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) {
		if code := c.CanAlterOffsets(req.GroupID, true); code != 0 {
			resp.ErrorCode = code
			return
		}
		for _, rt := range req.Topics {
			st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			st.Topic = rt.Topic
			if t, ok := b.topicNamed(rt.Topic); !ok {
				st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				st.TopicID = t.ID
				c.DeleteTopicOffsets(req.GroupID, t.ID)
			}
			resp.Topics = append(resp.Topics, st)
		}
	})
	if err != nil {
		ctx.CloseConn = true
		return nil
	}
	return resp
}
