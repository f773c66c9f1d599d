package api

// OffsetCommit v0–v9 goes to the group coordinator (coordinator/group holds
// the version rules). The broker first answers UNKNOWN_TOPIC_OR_PARTITION for
// partitions that do not exist, as Kafka does, and hands the rest on.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleOffsetCommit(ctx *network.RequestContext, req *kmsg.OffsetCommitRequest) kmsg.Response {
	known := *req
	known.Topics = nil
	var unknown []kmsg.OffsetCommitResponseTopic
	for _, rt := range req.Topics {
		kt := rt
		kt.Partitions = nil
		var ut kmsg.OffsetCommitResponseTopic
		ut.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			if b.rm.PartitionOf(rt.Topic, rp.Partition) == nil {
				ut.Partitions = append(ut.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: rp.Partition, ErrorCode: kerr.UnknownTopicOrPartition.Code})
				continue
			}
			kt.Partitions = append(kt.Partitions, rp)
		}
		if len(kt.Partitions) > 0 {
			known.Topics = append(known.Topics, kt)
		}
		if len(ut.Partitions) > 0 {
			unknown = append(unknown, ut)
		}
	}
	resp := b.handleGroupRequest(ctx, &known)
	if r, ok := resp.(*kmsg.OffsetCommitResponse); ok {
		r.Topics = append(r.Topics, unknown...)
	}
	return resp
}
