package storage

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// Files in a log dir besides partition directories and checkpoints.
const (
	LockFile          = ".lock"
	CleanShutdownFile = ".kafka_cleanshutdown"
)

// Kafka defaults for DirConfig fields.
const (
	DefaultFileDeleteDelayMs               = 60000 // file.delete.delay.ms
	DefaultFlushOffsetCheckpointIntervalMs = 60000 // log.flush.offset.checkpoint.interval.ms
	DefaultRecoveryThreads                 = 2     // num.recovery.threads.per.data.dir (Kafka 4)
)

// DirConfig configures a log dir. Zero values mean Kafka's defaults (so
// Kafka's file.delete.delay.ms=0 is expressed as 1 here).
type DirConfig struct {
	// ConfigFor gives each partition's Config; nil means defaults. A Config
	// without a Logger gets the dir's.
	ConfigFor func(topic string, partition int32) Config
	// Logger receives the dir's reports; default slog.Default().
	Logger *slog.Logger
	// FileDeleteDelayMs is file.delete.delay.ms: how long a removed
	// partition directory stays on disk, renamed "-delete", before the
	// dir's background goroutine deletes it; also how long a segment
	// leaving a log stays renamed ".deleted", unless the log's Config
	// sets its own.
	FileDeleteDelayMs int64
	// FlushOffsetCheckpointIntervalMs is
	// log.flush.offset.checkpoint.interval.ms: how often the background
	// goroutine writes the recovery points (and log start offsets) of every
	// log, so a crash re-scans only what was written since.
	FlushOffsetCheckpointIntervalMs int64
	// Now is the clock of the background work; default time.Now.
	Now func() time.Time
	// FS is the file system of the dir and all its logs; default
	// vfs.Default, the operating system's files.
	FS vfs.FS
	// RecoveryThreads is num.recovery.threads.per.data.dir: how many logs
	// OpenDir loads (and recovers) at once, and Close flushes and closes
	// at once. Default DefaultRecoveryThreads.
	RecoveryThreads int
	// SegmentOpenFilesMax is log.segment.open.files.max (a kbroker
	// setting): how many ".log" descriptors of inactive segments the dir
	// keeps open, least recently read closed first. The active segment of
	// each partition is open besides, and index files are read into memory
	// and closed, so the dir holds about one descriptor per partition plus
	// this many. Default DefaultSegmentOpenFilesMax.
	SegmentOpenFilesMax int
	// SegmentWritebackBytes is log.segment.writeback.bytes (a kbroker
	// setting): every time a partition appended this many bytes to a
	// segment, the dir starts their writeback to disk without waiting for
	// it (writeback.go). 0 is the default, DefaultSegmentWritebackBytes;
	// negative turns it off.
	SegmentWritebackBytes int64
	// WriteErrorsOffline takes the dir offline on any failed segment
	// write, as Kafka takes a log dir offline on any IOException, even a
	// write that was cleanly truncated back (ENOSPC). Without it such a
	// write leaves the log as it was and appends resume when space
	// returns, which is what a single node, with no other replica to take
	// over, wants; a cluster-mode broker sets it so that a full disk gives
	// leadership to a replica whose disk works (ErrLogDirOffline is sticky
	// until restart, as in Kafka). Running out of descriptors, or a write
	// to a segment file closed under it, is never a disk failure.
	WriteErrorsOffline bool
	// OnOffline, if set, is called once when the dir goes offline, with
	// the error that took it offline, after the dir and all its logs
	// refuse appends. It runs on the goroutine that met the failure, with
	// no lock of the dir or its logs held, and must not block.
	OnOffline func(err error)
}

// withDefaults fills in zero fields and rejects negative durations.
func (c DirConfig) withDefaults() (DirConfig, error) {
	if c.ConfigFor == nil {
		c.ConfigFor = func(string, int32) Config { return Config{} }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.FileDeleteDelayMs == 0 {
		c.FileDeleteDelayMs = DefaultFileDeleteDelayMs
	}
	if c.FlushOffsetCheckpointIntervalMs == 0 {
		c.FlushOffsetCheckpointIntervalMs = DefaultFlushOffsetCheckpointIntervalMs
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.SegmentOpenFilesMax == 0 {
		c.SegmentOpenFilesMax = DefaultSegmentOpenFilesMax
	}
	if c.RecoveryThreads == 0 {
		c.RecoveryThreads = DefaultRecoveryThreads
	}
	if c.SegmentWritebackBytes == 0 {
		c.SegmentWritebackBytes = DefaultSegmentWritebackBytes
	}
	switch {
	case c.FileDeleteDelayMs < 0:
		return c, fmt.Errorf("file delete delay ms %d: want >= 0", c.FileDeleteDelayMs)
	case c.RecoveryThreads < 0:
		return c, fmt.Errorf("recovery threads %d: want >= 0", c.RecoveryThreads)
	case c.SegmentOpenFilesMax < 0:
		return c, fmt.Errorf("segment open files max %d: want >= 0", c.SegmentOpenFilesMax)
	case c.FlushOffsetCheckpointIntervalMs < 0:
		return c, fmt.Errorf("flush offset checkpoint interval ms %d: want >= 0", c.FlushOffsetCheckpointIntervalMs)
	}
	return c, nil
}

// Dir is one log dir: the partition logs in it, its checkpoint files and
// its lock. While a Dir is open it holds an exclusive flock on ".lock", and
// ".kafka_cleanshutdown" is absent; Close writes it back after every log
// was flushed and closed.
//
// Partition directories are never deleted outright: Remove renames one
// "<topic>-<partition>.<id>-delete" and the background goroutine deletes it
// after FileDeleteDelayMs; MarkStray renames one "-stray" and keeps it.
// Neither kind is ever loaded as a log.
type Dir struct {
	path   string
	logger *slog.Logger
	cfg    DirConfig
	fs     vfs.FS
	files  *fileCache // descriptors of the segments of every log in the dir
	lock   io.Closer
	// syncer, if the file system can sync itself whole (vfs.CanSyncFS),
	// is the dir, open since OpenDir, so that Close's vfs.SyncFS through
	// it reports every write-back failure since then: Close then closes
	// the logs without an fsync each and syncs the file system once.
	syncer vfs.File

	ckMu sync.Mutex // serialises checkpoint file writes

	mu struct {
		sync.Mutex
		logs   map[TopicPartition]*Log
		hw     map[TopicPartition]int64
		closed bool
		// deletes are the "-delete" directories waiting for their time.
		deletes []pendingDelete
		// strays are the names of the "-stray" directories in the dir.
		strays []string
		// lastRecovery is the recovery-point checkpoint last written.
		lastRecovery map[TopicPartition]int64
		// rollFlushes are the logs that rolled since the last pass, with
		// the offset below which they must be fsynced.
		rollFlushes map[*Log]int64
		// snapshotSyncs are the logs with deferred producer snapshots
		// to fsync (Log.WriteProducerSnapshotDeferred).
		snapshotSyncs map[*Log]struct{}
		// unflushed are the logs the flusher watches: every log with a
		// finite FlushIntervalMs that holds unflushed records is in it
		// (logs leave it in the pass that finds them flushed, closed or
		// offline), so a pass never walks every log of the dir.
		unflushed map[*Log]struct{}
		// nextPass is when the background goroutine will run its next
		// pass unless woken (by the dir's clock).
		nextPass time.Time
		// offline is the first failure that took the dir offline.
		offline *OfflineError
	}

	// The background goroutine (flusher, periodic checkpoints, delayed
	// deletes), owned by Dir: stopped by closing stop, done closed when it
	// exits; wake makes it run a pass and recompute its period.
	stop, done, wake chan struct{}
	// retired are the files of segments the logs dropped
	// (Log.dropSegmentLocked), deleted by the background goroutine once
	// due. Its lock is a leaf: taken under a log's lock (dropping a
	// segment) or d.mu (sleep), it takes no other.
	retired struct {
		sync.Mutex
		files []pendingDelete
	}

	// writeback feeds the writeback goroutine, which closes writebackDone
	// when it ends (writeback.go).
	writeback     chan writebackJob
	writebackDone chan struct{}
}

// OpenDir is OpenDirConfig with Kafka's defaults for the dir's own settings.
func OpenDir(path string, cfgFor func(topic string, partition int32) Config, logger *slog.Logger) (*Dir, error) {
	return OpenDirConfig(path, DirConfig{ConfigFor: cfgFor, Logger: logger})
}

// OpenDirConfig opens the log dir at path (creating it), locks it, reads
// its checkpoints, opens every partition directory in it — recovering each
// from its checkpointed recovery point unless the previous Close was clean —
// schedules the deletion of leftover "-delete" directories, reports
// "-stray" ones, and starts the background goroutine.
func OpenDirConfig(path string, cfg DirConfig) (*Dir, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open log dir %s: %w", path, err)
	}
	if err := cfg.FS.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("open log dir: %w", err)
	}
	lock, err := lockDir(cfg.FS, path)
	if err != nil {
		return nil, err
	}
	d := &Dir{path: path, logger: cfg.Logger.With("log_dir", path), cfg: cfg, lock: lock,
		fs: cfg.FS, files: newFileCache(cfg.FS, cfg.SegmentOpenFilesMax),
		stop: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1),
		writeback: make(chan writebackJob, writebackQueue), writebackDone: make(chan struct{})}
	d.mu.logs = map[TopicPartition]*Log{}
	if vfs.CanSyncFS(cfg.FS) {
		// Opened before anything is written, so its syncfs at Close
		// sees every write-back failure of this dir's writes.
		if d.syncer, err = cfg.FS.OpenDir(path); err != nil {
			lock.Close()
			return nil, fmt.Errorf("open log dir %s: %w", path, wrapOpenErr(err))
		}
	}
	if err := d.load(); err != nil {
		for _, l := range d.mu.logs {
			l.Close()
		}
		if d.syncer != nil {
			d.syncer.Close()
		}
		lock.Close()
		return nil, fmt.Errorf("open log dir %s: %w", path, wrapOpenErr(err))
	}
	go d.run()
	go d.writebackLoop()
	return d, nil
}

// lockDir takes the exclusive lock (flock on the OS) of the log dir at path.
func lockDir(fs vfs.FS, path string) (io.Closer, error) {
	l, err := fs.Lock(filepath.Join(path, LockFile))
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("lock log dir %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("lock log dir %s: %w", path, wrapOpenErr(err))
	}
	return l, nil
}

// syncDir fsyncs the log dir itself, making partition directories created,
// renamed or removed in it durable.
func (d *Dir) syncDir() error { return vfs.SyncDir(d.fs, d.path) }

// readCheckpointOrWarn reads an offset checkpoint, treating an unreadable
// one as empty as Kafka does for recovery points and log start offsets.
func (d *Dir) readCheckpointOrWarn(name string) map[TopicPartition]int64 {
	m, err := readOffsetCheckpoint(d.fs, filepath.Join(d.path, name))
	if err != nil {
		d.logger.Warn("ignoring unreadable checkpoint", "file", name, "err", err)
		return map[TopicPartition]int64{}
	}
	return m
}

// load opens the partition logs; see OpenDir.
func (d *Dir) load() error {
	marker := filepath.Join(d.path, CleanShutdownFile)
	_, err := d.fs.Stat(marker)
	clean := err == nil
	recovery := d.readCheckpointOrWarn(RecoveryPointCheckpointFile)
	starts := d.readCheckpointOrWarn(LogStartOffsetCheckpointFile)
	cleaned := d.readCheckpointOrWarn(CleanerCheckpointFile)
	d.mu.hw = d.readCheckpointOrWarn(ReplicationCheckpointFile)
	ents, err := d.fs.ReadDir(d.path)
	if err != nil {
		return err
	}
	type partitionDir struct {
		name string
		tp   TopicPartition
	}
	var todo []partitionDir
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if d.adoptRenamed(e.Name()) {
			continue
		}
		tp, err := ParseTopicPartition(e.Name())
		if err != nil {
			d.logger.Warn("skipping directory that is not a partition", "dir", e.Name())
			continue
		}
		todo = append(todo, partitionDir{e.Name(), tp})
	}
	err = inParallel(len(todo), d.cfg.RecoveryThreads, func(i int) error {
		tp := todo[i].tp
		l, err := Open(filepath.Join(d.path, todo[i].name), d.configFor(tp, d.cfg.ConfigFor(tp.Topic, tp.Partition)), recovery[tp], clean)
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.mu.logs[tp] = l
		d.mu.Unlock()
		d.adopt(l)
		if s, ok := starts[tp]; ok && s > l.LogStartOffset() {
			if err := l.SetLogStartOffset(s); err != nil {
				d.logger.Warn("ignoring checkpointed log start offset", "partition", tp.String(), "err", err)
			}
		}
		if o, ok := cleaned[tp]; ok {
			l.setFirstDirty(o)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if clean {
		if err := d.fs.Remove(marker); err != nil {
			return fmt.Errorf("remove clean shutdown marker: %w", err)
		}
		return d.syncDir()
	}
	return nil
}

// adopt hands l's flush-after-roll, the fsync of its deferred producer
// snapshots and the deletion of its dropped segments to the background
// goroutine, and makes a failure of l take the whole dir offline, as Kafka.
func (d *Dir) adopt(l *Log) {
	rollFlush := func(upTo int64) {
		d.mu.Lock()
		if d.mu.rollFlushes == nil {
			d.mu.rollFlushes = map[*Log]int64{}
		}
		d.mu.rollFlushes[l] = max(d.mu.rollFlushes[l], upTo)
		d.mu.Unlock()
		d.poke()
	}
	snapshotSync := func() {
		d.mu.Lock()
		if d.mu.snapshotSyncs == nil {
			d.mu.snapshotSyncs = map[*Log]struct{}{}
		}
		d.mu.snapshotSyncs[l] = struct{}{}
		d.mu.Unlock()
		d.poke()
	}
	deleteLater := func(paths []string, delayMs int64) {
		delay := time.Duration(cmp.Or(delayMs, d.cfg.FileDeleteDelayMs)) * time.Millisecond
		due := d.cfg.Now().Add(delay)
		d.retired.Lock()
		for _, p := range paths {
			d.retired.files = append(d.retired.files, pendingDelete{name: p, due: due})
		}
		d.retired.Unlock()
		d.poke()
	}
	l.setHooks(rollFlush, d.watchUnflushed, d.markOffline, snapshotSync, deleteLater)
	if d.cfg.SegmentWritebackBytes > 0 {
		l.setWriteback(d.cfg.SegmentWritebackBytes, d.queueWriteback)
	}
}

// configFor fills in the dir's logger for a partition, and the dir's file
// system and descriptor cache, which every log in the dir shares.
func (d *Dir) configFor(tp TopicPartition, cfg Config) Config {
	if cfg.Logger == nil {
		cfg.Logger = d.logger.With("partition", tp.String())
	}
	cfg.FS, cfg.files = d.fs, d.files
	cfg.writeErrorsOffline = d.cfg.WriteErrorsOffline
	cfg.closeSyncsFS = d.syncer != nil
	return cfg
}

// Path is the log dir's path.
func (d *Dir) Path() string { return d.path }

// Logs returns a copy of the map of open logs.
func (d *Dir) Logs() map[TopicPartition]*Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(d.mu.logs))
	for tp, l := range d.mu.logs {
		out[tp] = l
	}
	return out
}

// Log returns the log of tp, or nil.
func (d *Dir) Log(tp TopicPartition) *Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.logs[tp]
}

// Create creates an empty log for tp. It fails with ErrExists if tp is open
// or its directory exists.
func (d *Dir) Create(tp TopicPartition, cfg Config) (*Log, error) {
	if _, err := ParseTopicPartition(tp.String()); err != nil || tp.Topic == "" {
		return nil, fmt.Errorf("create %v: invalid topic partition", tp)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.closed {
		return nil, fmt.Errorf("create %s: log dir closed", tp)
	}
	if d.mu.offline != nil {
		return nil, fmt.Errorf("create %s: %w", tp, d.mu.offline)
	}
	path := filepath.Join(d.path, tp.String())
	if _, ok := d.mu.logs[tp]; ok {
		return nil, fmt.Errorf("create %s: %w", tp, ErrExists)
	}
	if _, err := d.fs.Stat(path); err == nil {
		return nil, fmt.Errorf("create %s: directory %s: %w", tp, path, ErrExists)
	}
	// Open makes the new directory's entry durable (an fsync of this dir)
	// before it returns.
	l, err := Open(path, d.configFor(tp, cfg), 0, true)
	if err != nil {
		// Leave no half-made partition directory behind to be loaded later.
		_ = d.fs.RemoveAll(path)
		return nil, fmt.Errorf("create %s: %w", tp, wrapOpenErr(err))
	}
	d.mu.logs[tp] = l
	d.adopt(l)
	d.poke()
	return l, nil
}

// WriteHighWatermarks replaces replication-offset-checkpoint with hw.
func (d *Dir) WriteHighWatermarks(hw map[TopicPartition]int64) error {
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	if err := writeOffsetCheckpoint(d.fs, filepath.Join(d.path, ReplicationCheckpointFile), hw); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.hw = make(map[TopicPartition]int64, len(hw))
	for tp, o := range hw {
		d.mu.hw[tp] = o
	}
	return nil
}

// HighWatermarks returns a copy of the high watermarks last read from or
// written to replication-offset-checkpoint.
func (d *Dir) HighWatermarks() map[TopicPartition]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[TopicPartition]int64, len(d.mu.hw))
	for tp, o := range d.mu.hw {
		out[tp] = o
	}
	return out
}

// HighWatermark is tp's entry of HighWatermarks, without copying the map:
// opening or creating each of n partitions costs O(1), not O(n).
func (d *Dir) HighWatermark(tp TopicPartition) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hw, ok := d.mu.hw[tp]
	return hw, ok
}

// Checkpoint writes every log's recovery point, log start offset and
// cleaner position to recovery-point-offset-checkpoint,
// log-start-offset-checkpoint and cleaner-offset-checkpoint.
func (d *Dir) Checkpoint() error {
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	rp, starts, cleaned := map[TopicPartition]int64{}, map[TopicPartition]int64{}, map[TopicPartition]int64{}
	for tp, l := range d.Logs() {
		rp[tp] = l.RecoveryPoint()
		starts[tp] = l.LogStartOffset()
		if o := l.FirstDirtyOffset(); o > 0 {
			cleaned[tp] = o
		}
	}
	err := writeOffsetCheckpoint(d.fs, filepath.Join(d.path, RecoveryPointCheckpointFile), rp)
	if err == nil {
		d.mu.Lock()
		d.mu.lastRecovery = rp
		d.mu.Unlock()
	}
	err = errors.Join(err, writeOffsetCheckpoint(d.fs, filepath.Join(d.path, CleanerCheckpointFile), cleaned))
	return errors.Join(err, writeOffsetCheckpoint(d.fs, filepath.Join(d.path, LogStartOffsetCheckpointFile), starts))
}

// Close stops the background goroutine, flushes and closes every log, writes the
// checkpoints and, if all of that succeeded, the clean shutdown marker, then
// releases the lock.
//
// On a file system that syncs itself whole (vfs.CanSyncFS: Linux 5.8 or
// later) the logs write what they hold without an fsync each, then one
// vfs.SyncFS makes all of it durable (and everything written since the
// dir was opened: producer snapshots, directory entries) before the
// recovery points advance and the checkpoints and the marker are
// written; a failed sync leaves the recovery points and no marker, as a
// failed fsync does. (An fsync of every file of every log made a broker
// with 100,000 partitions take most of a minute to exit, issue 26.)
func (d *Dir) Close() error {
	d.mu.Lock()
	if d.mu.closed {
		d.mu.Unlock()
		return nil
	}
	d.mu.closed = true
	d.mu.Unlock()
	close(d.stop)
	<-d.done
	<-d.writebackDone

	logs := slices.Collect(maps.Values(d.Logs()))
	errs := make([]error, len(logs))
	var needsSync atomic.Bool
	_ = inParallel(len(logs), d.cfg.RecoveryThreads, func(i int) error {
		if d.syncer == nil {
			errs[i] = logs[i].Close()
			return nil
		}
		deferred, err := logs[i].closeForSyncFS()
		if deferred {
			needsSync.Store(true)
		}
		errs[i] = err
		return nil
	})
	if d.syncer != nil {
		var err error
		if needsSync.Load() {
			// Nothing written since the last flushes (a restart with no
			// traffic since) needs no sync of the whole file system,
			// which would write back other programs' data too.
			err = vfs.SyncFS(d.fs, d.syncer)
		}
		if err == nil {
			for i, l := range logs {
				if errs[i] == nil {
					l.closedDurable()
				}
			}
		}
		errs = append(errs, err, d.syncer.Close())
	}
	errs = append(errs, d.Checkpoint())
	if err := d.Offline(); err != nil {
		// Unflushed data may be lost: the next open must recover.
		errs = append(errs, err)
	}
	if errors.Join(errs...) == nil {
		errs = append(errs, vfs.WriteFileAtomic(d.fs, filepath.Join(d.path, CleanShutdownFile), nil, 0o644))
	}
	errs = append(errs, d.lock.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close log dir %s: %w", d.path, err)
	}
	return nil
}

// inParallel runs fn(0) … fn(n-1) on up to workers goroutines, which it
// owns and waits for, and returns the first error; after one, the
// remaining calls are skipped.
func inParallel(n, workers int, fn func(i int) error) error {
	workers = max(min(workers, n), 1)
	var (
		next     atomic.Int64
		failed   atomic.Bool
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
