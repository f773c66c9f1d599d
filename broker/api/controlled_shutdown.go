package api

// ControlledShutdown v0–v3 (broker → controller, cluster mode only). v1
// answers the remaining partitions with names (v0 is answered the same
// way by kmsg), v2 added the broker epoch, v3 flexible. Only the active
// controller serves it (NOT_CONTROLLER elsewhere; the shutting-down broker
// looks the controller up again and retries). The answer lists the
// partitions the broker still leads: it retries until there are none.

import (
	"context"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleControlledShutdown(ctx *network.RequestContext, req *kmsg.ControlledShutdownRequest) kmsg.Response {
	c := b.cluster
	if c == nil {
		return notInterBroker(ctx)
	}
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	if !c.Controller.Active() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	epoch := int64(-1)
	if req.Version >= 2 {
		epoch = req.BrokerEpoch
	}
	cctx, cancel := context.WithTimeout(context.Background(), controllerCallTimeout)
	defer cancel()
	remaining, err := c.Controller.ControlledShutdown(cctx, req.BrokerID, epoch)
	if err != nil {
		b.log.Warn("controlled shutdown refused", "broker", req.BrokerID, "err", err)
		resp.ErrorCode = kerrOf(err).Code
		return resp
	}
	for _, tp := range remaining {
		p := kmsg.NewControlledShutdownResponsePartitionsRemaining()
		p.Topic, p.Partition = tp.Topic, tp.Partition
		resp.PartitionsRemaining = append(resp.PartitionsRemaining, p)
	}
	b.log.Info("controlled shutdown", "broker", req.BrokerID, "remaining", len(remaining))
	return resp
}
