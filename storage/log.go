package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage/vfs"
)

// Log is one partition's log: its segments, indexes and leader-epoch cache.
//
// Appends, rolls, truncation and flushes are serialised; readers take the
// read lock only to copy a segment view and read files with pread, so they
// never wait on disk writes. A reader whose view was invalidated by a
// truncation (generation change) retries.
type Log struct {
	dir    string
	cfg    Config
	logger *slog.Logger
	fs     vfs.FS
	files  *fileCache

	// flushMu serialises fsyncs with operations that close files
	// (TruncateTo, Close, Delete). Taken before mu.
	flushMu sync.Mutex

	// cleanMu serialises compaction and retention (Clean, ApplyRetention).
	// Taken before flushMu.
	cleanMu sync.Mutex

	// appended counts the bytes ever appended by this Log value (see
	// BytesAppended).
	appended atomic.Int64

	// leo and logStart mirror mu.leo and mu.logStart for readers that
	// must not wait for a writer (LogEndOffset, LogStartOffset: a leader
	// reads them for every partition of every follower fetch). Invariant:
	// each equals its mu field whenever mu is not held for writing; they
	// are stored only with mu held for writing (setLEOLocked,
	// setLogStartLocked).
	leo, logStart atomic.Int64

	mu struct {
		sync.RWMutex
		// segments are sorted by base offset; the last is active.
		// Invariant: len(segments) >= 1 unless closed.
		segments []*segment
		// Invariant: segments[0].base <= logStart <= leo.
		logStart int64
		// leo is the log end offset. Invariant: leo == active.next.
		leo int64
		// recoveryPoint: every batch below it is fsynced. Invariant: <= leo.
		recoveryPoint int64
		// gen changes whenever bytes a reader may have viewed are removed.
		gen    uint64
		closed bool
		// dirDirty: segment files were created since the last flush, so the
		// directory needs an fsync.
		dirDirty bool
		// unflushedRecords counts records appended since the last flush
		// began; unflushedSince is when the first of them was appended.
		unflushedRecords int64
		unflushedSince   time.Time
		epochs           epochCache
		// firstDirty is the cleaner's checkpoint: every segment below it was
		// compacted against the keys of the segments below it.
		// Invariant: a segment base offset or <= logStart.
		firstDirty int64
		// rollFlush, if set (by a Dir), takes the fsync of the segments
		// below a newly rolled segment off the append path, as Kafka's
		// scheduled flush after roll; without it Append fsyncs them itself.
		rollFlush func(upTo int64)
		// onUnflushed, if set (by a Dir), is told when an append starts
		// a run of unflushed records on a log with a finite
		// FlushIntervalMs, and when SetConfig gives a finite one to a log
		// holding unflushed records: the log is due a flush within after.
		// Called with no lock of the log held.
		onUnflushed func(l *Log, after time.Duration)
		// writeback, if set (by a Dir), starts the writeback of every
		// writebackEvery bytes appended to a segment (writeback.go).
		writeback      func(writebackJob)
		writebackEvery int64
		// offline, once set, is returned by every later write (see
		// OfflineError); onOffline (set by a Dir) is told about it.
		offline   *OfflineError
		onOffline func(*OfflineError)
		// listedSnapshots are the producer snapshot offsets of the
		// listing Open read, for the first snapshotOffsets call; nil
		// once used or after a snapshot was written.
		listedSnapshots []int64
		// snapshotSync, if set (by a Dir), is told when a deferred
		// producer snapshot is in place but not yet fsynced; the Dir's
		// background goroutine then calls syncDeferredSnapshots.
		// unsyncedSnapshots are those snapshots' offsets. Called with no
		// lock of the log held.
		snapshotSync      func()
		unsyncedSnapshots []int64
		// deleteLater, if set (by a Dir), takes the files of segments
		// retired by retention, a new log start or a truncation, to
		// delete after delayMs (the log's FileDeleteDelayMs, 0 for the
		// dir's); without it they are deleted at once. Never takes a
		// lock of the log.
		deleteLater func(paths []string, delayMs int64)
	}

	// recovered is what Open validated batch by batch. Set before Open returns.
	recovered RecoveryStats

	// offline mirrors mu.offline for Offline, which Metadata asks of
	// every partition: an atomic load instead of a read lock on
	// thousands of logs per request.
	offline atomic.Pointer[OfflineError]
}

// RecoveryStats describes the recovery Open ran: the segments from the one
// holding the recovery point onwards are read whole and CRC-checked.
type RecoveryStats struct {
	From     int64 // recovery point the scan started from (its segment's base)
	Segments int   // segments validated batch by batch
	Bytes    int64 // bytes read by that validation
}

// RecoveryStats reports what Open validated; zero after a clean shutdown.
func (l *Log) RecoveryStats() RecoveryStats { return l.recovered }

// setWriteback makes the log hand every range of every bytes appended to a
// segment to fn (a Dir's writeback goroutine); every <= 0 turns it off.
func (l *Log) setWriteback(every int64, fn func(writebackJob)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.writebackEvery, l.mu.writeback = every, fn
}

// dropSegmentLocked deletes s, a segment leaving the log: with a Dir,
// renamed (segment.retire) and handed to it to delete later, off the
// log's lock; without one, removed now. l.mu must be held.
func (l *Log) dropSegmentLocked(s *segment) error {
	if l.mu.deleteLater == nil {
		return s.remove()
	}
	paths, err := s.retire()
	if len(paths) > 0 {
		l.mu.deleteLater(paths, l.cfg.FileDeleteDelayMs)
	}
	return err
}

// setHooks installs a Dir's asynchronous flush-after-roll, its watch of
// logs due a timed flush, its offline notification, its fsync of deferred
// producer snapshots and its delayed deletion of dropped segments.
func (l *Log) setHooks(rollFlush func(upTo int64), onUnflushed func(*Log, time.Duration), onOffline func(*OfflineError),
	snapshotSync func(), deleteLater func(paths []string, delayMs int64)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.rollFlush, l.mu.onUnflushed, l.mu.onOffline = rollFlush, onUnflushed, onOffline
	l.mu.snapshotSync, l.mu.deleteLater = snapshotSync, deleteLater
}

// afterAppend is what an append hands to its Dir once the log's lock is
// released.
type afterAppend struct {
	rollFlush func(upTo int64) // the Dir's flush-after-roll, if any
	// unflushed is the Dir's onUnflushed if this append started a run of
	// unflushed records on a log with a finite FlushIntervalMs.
	unflushed func(*Log, time.Duration)
	interval  time.Duration // that FlushIntervalMs
}

// AppendInfo describes a successful Append.
type AppendInfo struct {
	FirstOffset int64 // offset assigned to the first record
	LastOffset  int64 // offset assigned to the last record
	// MaxTimestamp is the largest batch max timestamp, -1 if none;
	// OffsetOfMaxTimestamp is the last offset of the batch holding it
	// (Kafka's shallow offset), -1 if none.
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64
	Bytes                int   // bytes written
	Records              int64 // offsets assigned
}

// Open opens the log in dir, creating dir if absent. Unless cleanShutdown,
// every segment from the one holding recoveryPoint onwards is validated
// batch by batch and cut at the first invalid batch (later segments are
// deleted). Index files that are missing or inconsistent are rebuilt in
// every case. A dir with no segments gets an empty segment at offset 0.
//
// Recovery fsyncs nothing but the removal of dropped segments: as in
// Kafka's LogLoader, the recovery point stays where the checkpoint put it
// (capped at the log end) and advances only when a flush has synced the
// recovered segments, so a crash before that recovers them again. (An
// fsync of every recovered partition at start-up is what made a broker
// with thousands of partitions take most of a minute after kill -9.)
func Open(dir string, cfg Config, recoveryPoint int64, cleanShutdown bool) (*Log, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if _, err := cfg.FS.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// A new partition directory: make its entry in the log dir durable,
		// or a crash could lose every segment in it, synced or not.
		if err := cfg.FS.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open log: %w", err)
		}
		if err := vfs.SyncDir(cfg.FS, filepath.Dir(dir)); err != nil {
			return nil, fmt.Errorf("open log: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	l := &Log{dir: dir, cfg: cfg, logger: cfg.Logger.With("log", dir), fs: cfg.FS, files: cfg.files}
	if err := l.load(recoveryPoint, cleanShutdown); err != nil {
		for _, s := range l.mu.segments {
			s.close()
		}
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if r := l.recovered; r.Segments > 0 {
		l.logger.Info("recovered log after an unclean shutdown", "from_offset", r.From,
			"segments_scanned", r.Segments, "bytes_scanned", r.Bytes, "log_end_offset", l.mu.leo)
	}
	return l, nil
}

// segmentBases lists the base offsets of the .log files in ents (the
// log directory's listing), sorted, and removes index files that have no
// .log file.
func (l *Log) segmentBases(ents []fs.DirEntry) ([]int64, error) {
	logs := map[int64]bool{}
	var bases []int64
	for _, e := range ents {
		if b, ok := parseSegmentName(e.Name(), logSuffix); ok && e.Type().IsRegular() {
			logs[b] = true
			bases = append(bases, b)
		}
	}
	for _, e := range ents {
		name := e.Name()
		for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if b, ok := parseSegmentName(name, suf); ok && !logs[b] {
				l.logger.Warn("removing index file without a segment", "file", name)
				if err := l.fs.Remove(segmentPath(l.dir, b, suf)); err != nil {
					return nil, err
				}
			}
		}
		if strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, DeletedFileSuffix) {
			// A checkpoint write interrupted before its rename, or a
			// segment file retired before the process stopped (by
			// kbroker or by Kafka, which names them alike): due now, as
			// in Kafka.
			_ = l.fs.Remove(filepath.Join(l.dir, name))
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// load opens the segments and recovers them; see Open.
func (l *Log) load(recoveryPoint int64, clean bool) error {
	// One listing serves the swaps, the segments and the producer
	// snapshots, unless finishing a swap changed it: with thousands of
	// partitions, start-up is mostly such system calls.
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	changed, err := l.completeSwaps(ents)
	if err != nil {
		return err
	}
	if changed {
		if ents, err = l.fs.ReadDir(l.dir); err != nil {
			return err
		}
	}
	bases, err := l.segmentBases(ents)
	if err != nil {
		return err
	}
	l.snapshotsAtOpen(ents)
	if len(bases) == 0 {
		s, _, _, err := openSegment(l.fs, l.files, l.dir, 0, true)
		if err != nil {
			return err
		}
		l.mu.segments = []*segment{s}
		l.mu.dirDirty = true
		bases = []int64{0}
	} else {
		recoverFrom := int64(math.MaxInt64)
		if !clean {
			recoverFrom = bases[0]
			for _, b := range bases {
				if b <= recoveryPoint {
					recoverFrom = b
				}
			}
		}
		interval := l.cfg.IndexIntervalBytes
		for i, base := range bases {
			s, idxB, timeB, err := openSegment(l.fs, l.files, l.dir, base, false)
			if err != nil {
				return err
			}
			l.mu.segments = append(l.mu.segments, s)
			fileSize := s.size
			last := i == len(bases)-1
			var tail, rebuilt error
			if base >= recoverFrom {
				if l.recovered.Segments == 0 {
					l.recovered.From = base
				}
				l.recovered.Segments++
				l.recovered.Bytes += fileSize
				if tail, err = s.rebuild(fileSize, true, interval); err == nil {
					s.adoptIndexFiles(idxB, timeB)
				}
			} else {
				nextBase := int64(math.MaxInt64)
				if !last {
					nextBase = bases[i+1]
				}
				rebuilt, tail, err = s.load(idxB, timeB, fileSize, nextBase, last, interval)
			}
			if err != nil {
				return err
			}
			if rebuilt != nil {
				l.logger.Warn("rebuilt segment indexes", "segment", s.String(), "reason", rebuilt)
			}
			if tail != nil {
				l.logger.Warn("truncated invalid log tail", "segment", s.String(),
					"position", s.size, "bytes_dropped", fileSize-s.size, "segments_dropped", len(bases)-1-i,
					"log_end_offset", s.next, "reason", tail)
				for _, b := range bases[i+1:] {
					gone := &segment{base: b, dir: l.dir, fs: l.fs}
					if err := gone.remove(); err != nil {
						return err
					}
				}
				if i < len(bases)-1 {
					// Durable before anything is appended: a dropped
					// segment coming back after a power loss would overlap
					// the offsets written after the cut.
					if err := vfs.SyncDir(l.fs, l.dir); err != nil {
						return err
					}
				}
				break
			}
			if !last && base >= recoverFrom && s.next > bases[i+1] {
				return fmt.Errorf("segment %s holds offsets up to %d, past next segment %d", s, s.next-1, bases[i+1])
			}
		}
	}
	segs := l.mu.segments
	active := segs[len(segs)-1]
	if err := active.pin(); err != nil {
		return err
	}
	l.setLEOLocked(active.next)
	l.setLogStartLocked(segs[0].base)
	if clean {
		l.mu.recoveryPoint = l.mu.leo
	} else {
		// Recovered segments were marked dirty by their rebuild: their bytes
		// (and a cut tail) may be only in the page cache. The next flush
		// syncs them, their directory included, and only then moves the
		// recovery point (see Open).
		l.mu.recoveryPoint = min(max(recoveryPoint, segs[0].base), l.mu.leo)
		l.mu.dirDirty = l.mu.dirDirty || l.recovered.Segments > 0
	}
	if active.size > 0 {
		active.rollStart = l.cfg.Now()
	}
	l.mu.epochs, err = loadEpochCache(l.fs, l.dir)
	if err != nil {
		return err
	}
	trimmed := l.mu.epochs.truncateFromEnd(l.mu.leo)
	trimmed = l.mu.epochs.truncateFromStart(l.mu.logStart) || trimmed
	if trimmed {
		if err := l.mu.epochs.persist(); err != nil {
			return err
		}
	}
	return nil
}

// segmentIndex is the index in segments of the segment that holds offset:
// the last with base <= offset, or the first. Callers hold mu.
func (l *Log) segmentIndex(offset int64) int {
	segs := l.mu.segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset })
	return max(i-1, 0)
}

// appendBatch is one parsed batch of an Append.
type appendBatch struct {
	h   records.Header
	pos int // position in the Append's buffer
}

// parseBatches splits b into v2 batches by their length fields, appending
// them to out (a caller's stack array keeps one batch off the heap).
func parseBatches(b []byte, out []appendBatch) ([]appendBatch, error) {
	for pos := 0; pos < len(b); {
		h, err := records.ParseHeader(b[pos:])
		if err != nil {
			return nil, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if h.TotalSize() > len(b)-pos {
			return nil, fmt.Errorf("batch at byte %d: %w", pos, records.ErrTruncated)
		}
		out = append(out, appendBatch{h: h, pos: pos})
		pos += h.TotalSize()
	}
	if len(out) == 0 {
		return nil, errors.New("no batches")
	}
	return out, nil
}

// Append writes batches, the concatenation of one or more v2 record batches
// already validated by the caller, at the log end. It rewrites each batch's
// base offset (offsets are assigned densely from the log end offset) and
// partition leader epoch in place; the CRC does not cover them. The bytes
// reach the file in one write, so a process crash after Append returns
// loses nothing; only fsync (Flush, FlushIntervalMessages, FlushIntervalMs,
// roll) makes them survive power loss. On error nothing was appended: the
// log end does not move. If the fsync demanded by FlushIntervalMessages
// fails, the log goes offline and the batch is truncated away again (should
// that truncation fail too, the log end covers it but every later append is
// refused, so nothing is acknowledged after it). A write that failed and
// could not be undone also takes the log offline; see OfflineError. An
// offline log's Append returns an error wrapping ErrLogDirOffline.
func (l *Log) Append(batches []byte, leaderEpoch int32) (AppendInfo, error) {
	var one [1]appendBatch
	parsed, err := parseBatches(batches, one[:0])
	if err != nil {
		return AppendInfo{}, fmt.Errorf("append: %w", err)
	}
	return l.append(batches, parsed, leaderEpoch, false)
}

// AppendParsed is Append of one batch whose header h the caller has already
// parsed (and validated, records.ValidateProduce), so that a produced batch
// has its header parsed once on its way from the socket to the file. batch
// must be exactly the batch h describes.
func (l *Log) AppendParsed(batch []byte, h records.Header, leaderEpoch int32) (AppendInfo, error) {
	if h.Magic != 2 || h.Length < records.HeaderSize-records.LogOverhead || h.TotalSize() != len(batch) {
		return AppendInfo{}, fmt.Errorf("append: header of a %d-byte batch (magic %d) for %d bytes", h.TotalSize(), h.Magic, len(batch))
	}
	one := [1]appendBatch{{h: h}}
	return l.append(batch, one[:], leaderEpoch, false)
}

// AppendAsFollower writes batches fetched from the partition's leader as
// they are: offsets and partition leader epochs were assigned by the leader
// and are kept. The first batch must start at or after the log end (a
// compacted leader log may skip offsets), and base offsets must increase;
// otherwise it returns an error wrapping ErrUnexpectedAppendOffset and
// writes nothing. Each batch whose leader epoch is newer than the latest in
// the leader-epoch cache starts that epoch at its base offset, as on
// Kafka's followers. Durability and failure handling are those of Append.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	parsed, err := parseBatches(batches, nil)
	if err != nil {
		return AppendInfo{}, fmt.Errorf("append: %w", err)
	}
	return l.append(batches, parsed, UndefinedEpoch, true)
}

// ErrUnexpectedAppendOffset reports follower batches that do not continue
// the log (Kafka's UnexpectedAppendOffsetException).
var ErrUnexpectedAppendOffset = errors.New("batches do not continue the log")

// append writes batches, split into parsed, at the log end.
func (l *Log) append(batches []byte, parsed []appendBatch, leaderEpoch int32, follower bool) (AppendInfo, error) {
	if len(batches) > math.MaxInt32 {
		return AppendInfo{}, fmt.Errorf("append %d bytes: larger than a segment can hold", len(batches))
	}
	var err error
	var info AppendInfo
	var rolledTo int64
	var needFlush bool
	var after afterAppend
	for synced := false; ; synced = true {
		info, rolledTo, needFlush, after, err = l.appendLocked(batches, parsed, leaderEpoch, follower, synced)
		if !errors.Is(err, errRollNeedsSync) {
			break
		}
		if err := l.Flush(); err != nil {
			l.reportOffline()
			return AppendInfo{}, fmt.Errorf("append: fsync before segment roll: %w", err)
		}
	}
	if err != nil {
		l.reportOffline()
		return AppendInfo{}, err
	}
	if after.unflushed != nil {
		after.unflushed(l, after.interval)
	}
	if rolledTo >= 0 {
		// As Kafka, make the segments before the new one durable so the
		// recovery point advances past them: in the Dir's background
		// goroutine if there is one, else here.
		if after.rollFlush != nil {
			after.rollFlush(rolledTo)
		} else if err := l.flushTo(rolledTo); err != nil {
			// The log is offline now; this append's own write was clean.
			l.logger.Error("fsync after segment roll failed", "err", err)
		}
	}
	if needFlush {
		if err := l.Flush(); err != nil {
			// Offline now. Take the batch back out, so that the log end
			// never covers data whose append failed.
			if terr := l.truncateBack(info.FirstOffset, info.LastOffset+1); terr != nil {
				l.logger.Error("cannot remove an append whose fsync failed", "first_offset", info.FirstOffset, "err", terr)
			}
			return AppendInfo{}, fmt.Errorf("append at %d: written but not flushed: %w", info.FirstOffset, err)
		}
	}
	return info, nil
}

// errRollNeedsSync asks Append to fsync the active segment before it rolls.
var errRollNeedsSync = errors.New("segment roll needs an fsync first")

// appendLocked assigns offsets, rolls if needed and writes under mu.
// rolledTo is the base of a segment rolled to, or -1. Unless synced, a roll
// of a segment with unsynced bytes returns errRollNeedsSync without
// changing anything (see rollLocked).
func (l *Log) appendLocked(b []byte, parsed []appendBatch, leaderEpoch int32, follower, synced bool) (info AppendInfo, rolledTo int64, needFlush bool, after afterAppend, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rolledTo = -1
	if l.mu.closed {
		return info, rolledTo, false, afterAppend{}, ErrClosed
	}
	after.rollFlush = l.mu.rollFlush
	if l.mu.offline != nil {
		return info, rolledTo, false, afterAppend{}, fmt.Errorf("append: %w", l.mu.offline)
	}
	// An epoch assigned deferred is written before a record follows it.
	if err := l.mu.epochs.writeIfUnwritten(); err != nil {
		return info, rolledTo, false, afterAppend{}, fmt.Errorf("append: leader epoch checkpoint: %w", l.appendRefusedLocked(err))
	}
	first := l.mu.leo
	if follower {
		if parsed[0].h.BaseOffset < first {
			return info, rolledTo, false, afterAppend{}, fmt.Errorf("follower append at %d: log ends at %d: %w", parsed[0].h.BaseOffset, first, ErrUnexpectedAppendOffset)
		}
		first = parsed[0].h.BaseOffset
	}
	next := first
	info = AppendInfo{FirstOffset: first, MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, Bytes: len(b)}
	// epochStarts are the leader epochs these batches start (follower).
	var epochStarts []EpochEntry
	for i := range parsed {
		p := &parsed[i]
		if follower {
			if p.h.BaseOffset < next {
				return info, rolledTo, false, afterAppend{}, fmt.Errorf("follower append: batch at %d after offset %d: %w", p.h.BaseOffset, next-1, ErrUnexpectedAppendOffset)
			}
			latest := l.mu.epochs.latest()
			if n := len(epochStarts); n > 0 {
				latest = epochStarts[n-1].Epoch
			}
			if p.h.PartitionLeaderEpoch > latest {
				epochStarts = append(epochStarts, EpochEntry{Epoch: p.h.PartitionLeaderEpoch, StartOffset: p.h.BaseOffset})
			}
		} else {
			records.SetBaseOffset(b[p.pos:], next)
			records.SetPartitionLeaderEpoch(b[p.pos:], leaderEpoch)
			p.h.BaseOffset, p.h.PartitionLeaderEpoch = next, leaderEpoch
		}
		next = p.h.NextOffset()
		if p.h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = p.h.MaxTimestamp, p.h.LastOffset()
		}
	}
	info.LastOffset = next - 1
	info.Records = next - first
	now := l.cfg.Now()

	s := l.mu.segments[len(l.mu.segments)-1]
	if s.size > 0 && (s.size+int64(len(b)) > l.cfg.SegmentBytes ||
		now.Sub(s.rollStart).Milliseconds() > l.cfg.SegmentMs || !s.canHold(info.LastOffset)) {
		if s.dirty && !synced {
			return info, rolledTo, false, afterAppend{}, errRollNeedsSync
		}
		if s, err = l.rollLocked(); err != nil {
			return info, rolledTo, false, afterAppend{}, fmt.Errorf("append at %d: %w", first, err)
		}
		rolledTo = s.base
	}

	epochsBefore := l.mu.epochs.entries
	assigned := false
	if follower {
		for _, e := range epochStarts {
			assigned = l.mu.epochs.assign(e.Epoch, e.StartOffset) || assigned
		}
	} else {
		assigned = leaderEpoch > l.mu.epochs.latest() && l.mu.epochs.assign(leaderEpoch, first)
	}
	if assigned {
		if err := l.mu.epochs.persist(); err != nil {
			l.mu.epochs.entries = epochsBefore
			return info, rolledTo, false, afterAppend{}, fmt.Errorf("append at %d: leader epoch checkpoint: %w", first, l.appendRefusedLocked(err))
		}
	}
	if err := l.writeLocked(s, b, parsed); err != nil {
		if assigned {
			l.mu.epochs.entries = epochsBefore
			if perr := l.mu.epochs.persist(); perr != nil {
				l.logger.Error("restoring leader-epoch-checkpoint after failed append", "err", perr)
			}
		}
		return info, rolledTo, false, afterAppend{}, fmt.Errorf("append at %d: %w", first, err)
	}
	if s.rollStart.IsZero() {
		s.rollStart = now
	}
	l.setLEOLocked(next)
	if l.mu.writeback != nil {
		if j, ok := writebackDue(s, l.mu.writebackEvery); ok {
			l.mu.writeback(j)
		}
	}
	if l.mu.unflushedRecords == 0 {
		l.mu.unflushedSince = now
		if ms := l.cfg.FlushIntervalMs; ms != math.MaxInt64 && l.mu.onUnflushed != nil {
			after.unflushed, after.interval = l.mu.onUnflushed, flushInterval(ms)
		}
	}
	l.mu.unflushedRecords += info.Records
	return info, rolledTo, l.mu.unflushedRecords >= l.cfg.FlushIntervalMessages, after, nil
}

// appendRefusedLocked is the error of an append that failed and left
// nothing behind: a segment write truncated back, or a leader epoch
// checkpoint that could not be written (its file on disk then holds no
// entry past the log end: an entry that no record follows is dropped at
// load). The log goes offline only in a dir with WriteErrorsOffline, as
// Kafka takes a log dir offline on any IOException, and never for running
// out of descriptors or a file closed under the write (not disk
// failures); otherwise the next append tries again.
func (l *Log) appendRefusedLocked(err error) error {
	if l.cfg.writeErrorsOffline && !isFDExhausted(err) && !errors.Is(err, fs.ErrClosed) {
		return l.failLocked(err)
	}
	return err
}

// writeLocked writes b at the end of s in one write and indexes it; on
// failure it restores s and the files as they were.
func (l *Log) writeLocked(s *segment, b []byte, parsed []appendBatch) error {
	start := s.size
	if err := l.writeAt(s, b, start); err != nil {
		// Undo the partial write; if that fails the log goes offline, since
		// the bytes after the log end are no longer known.
		cause := fmt.Errorf("write %s: %w", s, err)
		var terr error
		if f := l.cfg.truncateFault; f != nil {
			terr = f(s.String())
		}
		if terr == nil {
			terr = s.log.Truncate(start)
		}
		if terr != nil {
			return l.failLocked(fmt.Errorf("%w; removing the partial write at position %d of %s failed: %w", cause, start, s, terr))
		}
		return l.appendRefusedLocked(cause)
	}
	for _, p := range parsed {
		s.track(p.h, start+int64(p.pos), p.h.TotalSize(), l.cfg.IndexIntervalBytes)
	}
	s.dirty = true
	l.appended.Add(int64(len(b)))
	return nil
}

// BytesAppended is the count of bytes appended since the log was opened,
// increasing (truncation and retention do not lower it). A parked fetch
// compares it with what it saw when it parked to know how much arrived
// without reading (replica's delayed fetch).
func (l *Log) BytesAppended() int64 { return l.appended.Load() }

// writeAt writes b at pos of s's log file, honouring Config.WriteFault.
func (l *Log) writeAt(s *segment, b []byte, pos int64) error {
	if l.cfg.WriteFault != nil {
		if n, err := l.cfg.WriteFault(s.String(), len(b)); err != nil {
			if n = min(max(n, 0), len(b)); n > 0 {
				_, _ = s.log.WriteAt(b[:n], pos)
			}
			return err
		}
	}
	_, err := s.log.WriteAt(b, pos)
	return err
}

// rollLocked seals the active segment and starts a new one at the log end.
//
// Callers fsync the active segment first (without holding mu, so appends
// and reads go on meanwhile): the new file may reach the disk at any time
// (a journal commit), and a crash must not leave it behind a segment whose
// tail was lost, a gap in the offsets no recovery can tell from compaction.
func (l *Log) rollLocked() (*segment, error) {
	old := l.mu.segments[len(l.mu.segments)-1]
	if err := old.seal(); err != nil {
		return nil, fmt.Errorf("roll: %w", err)
	}
	s, _, _, err := openSegment(l.fs, l.files, l.dir, l.mu.leo, true)
	if err != nil {
		return nil, fmt.Errorf("roll: %w", err)
	}
	if err := s.pin(); err != nil {
		s.remove()
		return nil, fmt.Errorf("roll: %w", err)
	}
	s.dirty = true
	l.mu.dirDirty = true
	l.mu.segments = append(l.mu.segments, s)
	return s, nil
}

// Roll starts a new active segment at the log end offset if the active
// segment is not empty, and makes the old one durable.
func (l *Log) Roll() error {
	if err := l.Flush(); err != nil {
		return fmt.Errorf("roll: %w", err)
	}
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.mu.offline != nil {
		l.mu.Unlock()
		return fmt.Errorf("roll: %w", l.mu.offline)
	}
	if l.mu.segments[len(l.mu.segments)-1].size == 0 {
		l.mu.Unlock()
		return nil
	}
	s, err := l.rollLocked()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	return l.flushTo(s.base)
}

// LogStartOffset is the first offset that may be read.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset is the offset the next appended record will get (LEO).
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// setLEOLocked sets the log end offset. l.mu must be held for writing.
func (l *Log) setLEOLocked(leo int64) {
	l.mu.leo = leo
	l.leo.Store(leo)
}

// setLogStartLocked sets the log start offset. l.mu must be held for writing.
func (l *Log) setLogStartLocked(start int64) {
	l.mu.logStart = start
	l.logStart.Store(start)
}

// RecoveryPoint is the offset below which every batch is fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.recoveryPoint
}

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segments {
		n += s.size
	}
	return n
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// LeaderEpochs returns a copy of the leader epoch cache, oldest first.
func (l *Log) LeaderEpochs() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]EpochEntry(nil), l.mu.epochs.entries...)
}

// LatestEpoch is the newest leader epoch in the cache, or UndefinedEpoch.
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.latest()
}

// EndOffsetForEpoch answers OffsetsForLeaderEpoch (KIP-101) as Kafka's
// LeaderEpochFileCache.endOffsetFor: for the latest epoch, the log end
// offset; for an older one, the largest known epoch <= it and the start
// offset of the next known epoch; (-1, -1) if unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (epochOut int32, endOffset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.endOffsetFor(epoch, l.mu.leo)
}
