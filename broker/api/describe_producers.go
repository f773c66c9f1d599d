package api

// DescribeProducers v0: the idempotent and transactional producers a
// partition knows, with their epoch, last sequence and the first offset of
// their open transaction (-1 when none). Only the leader answers.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDescribeProducers(_ *network.RequestContext, req *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, pi := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = pi
			p := b.rm.PartitionOf(rt.Topic, pi)
			switch {
			case p == nil:
				sp.ErrorCode = b.notHostedErr(rt.Topic, pi).Code
			case !p.IsLeader(): // Kafka answers only from the leader
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				sp.ActiveProducers = p.ActiveProducers()
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
