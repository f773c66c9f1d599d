package api

// DescribeTopicPartitions v0 (KIP-966): topic and partition details, paged.
// Topics are answered in name order (every topic, internal ones included,
// when the request names none), each with its partitions in index order,
// starting at Cursor
// (topic, partition) and stopping after ResponsePartitionLimit partitions
// (at most 2000, Kafka's max.request.partition.size.limit); NextCursor
// names the first partition left out, null when none is. A named topic that
// does not exist is answered with UNKNOWN_TOPIC_OR_PARTITION; a cursor
// naming a topic that is not requested is INVALID_REQUEST for every topic.
// Eligible leader replicas do not exist on a single node: the ELR lists are
// empty.

import (
	"sort"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxRequestPartitionSizeLimit is Kafka's max.request.partition.size.limit default.
const maxRequestPartitionSizeLimit = 2000

func (b *API) handleDescribeTopicPartitions(_ *network.RequestContext, req *kmsg.DescribeTopicPartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	var names []string
	if len(req.Topics) == 0 {
		names = b.rm.TopicNames()
	} else {
		seen := map[string]bool{}
		for _, rt := range req.Topics {
			if !seen[rt.Topic] {
				seen[rt.Topic] = true
				names = append(names, rt.Topic)
			}
		}
	}
	sort.Strings(names)
	startPart := int32(0)
	if c := req.Cursor; c != nil {
		i := sort.SearchStrings(names, c.Topic)
		if len(req.Topics) > 0 && (i == len(names) || names[i] != c.Topic) {
			for _, n := range names {
				rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				rt.Topic = &n
				rt.ErrorCode = kerr.InvalidRequest.Code
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
		names = names[i:]
		if len(names) > 0 && names[0] == c.Topic {
			startPart = max(c.Partition, 0)
		}
	}
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > maxRequestPartitionSizeLimit {
		limit = maxRequestPartitionSizeLimit
	}
	for i, name := range names {
		name := name
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = &name
		t := b.rm.TopicByName(name)
		if t == nil {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			// Kafka fills the topic's operations for an unknown
			// topic too (it authorized the name before looking it up).
			rt.AuthorizedOperations = topicOps
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = t.Meta.ID
		rt.IsInternal = replica.IsInternal(name)
		rt.AuthorizedOperations = topicOps
		from := int32(0)
		if i == 0 {
			from = startPart
		}
		for pi := from; pi < int32(len(t.Partitions)); pi++ {
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: pi}
				resp.Topics = append(resp.Topics, rt)
				return resp
			}
			p := t.Partitions[pi]
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition = pi
			rp.LeaderID = b.cfg.NodeID
			rp.LeaderEpoch = p.LeaderEpoch()
			rp.Replicas = []int32{b.cfg.NodeID}
			rp.ISR = []int32{b.cfg.NodeID}
			rp.EligibleLeaderReplicas = []int32{}
			rp.LastKnownELR = []int32{}
			rp.OfflineReplicas = []int32{}
			rt.Partitions = append(rt.Partitions, rp)
			limit--
		}
		resp.Topics = append(resp.Topics, rt)
		if limit == 0 && i+1 < len(names) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: names[i+1], Partition: 0}
			return resp
		}
	}
	return resp
}
