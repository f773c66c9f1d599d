// Package replica owns the partitions this broker serves, as Kafka's
// ReplicaManager and cluster.Partition: the topic registry, the partition
// (log, leader epoch, high watermark, last stable offset, idempotent producer
// and transaction state), appends and reads, the long-poll wait of fetches,
// incremental fetch sessions (KIP-227), the background log tasks (retention,
// cleaner) and the handling of failed appends; in cluster mode (cluster.go)
// the partitions' roles, the replica fetchers, the ISR and the delayed
// acks=all produce. It knows no coordinator and no listener: its only
// network use is the replica fetchers' own connections to leaders.
package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/vfs"
)

// Manager owns this broker's partitions, as Kafka's ReplicaManager: the
// topic registry, appends and reads, the long-poll wait of fetches, the
// incremental fetch sessions and the background log tasks.
type Manager struct {
	cfg   config.Config
	log   *slog.Logger
	now   func() time.Time
	store controller.Store
	dirs  []*storage.Dir

	// closing is closed when the broker shuts down: parked fetches return.
	closing <-chan struct{}

	mu struct {
		sync.RWMutex
		topics map[string]*Topic
		byID   map[[16]byte]*Topic
	}

	// tasks are the retention and cleaner goroutines (log_tasks.go).
	tasks logTasks
	// taskPanics counts panics recovered in the log tasks (guard).
	taskPanics atomic.Int64
	// fetchSessions are the incremental fetch sessions (fetch_session.go).
	fetchSessions *fetchSessionCache
	// parkedFollowers are the follower fetches parked in a narrowed
	// session (fetch_replica.go): every partition's change wakes them.
	parkedFollowers watchSet
	// repl is the cluster-mode state: roles, fetchers, the leader loop
	// (cluster.go); unused on a single node.
	repl replication
	// defaults is the configuration topic configs default to, when dynamic
	// broker configs changed it (dynamic_defaults.go); nil: cfg.
	defaults atomic.Pointer[config.Config]
	// offlineDirs counts the log dirs gone offline; dirsFailed is closed
	// when that is all of them (disk_errors.go).
	offlineDirs atomic.Int32
	dirsFailed  chan struct{}
	failedDirs  chan string // see dirOffline
}

// NewManager returns a manager with no log dirs and no topics yet; closing
// is closed when the broker shuts down.
func NewManager(cfg config.Config, closing <-chan struct{}) *Manager {
	m := &Manager{cfg: cfg, log: cfg.Logger, now: cfg.Now, closing: closing, dirsFailed: make(chan struct{}),
		failedDirs: make(chan string, len(cfg.LogDirs))}
	m.mu.topics = map[string]*Topic{}
	m.mu.byID = map[[16]byte]*Topic{}
	m.fetchSessions = newFetchSessionCache(int(cfg.FetchSessionCacheSlots))
	return m
}

// OpenDirs opens (and locks) every log dir of cfg.LogDirs on fs (nil: the
// operating system's files; tests pass a vfs.WithErrors to inject faults).
// On an error the dirs already open stay open until CloseStorage.
func (m *Manager) OpenDirs(fs vfs.FS) error {
	for _, d := range m.cfg.LogDirs {
		dir, err := storage.OpenDirConfig(d, storage.DirConfig{
			ConfigFor:                       m.logConfigFor,
			Logger:                          m.log,
			FileDeleteDelayMs:               m.cfg.FileDeleteDelayMs,
			FlushOffsetCheckpointIntervalMs: m.cfg.LogFlushOffsetCheckpointIntervalMs,
			SegmentOpenFilesMax:             int(m.cfg.LogSegmentOpenFilesMax),
			SegmentWritebackBytes:           m.cfg.LogSegmentWritebackBytes,
			RecoveryThreads:                 int(m.cfg.NumRecoveryThreadsPerDataDir),
			FS:                              fs,
			WriteErrorsOffline:              m.cfg.Cluster.Enabled(),
			OnOffline:                       func(error) { m.dirOffline(d) }, // Dir.Path() is d
		})
		if err != nil {
			return fmt.Errorf("opening log dir %s: %w", d, err)
		}
		m.dirs = append(m.dirs, dir)
	}
	return nil
}

// Load opens a partition for every topic in store and sets aside, renamed
// "-stray" and never deleted, the logs no topic in store owns. store is the
// metadata the manager follows from now on.
func (m *Manager) Load(store controller.Store) error {
	m.store = store
	return m.loadTopics()
}

// Start starts the background log tasks (retention, cleaner).
func (m *Manager) Start() { m.startLogTasks() }

// Stop stops the replica fetchers and the leaders' housekeeping, drops the
// fetch sessions and stops the log tasks, waiting for a pass in progress.
func (m *Manager) Stop() {
	m.stopReplication()
	m.fetchSessions.clear()
	m.stopLogTasks()
}

// Dirs returns the log dirs.
func (m *Manager) Dirs() []*storage.Dir { return m.dirs }

// FetchSessionCount returns how many incremental fetch sessions are cached.
func (m *Manager) FetchSessionCount() int { return m.fetchSessions.len() }

// FetchSessionPartitions returns how many partitions fetch session id holds
// (-1: no such session).
func (m *Manager) FetchSessionPartitions(id int32) int { return m.fetchSessions.sessionPartitions(id) }

// CloseStorage snapshots every partition's producer state, checkpoints the
// high watermarks and closes the log dirs (flush, checkpoints, clean
// shutdown marker, lock release).
func (m *Manager) CloseStorage() error {
	var errs []error
	m.mu.Lock()
	// num.recovery.threads.per.data.dir partitions per dir at once, as
	// Kafka closes its logs. The snapshots are fsynced by the dirs' Close
	// (one sync of the file system, or each on its own where that cannot
	// be done: storage.Log.WriteProducerSnapshotAtClose).
	sem := make(chan struct{}, max(int(m.cfg.NumRecoveryThreadsPerDataDir), 1)*max(len(m.dirs), 1))
	var wg sync.WaitGroup
	for _, t := range m.mu.topics {
		for _, p := range t.Partitions {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				p.closeAndSnapshot()
			}()
		}
	}
	wg.Wait()
	m.mu.Unlock()
	if err := m.writeHighWatermarks(); err != nil {
		errs = append(errs, err)
	}
	for _, d := range m.dirs {
		if err := d.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	m.dirs = nil
	return errors.Join(errs...)
}

// AppendRecords appends one validated client batch to p (partition.append:
// idempotence checks, HW and LSO) and logs storage trouble once per episode
// (noteAppend).
func (m *Manager) AppendRecords(p *Partition, batch []byte, h records.Header) AppendResult {
	res, err := p.append(batch, h)
	if !errors.Is(err, errPartitionClosed) {
		m.noteAppend(p, err)
	}
	return res
}

// AppendInternal appends a batch built by a coordinator to partition p of an
// internal topic (Partition.appendInternal) and calls done with the outcome
// once the write is complete. On a single node that is at once: done runs
// before AppendInternal returns. In a cluster it will be when the batch is
// replicated, so callers answer clients from done, never from the return.
func (m *Manager) AppendInternal(p *Partition, batch []byte, done func(error)) {
	end, err := p.appendInternal(batch)
	m.awaitInternal(p, end, err, done)
}

// AppendMarker writes a transaction marker to p (Partition.appendMarker)
// and calls done as AppendInternal does.
func (m *Manager) AppendMarker(p *Partition, producerID int64, epoch int16, ct records.ControlType, coordinatorEpoch int32, nowMs int64, done func(error)) {
	end, err := p.appendMarker(producerID, epoch, ct, coordinatorEpoch, nowMs)
	m.awaitInternal(p, end, err, done)
}
