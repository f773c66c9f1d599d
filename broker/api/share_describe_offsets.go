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
	g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	g.GroupID = rg.GroupID
	topics := rg.Topics
	if topics == nil {
		byName := map[string][]int32{}
		for _, o := range c.Offsets(rg.GroupID) {
			if t := b.rm.TopicByID(o.TopicID); t != nil {
				byName[t.Meta.Name] = append(byName[t.Meta.Name], o.Partition)
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
		t := b.rm.TopicByName(rt.Topic)
		if t != nil {
			st.TopicID = t.Meta.ID
		}
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			sp.Partition = part
			sp.StartOffset, sp.Lag, sp.LeaderEpoch = -1, -1, -1
			if t == nil || part < 0 || int(part) >= len(t.Partitions) {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p := t.Partitions[part]
			sp.LeaderEpoch = p.LeaderEpoch()
			if o, ok := c.Offset(rg.GroupID, share.TopicPartition{TopicID: t.Meta.ID, Partition: part}); ok {
				sp.StartOffset = o.StartOffset
				sp.Lag = max(0, p.HighWatermark()-o.StartOffset-o.Finished)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		g.Topics = append(g.Topics, st)
	}
	return g
}
