package storage

import (
	"fmt"
	"math"
	"time"
)

// SetConfig replaces the log's configuration while it is open (a topic's
// config was altered). The new segment size and roll time apply from the
// next append; the clock, the logger, the file system and what the log's
// Dir set (its descriptor cache, WriteErrorsOffline, its way of closing)
// are kept. Zero fields mean defaults.
func (l *Log) SetConfig(cfg Config) error {
	cfg.Now, cfg.Logger = nil, nil
	cfg, err := cfg.withDefaults()
	if err != nil {
		return fmt.Errorf("log %s: %w", l.dir, err)
	}
	l.mu.Lock()
	cfg.Now, cfg.Logger, cfg.FS, cfg.files = l.cfg.Now, l.cfg.Logger, l.cfg.FS, l.cfg.files
	cfg.writeErrorsOffline, cfg.closeSyncsFS = l.cfg.writeErrorsOffline, l.cfg.closeSyncsFS
	cfg.syncFault, cfg.truncateFault = l.cfg.syncFault, l.cfg.truncateFault
	l.cfg = cfg
	hook, since := l.mu.onUnflushed, l.mu.unflushedSince
	l.mu.Unlock()
	if hook != nil && !since.IsZero() && cfg.FlushIntervalMs != math.MaxInt64 {
		// A flush interval on a log with unflushed records: the Dir's
		// flusher must watch it from now on.
		hook(l, max(flushInterval(cfg.FlushIntervalMs)-cfg.Now().Sub(since), 0))
	}
	return nil
}

// config returns the current configuration; fields of l.cfg may only be
// read without mu by code running before the log is shared.
func (l *Log) config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// FirstDirtyOffset is the cleaner's position: the segments below it have
// been compacted. It is checkpointed in cleaner-offset-checkpoint.
func (l *Log) FirstDirtyOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return max(l.mu.firstDirty, l.mu.logStart)
}

// setFirstDirty restores the cleaner's position from its checkpoint.
func (l *Log) setFirstDirty(o int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.firstDirty = min(max(o, 0), l.mu.leo)
}

// ApplyRetention deletes the oldest closed segments that break the
// retention limits, as Kafka's deleteRetentionMsBreachedSegments and
// deleteRetentionSizeBreachedSegments: first every leading segment whose
// largest timestamp is more than retentionMs before now (-1: no limit; a
// segment without timestamps is judged by its file's modification time),
// then leading segments while the log stays at or above retentionBytes
// without them (-1: no limit). The active segment is never deleted; only
// whole segments are. The log start offset moves to the new first segment.
func (l *Log) ApplyRetention(now time.Time, retentionMs, retentionBytes int64) (deleted int, err error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return 0, ErrClosed
	}
	segs := l.mu.segments
	closed := segs[:len(segs)-1]
	n := 0
	if retentionMs >= 0 {
		nowMs := now.UnixMilli()
		for n < len(closed) && nowMs-segmentTime(closed[n]) > retentionMs {
			n++
		}
	}
	if retentionBytes >= 0 {
		var size int64
		for _, s := range segs[n:] {
			size += s.size
		}
		diff := size - retentionBytes
		for n < len(closed) && diff-closed[n].size >= 0 {
			diff -= closed[n].size
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, l.dropLeadingLocked(n, "retention")
}

// segmentTime is the time retention judges a segment by: its largest
// timestamp, or its file's modification time if it has none.
func segmentTime(s *segment) int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	if st, err := s.fs.Stat(s.String()); err == nil {
		return st.ModTime().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// dropLeadingLocked deletes the first n segments (never the last) and moves
// the log start offset to the next one. Callers hold flushMu and mu.
func (l *Log) dropLeadingLocked(n int, why string) error {
	segs := l.mu.segments
	n = min(n, len(segs)-1)
	if n <= 0 {
		return nil
	}
	l.mu.gen++
	l.mu.dirDirty = true
	var firstErr error
	removed := 0
	for _, s := range segs[:n] {
		if err := l.dropSegmentLocked(s); err != nil {
			firstErr = err
			break
		}
		removed++
	}
	if removed == 0 {
		return fmt.Errorf("log %s: %s: %w", l.dir, why, firstErr)
	}
	l.mu.segments = append([]*segment(nil), segs[removed:]...)
	newStart := l.mu.segments[0].base
	l.logger.Info("deleted segments", "reason", why, "segments", removed,
		"log_start_offset", max(l.mu.logStart, newStart))
	l.setLogStartLocked(max(l.mu.logStart, newStart))
	l.mu.recoveryPoint = max(l.mu.recoveryPoint, min(l.mu.logStart, l.mu.leo))
	if l.mu.epochs.truncateFromStart(l.mu.logStart) {
		if err := l.mu.epochs.persist(); err != nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return fmt.Errorf("log %s: %s: %w", l.dir, why, firstErr)
	}
	return nil
}
