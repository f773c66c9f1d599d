package api

// OffsetCommit v0–v10 goes to the group coordinator (coordinator/group holds
// the version rules). The broker first answers UNKNOWN_TOPIC_OR_PARTITION for
// partitions that do not exist in the cluster (topic_lookup.go: the
// coordinator need host no replica of them), as Kafka does, and hands the
// rest on. v10 (KIP-848) names topics by id: the broker resolves them to
// names, answers UNKNOWN_TOPIC_ID for an id the cluster does not know, hands
// the coordinator the request as v9 (the same request with names) and
// answers by id.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleOffsetCommit(ctx *network.RequestContext, req *kmsg.OffsetCommitRequest) kmsg.Response {
	known := *req
	known.Topics = nil
	byID := req.Version >= 10
	ids := map[string][16]byte{}
	if byID {
		known.Version = 9
	}
	var unknown []kmsg.OffsetCommitResponseTopic
	for _, rt := range req.Topics {
		kt := rt
		kt.Partitions = nil
		code := kerr.UnknownTopicOrPartition.Code
		if byID {
			kt.Topic = ""
			code = kerr.UnknownTopicID.Code
			if t, ok := b.topicWithID(rt.TopicID); ok {
				kt.Topic = t.Name
				ids[kt.Topic] = rt.TopicID
			}
		}
		var ut kmsg.OffsetCommitResponseTopic
		ut.Topic, ut.TopicID = kt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			if kt.Topic == "" && byID {
				ut.Partitions = append(ut.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: rp.Partition, ErrorCode: code})
				continue
			}
			if !b.partitionExists(kt.Topic, rp.Partition) {
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
		if byID {
			r.Version = req.Version
			for i := range r.Topics {
				if id, ok := ids[r.Topics[i].Topic]; ok {
					r.Topics[i].TopicID = id
				}
			}
		}
	}
	return resp
}
