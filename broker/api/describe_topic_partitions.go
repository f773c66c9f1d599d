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
// Eligible leader replicas do not exist here (ZooKeeper mode has none): the
// ELR lists are empty. In cluster mode the partitions come from the metadata
// cache, as Metadata's do.

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
		names = b.topicNames() // topic_lookup.go
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
		id, parts, ok := b.describedPartitions(name)
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			// Kafka fills the topic's operations for an unknown
			// topic too (it authorized the name before looking it up).
			rt.AuthorizedOperations = topicOps
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = id
		rt.IsInternal = replica.IsInternal(name)
		rt.AuthorizedOperations = topicOps
		from := int32(0)
		if i == 0 {
			from = startPart
		}
		for _, rp := range parts {
			if rp.Partition < from {
				continue
			}
			if limit == 0 {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: rp.Partition}
				resp.Topics = append(resp.Topics, rt)
				return resp
			}
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

// describedPartitions returns a topic's id and its partitions in index
// order, as DescribeTopicPartitions answers them: in cluster mode from the
// metadata cache (leader, epoch, replicas, ISR and offline replicas, as
// Metadata), on a single node this broker alone.
func (b *API) describedPartitions(name string) ([16]byte, []kmsg.DescribeTopicPartitionsResponseTopicPartition, bool) {
	newPartition := func(p, leader, epoch int32, replicas, isr, offline []int32) kmsg.DescribeTopicPartitionsResponseTopicPartition {
		rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		rp.Partition, rp.LeaderID, rp.LeaderEpoch = p, leader, epoch
		rp.Replicas, rp.ISR, rp.OfflineReplicas = replicas, isr, offline
		rp.EligibleLeaderReplicas, rp.LastKnownELR = []int32{}, []int32{}
		return rp
	}
	if c := b.cluster; c != nil && c.Cache != nil {
		t := c.Cache.Snapshot().Topics[name]
		if t == nil {
			return [16]byte{}, nil, false
		}
		out := make([]kmsg.DescribeTopicPartitionsResponseTopicPartition, 0, len(t.Partitions))
		for p, st := range t.Partitions {
			out = append(out, newPartition(p, st.Leader, st.LeaderEpoch, st.Replicas, st.ISR, st.OfflineReplicas))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
		return t.ID, out, true
	}
	t := b.rm.TopicByName(name)
	if t == nil {
		return [16]byte{}, nil, false
	}
	self := []int32{b.cfg.NodeID}
	out := make([]kmsg.DescribeTopicPartitionsResponseTopicPartition, len(t.Partitions))
	for i, p := range t.Partitions {
		out[i] = newPartition(int32(i), b.cfg.NodeID, p.LeaderEpoch(), self, self, []int32{})
	}
	return t.Meta.ID, out, true
}
