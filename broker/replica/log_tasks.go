package replica

// Background log maintenance, owned by the Manager: started by Start,
// stopped (and waited for) by Stop.
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
	"fmt"
	"runtime/debug"
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

func (m *Manager) startLogTasks() {
	m.tasks.stop = make(chan struct{})
	m.tasks.wg.Add(1)
	go m.loop("retention", time.Duration(m.cfg.LogRetentionCheckIntervalMs)*time.Millisecond, func() { m.runRetention() })
	if m.cfg.LogCleanerEnable {
		m.tasks.wg.Add(1)
		go m.loop("cleaner", time.Duration(m.cfg.LogCleanerBackoffMs)*time.Millisecond, func() { m.runCleaner() })
	}
}

// stopLogTasks stops the goroutines and waits for a pass in progress.
func (m *Manager) stopLogTasks() {
	m.tasks.once.Do(func() {
		if m.tasks.stop != nil {
			close(m.tasks.stop)
		}
	})
	m.tasks.wg.Wait()
}

// loop runs pass once per interval, the interval counted from the end of the
// previous pass, until stopped. A pass that leaves work (a log still dirty
// after compaction) is not re-run early: the next interval picks it up. A
// panic in a pass is recovered (guard): the task goes on at the next
// interval.
func (m *Manager) loop(task string, interval time.Duration, pass func()) {
	defer m.tasks.wg.Done()
	interval = max(interval, time.Millisecond)
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-m.tasks.stop:
			return
		case <-timer.C:
		}
		m.guard(task, nil, pass)
		timer.Reset(interval)
	}
}

// guard runs f, one background pass or one partition's share of it; a
// panic in f is recovered, counted (TaskPanics) and logged once with the
// task, the partition (p, if not nil), the value and the stack. A
// background goroutine has no caller to recover for it: unrecovered, one
// bad log would end the process, and with it every other partition.
func (m *Manager) guard(task string, p *Partition, f func()) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		n := m.taskPanics.Add(1)
		attrs := []any{"task", task, "panic", fmt.Sprint(r), "panics_so_far", n, "stack", string(debug.Stack())}
		if p != nil {
			attrs = append(attrs, "topic", p.Topic.Meta.Name, "partition", p.Index)
		}
		m.log.Error("panic in a background log task recovered; the broker keeps running", attrs...)
	}()
	f()
}

// TaskPanics is how many panics the background log tasks recovered from
// since the broker started.
func (m *Manager) TaskPanics() int64 { return m.taskPanics.Load() }

// AllPartitions snapshots every partition with its topic.
func (m *Manager) AllPartitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*Partition
	for _, t := range m.mu.topics {
		for _, p := range t.Partitions {
			if p.Hosted() {
				out = append(out, p)
			}
		}
	}
	return out
}

// runRetention applies the retention limits of every partition whose topic
// has the delete policy once, and returns the number of segments deleted.
func (m *Manager) runRetention() int {
	deleted := 0
	dirty := map[*storage.Dir]bool{}
	for _, p := range m.AllPartitions() {
		m.guard("retention", p, func() {
			s := p.Topic.Settings()
			if s.CleanupDelete {
				n, err := p.Log.ApplyRetention(m.now(), s.retentionMs, s.retentionBytes)
				if err != nil && !errors.Is(err, storage.ErrClosed) {
					m.log.Error("retention failed", "topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
				}
				if n > 0 {
					deleted += n
					dirty[p.Dir] = true
				}
			}
			// Every partition, whatever its policy: DeleteRecords may
			// have moved the log start too.
			p.trimAborted()
		})
	}
	m.CheckpointDirs(dirty)
	return deleted
}

// runCleaner compacts once every partition whose topic has the compact
// policy, and returns the number of segments rewritten.
func (m *Manager) runCleaner() int {
	cleaned := 0
	dirty := map[*storage.Dir]bool{}
	for _, p := range m.AllPartitions() {
		s := p.Topic.Settings()
		if !s.cleanupCompact {
			continue
		}
		m.guard("cleaner", p, func() {
			// The LSO is read before Clean scans the log: every transaction
			// with data below it has its marker in the log Clean sees.
			st, err := p.Log.Clean(m.now(), p.LastStableOffset(), m.cleanerConfig(p, s))
			if err != nil && !errors.Is(err, storage.ErrClosed) {
				m.log.Error("compaction failed", "topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
			}
			p.forgetAborted(st.EmptiedAborts)
			p.trimAborted()
			if st.Segments > 0 {
				cleaned += st.Segments
				dirty[p.Dir] = true
			}
		})
	}
	m.CheckpointDirs(dirty)
	return cleaned
}

// cleanerConfig is the topic's compaction settings. max.compaction.lag.ms is
// resolved here from the topic's current overrides, as it is only needed by
// the cleaner.
func (m *Manager) cleanerConfig(p *Partition, s *TopicSettings) storage.CleanerConfig {
	cc := s.cleaner
	overrides := p.Topic.Meta.Configs
	if m.store != nil {
		if t, ok := m.store.Topic(p.Topic.Meta.Name); ok {
			overrides = t.Configs
		}
	}
	cc.MaxCompactionLagMs = config.ResolveTopicConfig(m.topicDefaults(), overrides).Int64("max.compaction.lag.ms")
	return cc
}

// CheckpointDirs rewrites the checkpoints of the given log dirs.
func (m *Manager) CheckpointDirs(dirs map[*storage.Dir]bool) {
	for d := range dirs {
		if err := d.Checkpoint(); err != nil {
			m.log.Error("checkpoint failed", "log_dir", d.Path(), "err", err)
		}
	}
}
