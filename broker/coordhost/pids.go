package coordhost

import (
	"sync"
)

// producerIDBlock is how many ids are reserved in the metadata store at once.
const producerIDBlock = 1000

// producerIDs hands out producer ids from blocks reserved in the metadata
// store, so an id is never reused, across restarts too.
type producerIDs struct {
	b    *Host
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
