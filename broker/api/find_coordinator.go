package api

// FindCoordinator v0–v6. v1 key type (0 group, 1 transaction); v3 flexible;
// v4 batched keys (KIP-699); v5–v6 no change for group keys. Every group is
// coordinated by this node; __consumer_offsets is created on first use.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleFindCoordinator(ctx *network.RequestContext, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	if b.cluster != nil {
		return b.handleFindCoordinatorCluster(ctx, req) // metadata_cluster.go
	}
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	self := b.endpointsFor(ctx)[0]
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.NodeID, c.Host, c.Port = -1, "", -1
		var kerrv *kerr.Error
		switch req.CoordinatorType {
		case 0:
			if err := b.co.EnsureGroups(); err != nil {
				b.log.Error("group coordinator unavailable", clientAttrs(ctx, "key", key, "err", err)...)
				kerrv = kerr.CoordinatorNotAvailable
			}
		case 1:
			if err := b.co.EnsureTxns(); err != nil {
				b.log.Error("transaction coordinator unavailable", clientAttrs(ctx, "key", key, "err", err)...)
				kerrv = kerr.CoordinatorNotAvailable
			}
		default:
			kerrv = kerr.InvalidRequest
		}
		if kerrv != nil {
			c.ErrorCode = kerrv.Code
			msg := kerrv.Message
			c.ErrorMessage = &msg
		} else {
			c.NodeID, c.Host, c.Port = self.NodeID, self.Host, self.Port
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
	}
	return resp
}
