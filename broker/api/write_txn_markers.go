package api

// WriteTxnMarkers v1–v2 (v0 is gone since Kafka 4.0, KIP-896; v1 flexible;
// v2 TransactionVersion, KIP-890, which kbroker's markers do not need). A
// transaction coordinator sends it to a partition's leader; so does an
// admin client aborting a hanging transaction (`kafka-transactions.sh
// abort`, KIP-664), with the producer id and epoch DescribeProducers
// reported. Every marker is written to every named partition; an unknown
// topic or partition is UNKNOWN_TOPIC_OR_PARTITION, a stale producer epoch
// INVALID_PRODUCER_EPOCH (coordhost.Host.WriteTxnMarker). Kafka requires
// CLUSTER_ACTION on the cluster; kbroker has no ACLs yet (issue 14).

import (
	"sync"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleWriteTxnMarkers(_ *network.RequestContext, req *kmsg.WriteTxnMarkersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	// The acknowledgements may arrive after the appends return (in a
	// cluster, once replicated): the answer waits for all of them.
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, rm := range req.Markers {
		sm := kmsg.NewWriteTxnMarkersResponseMarker()
		sm.ProducerID = rm.ProducerID
		for _, rt := range rm.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			st.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(rt.Partitions))
			for i, part := range rt.Partitions {
				sp := &st.Partitions[i]
				*sp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = part
				p := b.rm.PartitionOf(rt.Topic, part)
				switch {
				case p == nil:
					sp.ErrorCode = b.notHostedErr(rt.Topic, part).Code
				default:
					wg.Add(1)
					b.co.WriteTxnMarker(p, rm.ProducerID, rm.ProducerEpoch, rm.Committed, rm.CoordinatorEpoch, func(code int16) {
						mu.Lock()
						sp.ErrorCode = code
						mu.Unlock()
						wg.Done()
					})
				}
			}
			sm.Topics = append(sm.Topics, st)
		}
		resp.Markers = append(resp.Markers, sm)
	}
	wg.Wait()
	return resp
}
