package api

// ElectLeaders v0–v2 (KIP-183, KIP-460): triggers leader elections. v1 adds
// ElectionType (0 preferred, 1 unclean) and a top-level ErrorCode; v2 is
// flexible.
//
// On a single node this broker already leads every partition and is its
// preferred replica, so every named partition answers ELECTION_NOT_NEEDED
// (UNKNOWN_TOPIC_OR_PARTITION if it does not exist). Null Topics means every
// partition, and then, as Kafka, partitions needing no election are left out
// of the answer, which is therefore empty. An unknown ElectionType is
// INVALID_REQUEST.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleElectLeaders(_ *network.RequestContext, req *kmsg.ElectLeadersRequest) kmsg.Response {
	if b.cluster != nil {
		return b.handleElectLeadersCluster(req) // admin_cluster.go
	}
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	for _, rt := range req.Topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		for _, pi := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = pi
			kerrv := kerr.ElectionNotNeeded
			if b.rm.PartitionOf(rt.Topic, pi) == nil {
				kerrv = kerr.UnknownTopicOrPartition
			}
			sp.ErrorCode = kerrv.Code
			msg := kerrv.Message
			sp.ErrorMessage = &msg
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
