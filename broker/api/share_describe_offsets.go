package api

// DescribeShareGroupOffsets v0–v1 (KIP-932; v1 adds Lag): the SPSO of each
// share-partition of each group. Null Topics means every partition the
// group has state for. A partition without state answers StartOffset -1
// (and Lag -1); an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION.
// Lag is the high watermark minus the SPSO minus the records already
// finished above the SPSO. A group that is not a share group has no state
// (every partition -1), as in Kafka.

import (
	"sort"
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDescribeShareGroupOffsets(ctx *network.RequestContext, req *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	if b.cluster != nil {
		return b.describeShareGroupOffsetsCluster(req) // share_offsets_cluster.go
	}
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) {
		for _, rg := range req.Groups {
			resp.Groups = append(resp.Groups, b.describeShareOffsets(c, rg))
		}
	})
	if err != nil {
		ctx.CloseConn = true
		return nil
	}
	return resp
}

func (b *API) describeShareOffsets(c *share.Coordinator, rg kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	var candidates []share.TopicPartition
	for _, o := range c.Offsets(rg.GroupID) {
		candidates = append(candidates, o.TopicPartition)
	}
	return b.shareOffsetsGroup(rg, candidates, func(tp share.TopicPartition) (shareOffset, bool, int16) {
		o, ok := c.Offset(rg.GroupID, tp)
		return shareOffset{o.StartOffset, o.Finished}, ok, 0
	})
}

// shareOffset is a share-partition's SPSO and the finished records above it.
type shareOffset struct{ start, finished int64 }

// shareOffsetsGroup answers one group of DescribeShareGroupOffsets. Null
// Topics asks about the candidates and lists those with state, by topic
// in the order the candidates first name them; lookup returns a
// share-partition's offsets, false when it has no state, or an error code.
func (b *API) shareOffsetsGroup(rg kmsg.DescribeShareGroupOffsetsRequestGroup, candidates []share.TopicPartition,
	lookup func(share.TopicPartition) (shareOffset, bool, int16)) kmsg.DescribeShareGroupOffsetsResponseGroup {
	g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	g.GroupID = rg.GroupID
	topics := rg.Topics
	all := topics == nil
	if all {
		byName := map[string][]int32{}
		for _, tp := range candidates {
			if t, ok := b.topicWithID(tp.TopicID); ok {
				byName[t.Name] = append(byName[t.Name], tp.Partition)
			}
		}
		for name, parts := range byName {
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
			topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: parts})
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].Topic < topics[j].Topic })
	}
	for _, rt := range topics {
		st := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		st.Topic = rt.Topic
		t, ok := b.topicNamed(rt.Topic) // topic_lookup.go
		if ok {
			st.TopicID = t.ID
		}
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			sp.Partition = part
			sp.StartOffset, sp.Lag, sp.LeaderEpoch = -1, -1, -1
			if !ok || !t.has(part) {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			// The lag needs the high watermark, which only a replica
			// here knows: -1 (unknown) for a partition hosted elsewhere.
			epoch, hw := b.partitionState(rt.Topic, part)
			o, found, code := lookup(share.TopicPartition{TopicID: t.ID, Partition: part})
			switch {
			case code != 0:
				sp.ErrorCode = code
			case found:
				sp.LeaderEpoch = epoch
				sp.StartOffset = o.start
				if hw >= 0 {
					sp.Lag = max(0, hw-o.start-o.finished)
				}
			case all:
				continue // no state: not one of the group's partitions
			default:
				sp.LeaderEpoch = epoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		if all && len(st.Partitions) == 0 {
			continue
		}
		g.Topics = append(g.Topics, st)
	}
	return g
}
