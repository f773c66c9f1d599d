package api

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler answers one decoded request of the key it is registered for.
type handler func(b *API, ctx *network.RequestContext, req kmsg.Request) kmsg.Response

// on registers f under the key of its request type T, so that the key and
// the type a handler asserts cannot disagree.
func on[T kmsg.Request](f func(b *API, ctx *network.RequestContext, req T) kmsg.Response) (int16, handler) {
	var zero T // a nil pointer: Key does not dereference it
	return zero.Key(), func(b *API, ctx *network.RequestContext, req kmsg.Request) kmsg.Response {
		return f(b, ctx, req.(T))
	}
}

// anyOf registers one handler taking kmsg.Request for several request types.
func anyOf(f func(b *API, ctx *network.RequestContext, req kmsg.Request) kmsg.Response, reqs ...kmsg.Request) map[int16]handler {
	out := map[int16]handler{}
	for _, r := range reqs {
		out[r.Key()] = f
	}
	return out
}

// handlers is the dispatch table: one handler per API key. Invariant
// (dispatch_test.go): its keys are exactly the keys ApiVersions advertises
// (protocol.SupportedKeys, and in cluster mode protocol.InterBrokerKeys),
// so no advertised request goes unanswered and no handler is unreachable.
var handlers = buildHandlers()

func buildHandlers() map[int16]handler {
	h := map[int16]handler{}
	add := func(k int16, f handler) { h[k] = f }
	add(on((*API).handleApiVersions))
	add(on((*API).handleMetadata))
	add(on((*API).handleProduce))
	add(on((*API).handleFetch))
	add(on((*API).handleListOffsets))
	add(on((*API).handleCreateTopics))
	add(on((*API).handleDeleteTopics))
	add(on((*API).handleInitProducerID))
	add(on((*API).handleDescribeConfigs))
	add(on((*API).handleDescribeCluster))
	add(on((*API).handleDeleteRecords))
	add(on((*API).handleOffsetForLeaderEpoch))
	add(on((*API).handleAlterConfigs))
	add(on((*API).handleDescribeLogDirs))
	add(on((*API).handleCreatePartitions))
	add(on((*API).handleElectLeaders))
	add(on((*API).handleListConfigResources)) // list_config_resources.go
	add(on((*API).handleIncrementalAlterConfigs))
	add(on((*API).handleDescribeTopicPartitions))
	add(on((*API).handleUpdateFeatures))            // update_features.go
	add(on((*API).handleAlterPartitionAssignments)) // partition_reassignments.go
	add(on((*API).handleListPartitionReassignments))
	add(on((*API).handleDescribeClientQuotas)) // client_quotas.go
	add(on((*API).handleAlterClientQuotas))
	add(on((*API).handleFindCoordinator))
	add(on((*API).handleOffsetCommit))
	add(on((*API).handleOffsetFetch))
	add(on((*API).handleTxnOffsetCommit))
	add(on((*API).handleWriteTxnMarkers)) // write_txn_markers.go
	add(on((*API).handleDescribeProducers))
	add(on((*API).handleListGroupsWithShare))   // coordinator_requests.go: adds share groups
	add(on((*API).handleDeleteGroupsWithShare)) // coordinator_requests.go: deletes share groups
	for k, f := range anyOf((*API).handleTxnRequest,
		(*kmsg.AddPartitionsToTxnRequest)(nil), (*kmsg.AddOffsetsToTxnRequest)(nil), (*kmsg.EndTxnRequest)(nil),
		(*kmsg.DescribeTransactionsRequest)(nil), (*kmsg.ListTransactionsRequest)(nil)) {
		add(k, f)
	}
	for k, f := range anyOf((*API).handleGroupRequest,
		(*kmsg.JoinGroupRequest)(nil), (*kmsg.SyncGroupRequest)(nil), (*kmsg.HeartbeatRequest)(nil),
		(*kmsg.LeaveGroupRequest)(nil), (*kmsg.DescribeGroupsRequest)(nil), (*kmsg.OffsetDeleteRequest)(nil),
		(*kmsg.ConsumerGroupHeartbeatRequest)(nil), (*kmsg.ConsumerGroupDescribeRequest)(nil)) {
		add(k, f)
	}
	// KIP-932 share groups (share_*.go).
	add(on((*API).handleShareGroupHeartbeat))
	add(on((*API).handleShareGroupDescribe))
	add(on((*API).handleShareFetch))
	add(on((*API).handleShareAcknowledge))
	add(on((*API).handleDescribeShareGroupOffsets))
	add(on((*API).handleAlterShareGroupOffsets))
	add(on((*API).handleDeleteShareGroupOffsets))
	// The share coordinator's inter-broker RPCs (share_state.go).
	add(on((*API).handleInitializeShareGroupState))
	add(on((*API).handleReadShareGroupState))
	add(on((*API).handleWriteShareGroupState))
	add(on((*API).handleDeleteShareGroupState))
	add(on((*API).handleReadShareGroupStateSummary))
	// SASL (sasl.go; authentication itself is network/sasl) and SCRAM credentials.
	add(on((*API).handleSASLHandshake))
	add(on((*API).handleSASLAuthenticate))
	add(on((*API).handleDescribeUserSCRAMCredentials))
	add(on((*API).handleAlterUserSCRAMCredentials))
	// ACLs (acls.go).
	add(on((*API).handleCreateACLs))
	add(on((*API).handleDescribeACLs))
	add(on((*API).handleDeleteACLs))
	// Cluster mode: controller → broker requests and ControlledShutdown
	// (protocol.InterBroker; a single node closes the connection).
	add(on((*API).handleLeaderAndISR))
	add(on((*API).handleStopReplica))
	add(on((*API).handleUpdateMetadata))
	add(on((*API).handleControlledShutdown))
	add(on((*API).handleAlterPartition))      // alter_partition.go
	add(on((*API).handleAllocateProducerIDs)) // allocate_producer_ids.go
	return h
}

// Handle answers one request; a nil response means none is sent (acks=0).
// The network layer never hands over a key outside the advertised table;
// a version outside it arrives with a nil Body only for ApiVersions.
func (b *API) Handle(ctx *network.RequestContext, req protocol.Request) kmsg.Response {
	if req.Body == nil {
		return b.apiVersionsUnsupported()
	}
	if h, ok := handlers[req.Body.Key()]; ok {
		if !b.advertised(req.Body.Key()) {
			return b.notAdvertised(ctx, req.Body.Key()) // share_cluster.go
		}
		c := b.checkRequest(ctx, req.Body) // authz_dispatch.go
		if c.resp != nil {
			return c.resp
		}
		resp := b.notCoordinator(req.Body) // cluster mode: coordinator_cluster.go
		if resp == nil {
			resp = h(b, ctx, req.Body)
		}
		c.finish(resp)
		return resp
	}
	b.log.Error("closing connection: no handler for api", clientAttrs(ctx)...)
	ctx.CloseConn = true
	return nil
}

// HandledKeys returns the API keys that have a handler.
func HandledKeys() []int16 {
	keys := make([]int16, 0, len(handlers))
	for k := range handlers {
		keys = append(keys, k)
	}
	return keys
}
