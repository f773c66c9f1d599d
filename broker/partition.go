package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// partition is one partition this broker leads: its log, high watermark and
// producer state. On a single node every append is immediately replicated to
// the whole ISR (itself), so the HW follows the LEO.
type partition struct {
	t     *topic
	index int32
	log   *storage.Log
	dir   *storage.Dir

	// leaderEpoch is the epoch written into every appended batch.
	leaderEpoch int32

	// hw is the high watermark. Invariant: logStart <= hw <= LEO.
	hw atomic.Int64

	mu struct {
		sync.Mutex
		closed    bool
		producers producerStates
		// arrived is closed and replaced on every append and on close, to wake parked fetches.
		arrived chan struct{}
	}
}

func newPartition(t *topic, index int32, log *storage.Log, dir *storage.Dir, logger *slog.Logger) (*partition, error) {
	p := &partition{t: t, index: index, log: log, dir: dir}
	p.mu.arrived = make(chan struct{})
	p.mu.producers = producerStates{}
	p.hw.Store(log.LogEndOffset())
	if err := p.mu.producers.rebuild(log); err != nil {
		return nil, fmt.Errorf("rebuilding producer state of %s-%d: %w", t.meta.Name, index, err)
	}
	_ = logger
	return p, nil
}

func (p *partition) highWatermark() int64 { return p.hw.Load() }

// waitArrival returns a channel closed at the next append (or close).
func (p *partition) waitArrival() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.arrived
}

// close stops appends and wakes parked fetches. The log itself is closed by its Dir.
func (p *partition) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return
	}
	p.mu.closed = true
	close(p.mu.arrived)
}

// appendResult is what a produce learns from one append.
type appendResult struct {
	baseOffset    int64
	logAppendTime int64
	err           *kerr.Error
}

// errPartitionClosed reports an append to a deleted or shut-down partition.
var errPartitionClosed = errors.New("partition closed")

// append writes one validated batch, checking idempotent producer state
// first. A duplicate of one of a producer's last five batches is not written
// again; its original base offset is returned.
func (p *partition) append(batch []byte, h records.Header) (appendResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return appendResult{err: kerr.NotLeaderForPartition}, errPartitionClosed
	}
	if h.ProducerID >= 0 {
		if dup, ok, kerrv := p.mu.producers.check(h); kerrv != nil {
			return appendResult{err: kerrv}, nil
		} else if ok {
			return appendResult{baseOffset: dup}, nil
		}
	}
	info, err := p.log.Append(batch, p.leaderEpoch)
	if err != nil {
		return appendResult{err: kerr.KafkaStorageError}, err
	}
	if h.ProducerID >= 0 {
		p.mu.producers.update(h, info.FirstOffset)
	}
	p.hw.Store(info.LastOffset + 1)
	close(p.mu.arrived)
	p.mu.arrived = make(chan struct{})
	return appendResult{baseOffset: info.FirstOffset}, nil
}
