package replica

// The leaders' housekeeping in cluster mode, one goroutine owned by the
// Manager (started by SetCluster, stopped by Stop): every
// replica.lag.time.max.ms / 2 it runs isr.Leader.Tick on every partition
// this broker leads (ISR shrink), it writes proposed ISR changes (shrinks
// from ticks, expansions from follower fetches) through the ISRWriter off
// the partition lock, and it checkpoints the high watermarks every
// replica.high.watermark.checkpoint.interval.ms.

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

func (m *Manager) leaderLoop(rc ReplicationConfig) {
	defer m.repl.wg.Done()
	tick := time.NewTicker(max(rc.LagTimeMax/2, time.Millisecond))
	defer tick.Stop()
	hwTick := time.NewTicker(rc.HighWatermarkCheckpointInterval)
	defer hwTick.Stop()
	retry := time.NewTimer(isrRetryBackoff)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-m.repl.stop:
			return
		case <-tick.C:
			m.TickLeaders()
		case <-m.repl.isrWake:
		case <-retry.C:
		case <-hwTick.C:
			if err := m.writeHighWatermarks(); err != nil {
				m.log.Warn("high watermark checkpoint failed", "err", err)
			}
			continue
		}
		if m.writeISRChanges() {
			retry.Reset(isrRetryBackoff)
		}
	}
}

// isrRetryBackoff is how long the leader loop waits before writing again
// an ISR change whose outcome it could not learn.
const isrRetryBackoff = 500 * time.Millisecond

// TickLeaders runs the ISR shrink check of every partition this broker
// leads now (the leader loop calls it on its timer; tests with a fake clock
// call it directly) and asks for the proposed changes to be written.
func (m *Manager) TickLeaders() {
	now := m.now()
	proposed := false
	for _, p := range m.AllPartitions() {
		p.mu.Lock()
		if l := p.mu.repl.leader; l != nil && !p.mu.closed {
			if ch := l.Tick(now); ch != nil {
				proposed = true
			}
		}
		p.mu.Unlock()
	}
	if proposed {
		m.wakeISRWriter()
	}
}

// wakeISRWriter asks the leader loop to write proposed ISR changes.
func (m *Manager) wakeISRWriter() {
	select {
	case m.repl.isrWake <- struct{}{}:
	default:
	}
}

// isrWritesInFlight bounds the ISR writes writeISRChanges runs at once.
const isrWritesInFlight = 64

// writeISRChanges writes every pending ISR proposal of the partitions this
// broker leads, up to isrWritesInFlight partitions at once (the ZooKeeper
// client pipelines them on its session, and ZooKeeper commits them
// together), then flushes the writer's notifications. It reports whether a
// write's outcome stayed unknown (to be written again).
//
// One write after another made a broker that rejoined a 30,000-partition
// cluster wait tens of seconds for its leaders' ISR expansions (issue 26).
// Each partition still has at most one write in flight (isrWriting) and
// applies its outcome under its own lock, as before.
func (m *Manager) writeISRChanges() (unconfirmed bool) {
	c := m.cluster()
	var pending []*Partition
	for _, p := range m.AllPartitions() {
		p.mu.Lock()
		if p.isrWriteDueLocked() {
			pending = append(pending, p)
		}
		p.mu.Unlock()
	}
	var retry atomic.Bool
	var writes errgroup.Group
	writes.SetLimit(isrWritesInFlight)
	for _, p := range pending {
		writes.Go(func() error {
			if m.writeISRChange(c, p) {
				retry.Store(true)
			}
			return nil
		})
	}
	_ = writes.Wait() // the writes report through retry, never an error
	if f, ok := c.isrw.(ISRChangeFlusher); ok {
		if err := f.FlushISRChanges(); err != nil {
			m.log.Warn("ISR change notification not written; written again with the next round", "err", err)
			retry.Store(true)
		}
	}
	return retry.Load()
}

// writeISRChange writes p's pending ISR proposal, if any, conditional on
// the partition state version the leader knows, and applies the outcome if
// p still leads with the same epoch: the new ISR when written, the state
// read back on a stale version (obeyed as long as it still names this
// broker leader at this epoch; otherwise the controller's LeaderAndIsr
// follows). Any other error leaves the write's outcome unknown (ZooKeeper
// may have applied it and lost the answer), so the proposal stays pending
// and the leader loop writes it again after isrRetryBackoff: that write
// lands, or finds the version moved and follows what is stored (its own
// write, or a newer state). Meanwhile the HW counts the
// maximal ISR, as for any write in flight; dropping the proposal instead
// would let a leader whose expansion did land acknowledge records without
// a replica that ZooKeeper, and so the next election, counts in sync.
// Kafka's ZooKeeper client retries such a write and recognises its own
// data on the version conflict (ReplicationUtils.updateLeaderAndIsr).
func (m *Manager) writeISRChange(c *clusterState, p *Partition) (unconfirmed bool) {
	p.mu.Lock()
	if !p.isrWriteDueLocked() {
		p.mu.Unlock()
		return false
	}
	l := p.mu.repl.leader
	change := slices.Clone(l.Pending().ISR)
	cur := p.mu.repl.state.Clone()
	epoch := l.Epoch()
	p.mu.repl.isrWriting = true
	p.mu.Unlock()

	next, err := c.isrw.ChangeISR(p.Topic.Meta.Name, p.Index, cur, change)

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.repl.leader != l {
		return false // leadership moved meanwhile: the new state rules
	}
	p.mu.repl.isrWriting = false
	switch {
	case err == nil:
		p.mu.repl.state = next.Clone()
		if l.Committed(next.ISR) {
			p.setHWLocked(l.HW())
		} else {
			p.completeWaitersLocked() // a smaller ISR may answer NOT_ENOUGH_REPLICAS_AFTER_APPEND
		}
		m.log.Info("ISR changed", "topic", p.Topic.Meta.Name, "partition", p.Index, "isr", next.ISR, "zk_version", next.ZKVersion)
	case errors.Is(err, ErrStaleISRVersion) && next.Leader == c.self && next.LeaderEpoch == epoch:
		p.mu.repl.state = next.Clone()
		if l.Committed(next.ISR) {
			p.setHWLocked(l.HW())
		}
		m.log.Info("ISR write found a newer partition state; following it", "topic", p.Topic.Meta.Name, "partition", p.Index, "isr", next.ISR, "zk_version", next.ZKVersion)
	case errors.Is(err, ErrStaleISRVersion):
		l.Rejected() // the partition moved on; the LeaderAndIsr that moved it follows
	default:
		m.log.Warn("ISR change not confirmed; writing it again", "topic", p.Topic.Meta.Name, "partition", p.Index, "isr", change, "err", err)
		return true
	}
	return false
}

// isrWriteDueLocked reports whether p leads with an ISR proposal that no
// write carries yet. p.mu must be held.
func (p *Partition) isrWriteDueLocked() bool {
	l := p.mu.repl.leader
	return l != nil && !p.mu.closed && !p.mu.repl.isrWriting && l.Pending() != nil
}
