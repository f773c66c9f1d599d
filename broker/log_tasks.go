package broker

// Background log maintenance, owned by the Broker: started by Start,
// stopped (and waited for) by Close.
//
// Retention runs every log.retention.check.interval.ms over the partitions
// of topics whose cleanup.policy includes delete: whole closed segments
// older than retention.ms (by their largest timestamp) or beyond
// retention.bytes are deleted and the log start offset moves (then
// log-start-offset-checkpoint is rewritten). Compaction runs for topics
// whose cleanup.policy includes compact: each pass compacts every log whose
// dirty ratio reaches min.cleanable.dirty.ratio (or whose oldest dirty
// segment is older than max.compaction.lag.ms), then waits
// log.cleaner.backoff.ms. Compaction never reaches past the last stable
// offset; it removes aborted transactions' records and, later, markers of
// transactions with no data left (storage/cleaner_txn.go).

import (
	"errors"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/storage"
)

// logTasks is the state of the background goroutines.
type logTasks struct {
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func (b *Manager) startLogTasks() {
	b.tasks.stop = make(chan struct{})
	b.tasks.wg.Add(1)
	go b.loop(time.Duration(b.cfg.LogRetentionCheckIntervalMs)*time.Millisecond, func() bool {
		b.runRetention()
		return false
	})
	if b.cfg.LogCleanerEnable {
		b.tasks.wg.Add(1)
		go b.loop(time.Duration(b.cfg.LogCleanerBackoffMs)*time.Millisecond, func() bool {
			b.runCleaner()
			return false
		})
	}
}

// stopLogTasks stops the goroutines and waits for a pass in progress.
func (b *Manager) stopLogTasks() {
	b.tasks.once.Do(func() {
		if b.tasks.stop != nil {
			close(b.tasks.stop)
		}
	})
	b.tasks.wg.Wait()
}

// loop runs pass every interval until stopped; a pass that reports more
// work runs again at once.
func (b *Manager) loop(interval time.Duration, pass func() (again bool)) {
	defer b.tasks.wg.Done()
	interval = max(interval, time.Millisecond)
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-b.tasks.stop:
			return
		case <-timer.C:
		}
		for pass() {
			select {
			case <-b.tasks.stop:
				return
			default:
			}
		}
		timer.Reset(interval)
	}
}

// allPartitions snapshots every partition with its topic.
func (b *Manager) allPartitions() []*partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []*partition
	for _, t := range b.mu.topics {
		out = append(out, t.partitions...)
	}
	return out
}

// runRetention applies the retention limits of every partition whose topic
// has the delete policy once, and returns the number of segments deleted.
func (b *Manager) runRetention() int {
	deleted := 0
	dirty := map[*storage.Dir]bool{}
	for _, p := range b.allPartitions() {
		s := p.topic.settings()
		if !s.cleanupDelete {
			continue
		}
		n, err := p.log.ApplyRetention(b.now(), s.retentionMs, s.retentionBytes)
		if err != nil && !errors.Is(err, storage.ErrClosed) {
			b.log.Error("retention failed", "topic", p.topic.meta.Name, "partition", p.index, "err", err)
		}
		if n > 0 {
			deleted += n
			dirty[p.dir] = true
		}
	}
	b.checkpointDirs(dirty)
	return deleted
}

// runCleaner compacts once every partition whose topic has the compact
// policy, and returns the number of segments rewritten.
func (b *Manager) runCleaner() int {
	cleaned := 0
	dirty := map[*storage.Dir]bool{}
	for _, p := range b.allPartitions() {
		s := p.topic.settings()
		if !s.cleanupCompact {
			continue
		}
		// The LSO is read before Clean scans the log: every transaction
		// with data below it has its marker in the log Clean sees.
		st, err := p.log.Clean(b.now(), p.lastStableOffset(), b.cleanerConfig(p, s))
		if err != nil && !errors.Is(err, storage.ErrClosed) {
			b.log.Error("compaction failed", "topic", p.topic.meta.Name, "partition", p.index, "err", err)
		}
		p.forgetAborted(st.EmptiedAborts)
		if st.Segments > 0 {
			cleaned += st.Segments
			dirty[p.dir] = true
		}
	}
	b.checkpointDirs(dirty)
	return cleaned
}

// cleanerConfig is the topic's compaction settings. max.compaction.lag.ms is
// resolved here from the topic's current overrides, as it is only needed by
// the cleaner.
func (b *Manager) cleanerConfig(p *partition, s *topicSettings) storage.CleanerConfig {
	cc := s.cleaner
	overrides := p.topic.meta.Configs
	if b.store != nil {
		if t, ok := b.store.Topic(p.topic.meta.Name); ok {
			overrides = t.Configs
		}
	}
	cc.MaxCompactionLagMs = config.ResolveTopicConfig(b.cfg, overrides).Int64("max.compaction.lag.ms")
	return cc
}

// forgetAborted stops listing to read_committed fetches aborted transactions
// whose data compaction removed. It runs after the pass that found them
// empty and so before any later pass can remove their markers: a consumer
// told of an aborted transaction must meet its marker, or it would skip the
// producer's later committed batches.
func (p *partition) forgetAborted(gone []storage.AbortedTxn) {
	if len(gone) == 0 {
		return
	}
	drop := make(map[storage.AbortedTxn]bool, len(gone))
	for _, a := range gone {
		drop[a] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.mu.txns.aborted[:0]
	for _, a := range p.mu.txns.aborted {
		if !drop[storage.AbortedTxn{ProducerID: a.producerID, MarkerOffset: a.lastOffset}] {
			kept = append(kept, a)
		}
	}
	p.mu.txns.aborted = kept
	// A snapshot taken before this would bring the dropped entries back after
	// a crash, when their markers may be gone: replace it now.
	if err := p.snapshotLocked(); err != nil {
		p.logger.Warn("producer snapshot failed", "topic", p.topic.meta.Name, "partition", p.index, "err", err)
	}
}

// checkpointDirs rewrites the checkpoints of the given log dirs.
func (b *Manager) checkpointDirs(dirs map[*storage.Dir]bool) {
	for d := range dirs {
		if err := d.Checkpoint(); err != nil {
			b.log.Error("checkpoint failed", "log_dir", d.Path(), "err", err)
		}
	}
}
