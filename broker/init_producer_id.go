package broker

// InitProducerId v0–v5. v2 flexible; v3 passes an existing producer id and
// epoch (KIP-360); v4–v5 change nothing the broker answers differently.
// Idempotent producers (no transactional id) always get a fresh producer id
// with epoch 0, as Kafka does, without touching __transaction_state;
// transactional ids go to the transaction coordinator (txns.go).

import (
	"sync"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDBlock is how many ids are reserved in the metadata store at once.
const producerIDBlock = 1000

// producerIDs hands out producer ids from blocks reserved in the metadata
// store, so an id is never reused, across restarts too.
type producerIDs struct {
	b    *Broker
	mu   sync.Mutex
	next int64
	end  int64 // exclusive; next == end means a new block is needed
}

func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == p.end {
		first, err := p.b.store.NextProducerIDBlock(producerIDBlock)
		if err != nil {
			return 0, err
		}
		p.next, p.end = first, first+producerIDBlock
	}
	id := p.next
	p.next++
	return id, nil
}

func (b *Broker) handleInitProducerID(ctx *network.RequestContext, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID = -1
	resp.ProducerEpoch = -1
	if req.TransactionalID != nil {
		return b.handleTxnRequest(ctx, req)
	}
	id, err := b.pids.allocate()
	if err != nil {
		b.log.Error("allocating producer id", "err", err)
		resp.ErrorCode = kerr.KafkaStorageError.Code
		return resp
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	return resp
}
