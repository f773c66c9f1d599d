package coordhost

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// producerIDBlock is how many ids are reserved in the metadata store at once.
const producerIDBlock = 1000

// producerIDRequestTimeout bounds a wait for a block from the controller
// (ProducerIDSource). A caller waits only when no id is left at all (the
// first one, or a prefetch that failed); then the block is claimed in the
// metadata store instead.
const producerIDRequestTimeout = 3 * time.Second

// ProducerIDSource is a cluster whose controller hands out producer id
// blocks (coordCluster in ZooKeeper mode: AllocateProducerIds, KIP-730).
// A host whose cluster is one takes its blocks from it; otherwise (a
// single node) from the metadata store.
type ProducerIDSource interface {
	// AllocateProducerIDs returns a block of n ids from start, reserved
	// for this broker; ctx bounds the wait.
	AllocateProducerIDs(ctx context.Context) (start, n int64, err error)
}

// idBlock is a reserved range of producer ids, [start, end).
type idBlock struct{ start, end int64 }

// producerIDs hands out producer ids from blocks reserved in the metadata
// store, or by the controller (the store when it does not answer), so an
// id is never reused, across restarts too. Invariants: next <= end, and the ids in [next, end) are this
// broker's and unused; so is prefetched, a later block. From the
// controller, the next block is fetched in the background once 90% of the
// current one is used (as Kafka's RPCProducerIdManager does), so callers,
// which may hold a coordinator's lock, seldom wait for the network; that
// fetch is owned by p: close cancels it and waits for it.
type producerIDs struct {
	b    *Host
	mu   sync.Mutex
	next int64
	end  int64 // exclusive; next == end means a new block is needed
	size int64 // of the current block

	prefetched *idBlock
	fetching   bool
	closed     bool
	cancel     context.CancelFunc // of the running prefetch
	wg         sync.WaitGroup
}

func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == p.end {
		if err := p.refill(); err != nil {
			return 0, err
		}
	}
	id := p.next
	p.next++
	p.maybePrefetch()
	return id, nil
}

// refill makes the next block current: the prefetched one, else one
// fetched now. p.mu is held.
func (p *producerIDs) refill() error {
	if b := p.prefetched; b != nil {
		p.prefetched = nil
		p.next, p.end, p.size = b.start, b.end, b.end-b.start
		return nil
	}
	if src, ok := p.b.cluster.(ProducerIDSource); ok {
		ctx, cancel := context.WithTimeout(context.Background(), producerIDRequestTimeout)
		first, n, err := src.AllocateProducerIDs(ctx)
		cancel()
		if err == nil {
			p.next, p.end, p.size = first, first+n, n
			return nil
		}
		// A controller that does not answer (none, unreachable, or a
		// kbroker older than AllocateProducerIds during a rolling
		// upgrade): claim the block in the metadata store, where the
		// controller claims them too, with the same version check, so
		// ids stay unique and InitProducerId keeps working. Kafka would
		// keep retrying instead.
		p.b.log.Warn("no producer id block from the controller; claiming one in the metadata store", "err", err)
	}
	first, err := p.b.store.NextProducerIDBlock(producerIDBlock)
	if err != nil {
		return fmt.Errorf("claiming a producer id block: %w", err)
	}
	p.next, p.end, p.size = first, first+producerIDBlock, producerIDBlock
	return nil
}

// maybePrefetch starts fetching the next block from the controller when
// 90% of the current one is used and none is fetched or on the way.
// p.mu is held.
func (p *producerIDs) maybePrefetch() {
	src, ok := p.b.cluster.(ProducerIDSource)
	if !ok || p.closed || p.fetching || p.prefetched != nil || (p.end-p.next)*10 > p.size {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), producerIDRequestTimeout)
	p.fetching, p.cancel = true, cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		first, n, err := src.AllocateProducerIDs(ctx)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.fetching, p.cancel = false, nil
		if err != nil {
			// The next allocate past this block fetches again, or the
			// next id handed out starts another prefetch.
			p.b.log.Warn("prefetching a producer id block from the controller", "err", err)
			return
		}
		p.prefetched = &idBlock{first, first + n}
	}()
}

// close cancels a prefetch on the way and waits for it.
func (p *producerIDs) close() {
	p.mu.Lock()
	p.closed = true
	if p.cancel != nil {
		p.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
