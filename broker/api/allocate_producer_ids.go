package api

// AllocateProducerIds v0 (KIP-730; broker → controller, cluster mode only).
// A Kafka 3.x broker at inter.broker.protocol.version 3.0-IV0 or later
// takes its producer id blocks from the controller with it rather than
// from /latest_producer_id_block itself; without an answer from a kbroker
// controller its InitProducerId calls would fail until the controller
// moved to a Kafka broker. Only the active controller serves it: elsewhere
// NOT_CONTROLLER, and Kafka's broker looks the controller up again.

import (
	"context"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleAllocateProducerIDs(ctx *network.RequestContext, req *kmsg.AllocateProducerIDsRequest) kmsg.Response {
	c := b.cluster
	if c == nil {
		return notInterBroker(ctx)
	}
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	if !c.Controller.Active() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	cctx, cancel := context.WithTimeout(context.Background(), controllerCallTimeout)
	defer cancel()
	block, err := c.Controller.AllocateProducerIDs(cctx, req.BrokerID, req.BrokerEpoch)
	if err != nil {
		b.log.Info("AllocateProducerIds refused", "broker", req.BrokerID, "broker_epoch", req.BrokerEpoch, "err", err)
		resp.ErrorCode = kerrOf(err).Code
		return resp
	}
	b.log.Info("AllocateProducerIds", "broker", req.BrokerID, "block_start", block.BlockStart, "block_end", block.BlockEnd)
	resp.ProducerIDStart, resp.ProducerIDLen = block.BlockStart, int32(block.BlockEnd-block.BlockStart+1)
	return resp
}
