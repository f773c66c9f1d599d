package api

// InitProducerId v0–v5. v2 flexible; v3 passes an existing producer id and
// epoch (KIP-360); v4–v5 change nothing the broker answers differently.
// Idempotent producers (no transactional id) always get a fresh producer id
// with epoch 0, as Kafka does, without touching __transaction_state;
// transactional ids go to the transaction coordinator (coordhost/txns.go).

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleInitProducerID(ctx *network.RequestContext, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID = -1
	resp.ProducerEpoch = -1
	if req.TransactionalID != nil {
		return b.handleTxnRequest(ctx, req)
	}
	id, err := b.co.NextProducerID()
	if err != nil {
		b.log.Error("allocating producer id", clientAttrs(ctx, "err", err)...)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	return resp
}
