package broker

// Producer id blocks from the controller (KIP-730): in ZooKeeper mode a
// Kafka broker at inter.broker.protocol.version 3.0-IV0 or later — every
// IBP kbroker accepts — asks the active controller for its blocks with
// AllocateProducerIds instead of claiming them in
// /latest_producer_id_block itself, and so does a kbroker broker: the
// controller, Kafka's or kbroker's, claims the block for it.

import (
	"context"
	"fmt"
	"time"

	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDRetryBackoff is how soon AllocateProducerIds is sent again
// after no controller, a moved one or a refusal (Kafka's
// RPCProducerIdManager backs off likewise).
const producerIDRetryBackoff = 100 * time.Millisecond

var _ coordhost.ProducerIDSource = coordCluster{}

// AllocateProducerIDs asks the active controller, as this broker knows it,
// for a block of producer ids with this registration's epoch, and tries
// again (a controller moving, NOT_CONTROLLER, a stale epoch during a
// re-registration) until ctx ends; it then returns the last error.
func (c coordCluster) AllocateProducerIDs(ctx context.Context) (start, n int64, err error) {
	for {
		start, n, err := c.allocateProducerIDsOnce(ctx)
		if err == nil {
			return start, n, nil
		}
		t := time.NewTimer(producerIDRetryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, 0, fmt.Errorf("AllocateProducerIds: %w (last: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// allocateProducerIDsOnce sends one AllocateProducerIds to the controller
// and checks the block it answers.
func (c coordCluster) allocateProducerIDsOnce(ctx context.Context) (start, n int64, err error) {
	ctrl := c.b.ControllerID()
	reg := c.b.cluster.reg.Load()
	switch {
	case ctrl < 0:
		return 0, 0, fmt.Errorf("no controller")
	case reg == nil:
		return 0, 0, fmt.Errorf("not registered")
	}
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = c.b.cfg.NodeID, reg.Epoch()
	resp, err := c.Send(ctx, ctrl, req)
	if err != nil {
		return 0, 0, fmt.Errorf("controller %d: %w", ctrl, err)
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, 0, fmt.Errorf("controller %d: %w", ctrl, err)
	}
	if r.ProducerIDStart < 0 || r.ProducerIDLen <= 0 || r.ProducerIDStart > (1<<63-1)-int64(r.ProducerIDLen) {
		return 0, 0, fmt.Errorf("controller %d: invalid producer id block start %d length %d", ctrl, r.ProducerIDStart, r.ProducerIDLen)
	}
	return r.ProducerIDStart, int64(r.ProducerIDLen), nil
}
