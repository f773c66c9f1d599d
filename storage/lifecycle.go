package storage

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// Flush fsyncs every segment written since the last flush (log and index
// files) and advances the recovery point to the log end offset.
func (l *Log) Flush() error { return l.flushTo(math.MaxInt64) }

// flushTo fsyncs the dirty segments holding offsets below upTo (all dirty
// segments if upTo reaches the log end) and raises the recovery point to
// upTo. The fsyncs run without mu, so appends and reads continue.
func (l *Log) flushTo(upTo int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.mu.offline != nil {
		// A retried fsync may succeed without the data that the failed one
		// lost: the recovery point must never move again.
		err := l.mu.offline
		l.mu.Unlock()
		return fmt.Errorf("flush log %s: %w", l.dir, err)
	}
	all := upTo >= l.mu.leo
	upTo = min(upTo, l.mu.leo)
	var dirty []*segment
	var writes []indexWrite
	for _, s := range l.mu.segments {
		if s.dirty && (all || s.base < upTo) {
			s.dirty = false
			dirty = append(dirty, s)
			writes = append(writes, s.pendingIndex())
		}
	}
	dirDirty := l.mu.dirDirty
	l.mu.dirDirty = false
	syncFault := l.cfg.syncFault
	pending, since := int64(0), time.Time{}
	if all {
		pending, since = l.mu.unflushedRecords, l.mu.unflushedSince
		l.mu.unflushedRecords, l.mu.unflushedSince = 0, time.Time{}
	}
	l.mu.Unlock()

	var err error
	synced := 0
	for i, s := range dirty {
		if syncFault != nil {
			err = syncFault(s.String())
		}
		if err == nil {
			var created bool
			created, err = s.syncFiles(writes[i])
			dirDirty = dirDirty || created
		}
		if err != nil {
			break
		}
		synced++
	}
	if err == nil && dirDirty {
		err = vfs.SyncDir(l.fs, l.dir)
	}

	l.mu.Lock()
	active := l.mu.segments[len(l.mu.segments)-1]
	for i, s := range dirty[:synced] {
		s.indexWritten(writes[i], nil)
		if s != active && !s.dirty {
			// Synced and inactive: its descriptor may go back to the cache.
			s.unpin()
		}
	}
	if err != nil {
		for i, s := range dirty[synced:] {
			s.indexWritten(writes[synced+i], err)
		}
		for _, s := range dirty {
			s.dirty = true
		}
		l.mu.dirDirty = l.mu.dirDirty || dirDirty
		l.mu.unflushedRecords += pending
		if !since.IsZero() && (l.mu.unflushedSince.IsZero() || since.Before(l.mu.unflushedSince)) {
			l.mu.unflushedSince = since
		}
		if isFDExhausted(err) {
			// Out of descriptors is no disk failure: nothing was lost,
			// a later flush retries.
			l.mu.Unlock()
			return fmt.Errorf("flush log %s: %w", l.dir, wrapOpenErr(err))
		}
		err = l.failLocked(err)
		l.mu.Unlock()
		l.reportOffline()
		return fmt.Errorf("flush log %s: %w", l.dir, err)
	}
	l.mu.recoveryPoint = max(l.mu.recoveryPoint, upTo)
	l.mu.Unlock()
	return nil
}

// flushDueIn is how long until the log's oldest unflushed append is
// FlushIntervalMs old (<= 0: due now); false if the log is closed, holds
// no unflushed record or has no flush interval.
func (l *Log) flushDueIn() (time.Duration, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	ms := l.cfg.FlushIntervalMs
	if ms == math.MaxInt64 || l.mu.unflushedSince.IsZero() || l.mu.closed {
		return 0, false
	}
	return flushInterval(ms) - l.cfg.Now().Sub(l.mu.unflushedSince), true
}

// flushInterval is a FlushIntervalMs as a Duration, capped where a
// Duration ends (about 292 years).
func flushInterval(ms int64) time.Duration {
	return time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
}

// TruncateTo removes every record at and after offset, which must be a
// batch boundary or the log end offset; truncating below the log start
// offset empties the log and restarts it at offset. Leader epochs starting
// at or after the new log end are dropped. Used by followers (KIP-101).
func (l *Log) TruncateTo(offset int64) error {
	return l.truncate(l.truncateToLocked, offset)
}

// truncate runs cut(offset) with the log's locks held, on an open, online log.
func (l *Log) truncate(cut func(int64) error, offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.offline != nil {
		return fmt.Errorf("truncate log %s: %w", l.dir, l.mu.offline)
	}
	return cut(offset)
}

// TruncateFullyAndStartAt removes every segment and restarts the log,
// empty, at offset: what a follower does when the leader's log starts after
// the follower's log end (Kafka's truncateFullyAndStartAt). The leader-epoch
// cache is emptied; the next follower append fills it again.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("truncate log %s fully: negative start offset %d", l.dir, offset)
	}
	return l.truncate(l.truncateFullyLocked, offset)
}

// truncateBack removes a failed append, [first, end), from the log end. It
// runs on an offline log, since it only takes back what was just written.
func (l *Log) truncateBack(first, end int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.leo != end {
		return fmt.Errorf("log end %d moved from %d", l.mu.leo, end)
	}
	return l.truncateToLocked(first)
}

// truncateToLocked is TruncateTo with flushMu and mu held.
func (l *Log) truncateToLocked(offset int64) error {
	switch {
	case offset > l.mu.leo || offset < 0:
		return fmt.Errorf("truncate log %s to %d: beyond [0, %d]", l.dir, offset, l.mu.leo)
	case offset == l.mu.leo:
		// Nothing to cut but an epoch that starts at the end, which
		// this replica assigned when it led (AssignEpoch) and no
		// record followed, as Kafka's truncateTo: left, it would be the
		// log's latest epoch and a follower's LastFetchedEpoch that
		// its new leader never had (answered with a DivergingEpoch
		// that cuts nothing, again and again).
		if l.mu.epochs.truncateFromEnd(offset) {
			l.mu.epochs.persistLater() // written before the next record, as AssignEpoch
		}
		return nil
	case offset < l.mu.logStart:
		return l.truncateFullyLocked(offset)
	}
	i := l.segmentIndex(offset)
	s := l.mu.segments[i]
	pos, h, found, err := findBatch(s.view(), offset)
	if err != nil {
		return fmt.Errorf("truncate log %s to %d: %w", l.dir, offset, err)
	}
	if found && h.BaseOffset != offset {
		return fmt.Errorf("truncate log %s to %d: inside batch [%d, %d]", l.dir, offset, h.BaseOffset, h.LastOffset())
	}
	if !found && offset != s.next {
		return fmt.Errorf("truncate log %s to %d: not a batch boundary of segment %d", l.dir, offset, s.base)
	}
	l.mu.gen++
	for _, later := range l.mu.segments[i+1:] {
		if err := l.dropSegmentLocked(later); err != nil {
			return fmt.Errorf("truncate log %s to %d: %w", l.dir, offset, err)
		}
	}
	l.mu.segments = l.mu.segments[: i+1 : i+1]
	if err := s.pin(); err != nil {
		return fmt.Errorf("truncate log %s to %d: %w", l.dir, offset, err)
	}
	if err := l.truncateSegmentLocked(s, pos); err != nil {
		return fmt.Errorf("truncate log %s to %d: %w", l.dir, offset, err)
	}
	if s.size == 0 {
		s.next = offset
	}
	if s.next != offset {
		return fmt.Errorf("truncate log %s to %d: segment ends at %d after truncation", l.dir, offset, s.next)
	}
	if err := l.truncateTxnIndexLocked(s, offset); err != nil {
		return fmt.Errorf("truncate log %s to %d: %w", l.dir, offset, err)
	}
	l.setLEOLocked(offset)
	return l.afterTruncateLocked()
}

// truncateSegmentLocked cuts s at file position pos (a batch boundary) and
// recomputes its indexes and tracked state from what remains.
func (l *Log) truncateSegmentLocked(s *segment, pos int64) error {
	if err := s.log.Truncate(pos); err != nil {
		return fmt.Errorf("truncate %s: %w", s, err)
	}
	keep := 0
	for keep < len(s.index) && int64(s.index[keep].pos) < pos {
		keep++
	}
	// Copies, so readers holding the old slices never see them overwritten.
	s.index = append([]indexEntry(nil), s.index[:keep]...)
	from, lastIndexed := int64(0), int64(-1)
	if keep > 0 {
		from, lastIndexed = int64(s.index[keep-1].pos), s.index[keep-1].offset
	}
	// The last kept time entry covers every batch up to lastIndexed; the
	// scan below accounts for the batches after it.
	n := 0
	for n < len(s.times) && s.times[n].offset <= lastIndexed {
		n++
	}
	s.times = append([]timeEntry(nil), s.times[:n]...)
	s.maxTs, s.maxTsOffset = -1, -1
	if n > 0 {
		s.maxTs, s.maxTsOffset = s.times[n-1].ts, s.times[n-1].offset
	}
	s.next, s.bytesSinceIndex = s.base, 0
	tail, err := s.scan(from, pos, s.base, false, l.cfg.IndexIntervalBytes)
	if err != nil {
		return err
	}
	if tail != nil {
		return tail
	}
	s.dirty = true
	return s.writeIndexes()
}

// truncateFullyLocked removes every segment and restarts the log, empty, at offset.
func (l *Log) truncateFullyLocked(offset int64) error {
	l.mu.gen++
	for _, s := range l.mu.segments {
		if err := l.dropSegmentLocked(s); err != nil {
			return fmt.Errorf("truncate log %s fully: %w", l.dir, err)
		}
	}
	l.mu.segments = nil
	s, _, _, err := openSegment(l.fs, l.files, l.dir, offset, true)
	if err != nil {
		return fmt.Errorf("truncate log %s fully: %w", l.dir, err)
	}
	if err := s.pin(); err != nil {
		s.remove()
		return fmt.Errorf("truncate log %s fully: %w", l.dir, err)
	}
	s.dirty = true
	l.mu.dirDirty = true
	l.mu.segments = []*segment{s}
	l.setLogStartLocked(offset)
	l.setLEOLocked(offset)
	l.mu.epochs.entries = nil
	if err := l.mu.epochs.persist(); err != nil {
		return err
	}
	l.mu.recoveryPoint = offset
	return nil
}

// afterTruncateLocked fixes the recovery point and epoch cache after the
// log end moved back.
func (l *Log) afterTruncateLocked() error {
	l.mu.recoveryPoint = min(l.mu.recoveryPoint, l.mu.leo)
	l.mu.dirDirty = true
	if l.mu.epochs.truncateFromEnd(l.mu.leo) {
		if err := l.mu.epochs.persist(); err != nil {
			return err
		}
	}
	return nil
}

// SetLogStartOffset raises the log start offset to offset (DeleteRecords,
// or a value restored from log-start-offset-checkpoint). Lower values are
// ignored; values beyond the log end are an error. Segments wholly below the
// new start are deleted and the epoch cache is trimmed as Kafka's
// truncateFromStart.
func (l *Log) SetLogStartOffset(offset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.offline != nil {
		return fmt.Errorf("log %s: set start offset: %w", l.dir, l.mu.offline)
	}
	if offset > l.mu.leo {
		return fmt.Errorf("log %s: start offset %d beyond log end %d", l.dir, offset, l.mu.leo)
	}
	if offset <= l.mu.logStart {
		return nil
	}
	l.setLogStartLocked(offset)
	segs := l.mu.segments
	drop := 0
	for drop < len(segs)-1 && segs[drop+1].base <= offset {
		drop++
	}
	if drop > 0 {
		l.mu.gen++
		for _, s := range segs[:drop] {
			if err := l.dropSegmentLocked(s); err != nil {
				return err
			}
		}
		l.mu.segments = append([]*segment(nil), segs[drop:]...)
		l.mu.dirDirty = true
	}
	if l.mu.epochs.truncateFromStart(offset) {
		return l.mu.epochs.persist()
	}
	return nil
}

// Close seals the active segment's time index, fsyncs everything unflushed
// and closes the files. Further calls return nil; other methods return
// ErrClosed. An offline log is closed without writing and Close returns its
// offline error, so its dir is not marked cleanly shut down.
func (l *Log) Close() error {
	_, err := l.close(true)
	return err
}

// closeForSyncFS is Close for a Dir that makes its whole file system
// durable at once afterwards (Dir.Close, vfs.SyncFS): it writes what
// Close writes but fsyncs nothing, and leaves the recovery point where it
// is; the Dir calls closedDurable once its sync succeeded. needsSync
// reports that something of the log is not durable yet: written since its
// last flush (appends, index entries, a producer snapshot, directory
// entries), or written by this close.
func (l *Log) closeForSyncFS() (needsSync bool, err error) { return l.close(false) }

// closedDurable raises the recovery point of a log closed by
// closeForSyncFS to its end, once everything it wrote is durable.
func (l *Log) closedDurable() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed && l.mu.offline == nil {
		l.mu.recoveryPoint = l.mu.leo
	}
}

// close is Close, fsyncing what it writes (and the unflushed data) only
// if fsync is set; if not, deferred reports that something is left to
// sync (see closeForSyncFS).
func (l *Log) close(fsync bool) (deferred bool, err error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return false, nil
	}
	if l.mu.offline != nil {
		for _, s := range l.mu.segments {
			s.close()
		}
		l.mu.closed = true
		return false, fmt.Errorf("close log %s: %w", l.dir, l.mu.offline)
	}
	var errs []error
	if n := len(l.mu.segments); n > 0 {
		errs = append(errs, l.mu.segments[n-1].seal())
	}
	var syncErrs []error
	dirDirty := l.mu.dirDirty
	deferred = !fsync && dirDirty
	for _, s := range l.mu.segments {
		// A segment without its index files gets them (Kafka would
		// otherwise recover it when it opens the dir).
		if s.dirty || s.idxMissing {
			if f := l.cfg.syncFault; f != nil {
				// Without fsync too: the failed write-back shows in the
				// Dir's sync of the file system.
				syncErrs = append(syncErrs, f(s.String()))
			}
			if !fsync {
				syncErrs = append(syncErrs, s.writeUnsynced())
				deferred = true
				continue
			}
			created, err := s.sync()
			syncErrs = append(syncErrs, err)
			dirDirty = dirDirty || created
		}
	}
	if dirDirty && fsync {
		syncErrs = append(syncErrs, vfs.SyncDir(l.fs, l.dir))
	}
	if err := errors.Join(syncErrs...); err != nil {
		errs = append(errs, l.failLocked(err))
	}
	for _, s := range l.mu.segments {
		errs = append(errs, s.close())
	}
	l.mu.closed = true
	if err := errors.Join(errs...); err != nil {
		return deferred, fmt.Errorf("close log %s: %w", l.dir, err)
	}
	if fsync {
		l.mu.recoveryPoint = l.mu.leo
	}
	return deferred, nil
}

// closeFiles closes the log without flushing, as a process exit would:
// what was written stays in the page cache and reaches the disk in time.
// Further calls return nil; other methods return ErrClosed.
func (l *Log) closeFiles() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	var errs []error
	for _, s := range l.mu.segments {
		errs = append(errs, s.close())
	}
	l.mu.closed = true
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close log %s: %w", l.dir, err)
	}
	return nil
}

// Delete closes the log without flushing and removes its directory at once.
// A Dir's logs are removed with Dir.Remove instead, which keeps the files
// for file.delete.delay.ms.
func (l *Log) Delete() error {
	err := l.closeFiles()
	if rerr := l.fs.RemoveAll(l.dir); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("delete log %s: %w", l.dir, err)
	}
	return nil
}
