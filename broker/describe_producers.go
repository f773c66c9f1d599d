package broker

// DescribeProducers v0: the idempotent and transactional producers a
// partition knows, with their epoch, last sequence and the first offset of
// their open transaction (-1 when none).

import (
	"sort"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDescribeProducers(_ *network.RequestContext, req *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, pi := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = pi
			p := b.rm.partitionOf(rt.Topic, pi)
			if p == nil {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				sp.ActiveProducers = p.activeProducers()
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// activeProducers lists the partition's producer state, by producer id.
func (p *partition) activeProducers() []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
	for pid, st := range p.mu.producers {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = pid
		ap.ProducerEpoch = int32(st.epoch)
		ap.LastSequence = -1
		if n := len(st.batches); n > 0 {
			ap.LastSequence = st.batches[n-1].lastSeq
		}
		ap.LastTimestamp = st.lastAppendMs
		ap.CoordinatorEpoch = -1
		ap.CurrentTxnStartOffset = -1
		if first, ok := p.mu.txns.ongoing[pid]; ok {
			ap.CurrentTxnStartOffset = first
		}
		out = append(out, ap)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
