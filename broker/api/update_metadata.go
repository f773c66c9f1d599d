package api

// UpdateMetadata v0–v8 (controller → broker, cluster mode only). v1 added
// endpoints per listener, v3 listener names, v4 offline replicas, v5 topic
// states grouped by topic and the broker epoch, v6 flexible, v7 topic ids,
// v8 IsKRaftController (always false from a ZooKeeper controller). The
// request replaces the metadata cache's live brokers and updates the named
// partitions (metacache.Cache.Apply), after the controller fence; when a
// topic was created, deleted or grew, the KIP-848 coordinator is told.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleUpdateMetadata(ctx *network.RequestContext, req *kmsg.UpdateMetadataRequest) kmsg.Response {
	c := b.cluster
	if c == nil {
		return notInterBroker(ctx)
	}
	resp := req.ResponseKind().(*kmsg.UpdateMetadataResponse)
	brokerEpoch := int64(-1)
	if req.Version >= 5 {
		brokerEpoch = req.BrokerEpoch
	}
	if kerrv := c.admitController(req.ControllerEpoch, brokerEpoch); kerrv != nil {
		resp.ErrorCode = kerrv.Code
		return resp
	}
	if c.Cache.Apply(req) {
		b.co.TopicsChanged() // KIP-848 groups follow created, deleted and grown topics
	}
	return resp
}
