package protocol

import "sync"

// MemoryPool bounds the bytes of requests that were read but not yet
// answered, across all connections: Kafka's queued.max.request.bytes. A
// connection reserves a frame's declared size before it reads the body and
// releases it once the response is written; while the pool is exhausted,
// readers wait, which stops reading from their sockets (Kafka mutes them).
//
// As Kafka's SimpleMemoryPool in non-strict mode, a reservation is granted
// whenever any memory is free, so one frame larger than what is left (or
// than the whole pool) still makes progress, and use may exceed the
// capacity by at most one frame per waiting reader granted at once.
// Invariant: used > capacity only through such grants; used ≥ 0.
type MemoryPool struct {
	capacity int64 // ≤ 0: unbounded

	mu      sync.Mutex
	used    int64
	waiters []chan struct{}
}

// NewMemoryPool returns a pool of capacity bytes; capacity ≤ 0 is unbounded.
func NewMemoryPool(capacity int64) *MemoryPool {
	return &MemoryPool{capacity: capacity}
}

// Reserve takes n bytes from the pool, waiting while none are free. It
// returns false, having taken nothing, if stop is closed first.
func (p *MemoryPool) Reserve(n int64, stop <-chan struct{}) bool {
	for {
		p.mu.Lock()
		if p.capacity <= 0 || p.used < p.capacity {
			p.used += n
			p.mu.Unlock()
			return true
		}
		ch := make(chan struct{})
		p.waiters = append(p.waiters, ch)
		p.mu.Unlock()
		select {
		case <-ch:
		case <-stop:
			p.mu.Lock()
			for i, w := range p.waiters {
				if w == ch {
					p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
					break
				}
			}
			p.mu.Unlock()
			return false
		}
	}
}

// Release returns n reserved bytes and wakes the waiting readers.
func (p *MemoryPool) Release(n int64) {
	p.mu.Lock()
	p.used -= n
	if p.used < 0 {
		p.used = 0
	}
	ws := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	for _, w := range ws {
		close(w)
	}
}

// Used is the number of bytes reserved now.
func (p *MemoryPool) Used() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}
