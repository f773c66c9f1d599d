package replica

// Delayed produce, as Kafka's DelayedProduce: an acks=all produce to a
// replicated leader answers when the high watermark covers its batch. The
// wait is a waiter on the partition, completed by the HW move that
// satisfies it (setHWLocked, called by the follower fetch or ISR change
// that moved the HW), by a loss of leadership (NOT_LEADER_OR_FOLLOWER), by
// its deadline (REQUEST_TIMED_OUT) or by shutdown; there is no polling.
// Internal writes of the coordinators (AppendInternal, AppendMarker) wait
// the same way and report through their callback.

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// hwWaiter is one write waiting for the HW to reach end.
type hwWaiter struct {
	end int64
	// done receives the outcome once; buffered so completion never blocks.
	done chan error
}

// completeWaitersLocked answers the waiters the HW now covers, as
// isr.Leader.Acked decides (NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
// shrank below min.insync.replicas meanwhile). p.mu must be held.
func (p *Partition) completeWaitersLocked() {
	ws := p.mu.repl.waiters
	if len(ws) == 0 {
		return
	}
	l := p.mu.repl.leader
	kept := ws[:0]
	for _, w := range ws {
		switch {
		case l == nil:
			w.done <- nil // single node: the append is the replication
		default:
			if ok, err := l.Acked(w.end); ok {
				w.done <- err
			} else {
				kept = append(kept, w)
			}
		}
	}
	clear(ws[len(kept):])
	p.mu.repl.waiters = kept
}

// failWaitersLocked answers every waiter with err. p.mu must be held.
func (p *Partition) failWaitersLocked(err error) {
	for _, w := range p.mu.repl.waiters {
		w.done <- err
	}
	p.mu.repl.waiters = nil
}

// dropWaiter forgets w after its deadline.
func (p *Partition) dropWaiter(w *hwWaiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.repl.waiters = slices.DeleteFunc(p.mu.repl.waiters, func(x *hwWaiter) bool { return x == w })
}

// addWaiterLocked parks a wait for the HW to reach end, answered at once
// when it already has. p.mu must be held.
func (p *Partition) addWaiterLocked(end int64) *hwWaiter {
	w := &hwWaiter{end: end, done: make(chan error, 1)}
	p.mu.repl.waiters = append(p.mu.repl.waiters, w)
	p.completeWaitersLocked()
	return w
}

// CheckProduce is checked before a produce's batch is validated: on a
// single node, acks=all with min.insync.replicas above 1 is
// NOT_ENOUGH_REPLICAS (the ISR is this broker alone); in cluster mode a
// partition this broker does not lead is NOT_LEADER_OR_FOLLOWER and
// acks=all with an ISR smaller than min.insync.replicas NOT_ENOUGH_REPLICAS.
func (m *Manager) CheckProduce(p *Partition, acks int16) *kerr.Error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch r := &p.mu.repl; {
	case r.kind == replSingle:
		if acks == -1 && p.Topic.Settings().MinInsyncReplicas > 1 {
			return kerr.NotEnoughReplicas
		}
	case r.kind != replLeader || p.mu.closed:
		return kerr.NotLeaderForPartition
	default:
		r.leader.SetMinInsyncReplicas(int(p.Topic.Settings().MinInsyncReplicas))
		if err := r.leader.CheckAppend(acks); err != nil {
			return kerr.NotEnoughReplicas
		}
	}
	return nil
}

// Produce appends one validated client batch to p and, for acks=all on a
// replicated leader, waits until the HW covers it or until deadline
// (REQUEST_TIMED_OUT), a loss of leadership (NOT_LEADER_OR_FOLLOWER) or
// shutdown. On a single node and for acks 0 and 1 it is AppendRecords.
func (m *Manager) Produce(p *Partition, batch []byte, h records.Header, acks int16, deadline time.Time) AppendResult {
	if acks != -1 || m.cluster() == nil {
		return m.AppendRecords(p, batch, h)
	}
	res, w, err := p.appendAcked(batch, h)
	if !errors.Is(err, errPartitionClosed) && !errors.Is(err, errNotLeader) {
		m.noteAppend(p, err)
	}
	if w == nil {
		return res
	}
	if err := m.awaitHW(p, w, deadline); err != nil {
		res.Err = kerrOf(err)
	}
	return res
}

// awaitHW waits for w's outcome until deadline or shutdown.
func (m *Manager) awaitHW(p *Partition, w *hwWaiter, deadline time.Time) error {
	timer := time.NewTimer(max(deadline.Sub(m.now()), 0))
	defer timer.Stop()
	select {
	case err := <-w.done:
		return err
	case <-timer.C:
	case <-m.closing:
	case <-m.repl.stop: // Stop: answer before the coordinators close
	}
	p.dropWaiter(w)
	select {
	case err := <-w.done: // completed while timing out
		return err
	default:
	}
	return fmt.Errorf("acks=all produce not replicated by its deadline: %w", kerr.RequestTimedOut)
}

// kerrOf maps a wait's error to the Kafka error answered.
func kerrOf(err error) *kerr.Error {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke
	case errors.Is(err, errPartitionClosed):
		return kerr.NotLeaderForPartition
	}
	return kerr.UnknownServerError
}

// appendAcked is append for acks=all on a replicated leader: the ISR is
// checked first (NOT_ENOUGH_REPLICAS, nothing written), then the batch is
// appended and a waiter parked for its end. A duplicate of a recent batch
// waits for the original's end.
func (p *Partition) appendAcked(batch []byte, h records.Header) (AppendResult, *hwWaiter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return AppendResult{Err: kerr.NotLeaderForPartition}, nil, errPartitionClosed
	}
	l := p.mu.repl.leader
	if l == nil {
		return AppendResult{Err: kerr.NotLeaderForPartition}, nil, errNotLeader
	}
	l.SetMinInsyncReplicas(int(p.Topic.Settings().MinInsyncReplicas))
	if err := l.CheckAppend(-1); err != nil {
		return AppendResult{Err: kerr.NotEnoughReplicas}, nil, nil
	}
	if h.ProducerID >= 0 {
		p.expireProducersLocked()
		if dup, ok, kerrv := p.mu.producers.check(h); kerrv != nil {
			return AppendResult{Err: kerrv}, nil, nil
		} else if ok {
			return AppendResult{BaseOffset: dup}, p.addWaiterLocked(dup + int64(h.LastOffsetDelta) + 1), nil
		}
	}
	info, err := p.Log.AppendParsed(batch, h, p.epoch.Load())
	if err != nil {
		return AppendResult{Err: kerr.KafkaStorageError}, nil, err
	}
	if h.ProducerID >= 0 {
		p.mu.producers.update(h, info.FirstOffset)
	}
	p.advanceLocked(h, info, 0)
	return AppendResult{BaseOffset: info.FirstOffset}, p.addWaiterLocked(info.LastOffset + 1), nil
}

// internalWriteTimeout bounds how long a coordinator's internal write waits
// for replication before it fails (Kafka's offsets.commit.timeout.ms).
const internalWriteTimeout = 5 * time.Second

// awaitInternal reports an internal write's outcome to done: at once on a
// single node, when the HW covers it in cluster mode. The wait runs in a
// goroutine that ends by the deadline, at shutdown or at Stop, which waits
// for it (so no callback runs after Stop returns).
func (m *Manager) awaitInternal(p *Partition, end int64, err error, done func(error)) {
	if err != nil || m.cluster() == nil {
		done(err)
		return
	}
	p.mu.Lock()
	if p.mu.repl.leader == nil {
		p.mu.Unlock()
		done(errNotLeader)
		return
	}
	w := p.addWaiterLocked(end)
	p.mu.Unlock()
	select {
	case err := <-w.done:
		done(err)
		return
	default:
	}
	deadline := m.now().Add(internalWriteTimeout)
	m.repl.mu.Lock()
	if m.repl.mu.stopped {
		m.repl.mu.Unlock()
		p.dropWaiter(w)
		done(fmt.Errorf("replica manager stopped before the write was replicated: %w", kerr.RequestTimedOut))
		return
	}
	m.repl.internal.Add(1)
	m.repl.mu.Unlock()
	go func() {
		defer m.repl.internal.Done()
		done(m.awaitHW(p, w, deadline))
	}()
}
