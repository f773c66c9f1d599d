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
// dirty ratio reaches min.cleanable.dirty.ratio, then waits
// log.cleaner.backoff.ms.

import (
	"errors"
	"sync"
	"time"

	"github.com/kbroker/kbroker/storage"
)

// logTasks is the state of the background goroutines.
type logTasks struct {
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func (b *Broker) startLogTasks() {
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
func (b *Broker) stopLogTasks() {
	b.tasks.once.Do(func() {
		if b.tasks.stop != nil {
			close(b.tasks.stop)
		}
	})
	b.tasks.wg.Wait()
}

// loop runs pass every interval until stopped; a pass that reports more
// work runs again at once.
func (b *Broker) loop(interval time.Duration, pass func() (again bool)) {
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
func (b *Broker) allPartitions() []*partition {
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
func (b *Broker) runRetention() int {
	deleted := 0
	dirty := map[*storage.Dir]bool{}
	for _, p := range b.allPartitions() {
		s := p.t.settings()
		if !s.cleanupDelete {
			continue
		}
		n, err := p.log.ApplyRetention(b.now(), s.retentionMs, s.retentionBytes)
		if err != nil && !errors.Is(err, storage.ErrClosed) {
			b.log.Error("retention failed", "topic", p.t.meta.Name, "partition", p.index, "err", err)
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
func (b *Broker) runCleaner() int {
	cleaned := 0
	dirty := map[*storage.Dir]bool{}
	for _, p := range b.allPartitions() {
		s := p.t.settings()
		if !s.cleanupCompact {
			continue
		}
		st, err := p.log.Clean(b.now(), s.cleaner)
		if err != nil && !errors.Is(err, storage.ErrClosed) {
			b.log.Error("compaction failed", "topic", p.t.meta.Name, "partition", p.index, "err", err)
		}
		if st.Segments > 0 {
			cleaned += st.Segments
			dirty[p.dir] = true
		}
	}
	b.checkpointDirs(dirty)
	return cleaned
}

// checkpointDirs rewrites the checkpoints of the given log dirs.
func (b *Broker) checkpointDirs(dirs map[*storage.Dir]bool) {
	for d := range dirs {
		if err := d.Checkpoint(); err != nil {
			b.log.Error("checkpoint failed", "log_dir", d.Path(), "err", err)
		}
	}
}
