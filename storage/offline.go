package storage

import (
	"errors"
	"fmt"
)

// ErrLogDirOffline reports an operation on a log, or a log dir, that was
// taken offline by a failed fsync or by a failed write that could not be
// rolled back. Errors that wrap it are *OfflineError values carrying the
// cause. It maps to Kafka's KAFKA_STORAGE_ERROR.
var ErrLogDirOffline = errors.New("log dir offline")

// OfflineError is the sticky error of an offline log or log dir.
//
// Kafka takes a whole log dir offline on any I/O error. kbroker does so for
// the errors after which the bytes on disk are no longer known: a failed
// fsync (Linux may have dropped the dirty pages, so a retried fsync can
// succeed without the data — "fsyncgate") and a failed write whose partial
// bytes could not be truncated away. A write that failed (ENOSPC, EIO) and
// was cleanly truncated back leaves the log exactly as before, so appends
// stay allowed and resume when space returns: a deliberate improvement over
// Kafka, which would need a restart.
type OfflineError struct {
	Dir   string // the log (partition) directory where the failure happened
	Cause error
}

// Error names the directory and the cause.
func (e *OfflineError) Error() string {
	return fmt.Sprintf("log dir offline after a failed write or fsync in %s: %v", e.Dir, e.Cause)
}

// Unwrap makes errors.Is match both ErrLogDirOffline and the cause.
func (e *OfflineError) Unwrap() []error { return []error{ErrLogDirOffline, e.Cause} }

// failLocked takes the log offline for cause (the first cause sticks) and
// returns the sticky error. Callers hold mu and call reportOffline after
// releasing it.
func (l *Log) failLocked(cause error) error {
	if l.mu.offline == nil {
		l.mu.offline = &OfflineError{Dir: l.dir, Cause: cause}
		l.offline.Store(l.mu.offline)
		l.logger.Error("log taken offline: appends refused until restart; reads continue", "err", cause)
	}
	return l.mu.offline
}

// reportOffline tells the owning Dir, if any, that the log is offline.
func (l *Log) reportOffline() {
	l.mu.RLock()
	err, f := l.mu.offline, l.mu.onOffline
	l.mu.RUnlock()
	if err != nil && f != nil {
		f(err)
	}
}

// setOffline marks the log offline because its log dir went offline.
func (l *Log) setOffline(err *OfflineError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.offline == nil {
		l.mu.offline = err
		l.offline.Store(err)
	}
}

// Offline returns the error that took the log offline, or nil. An offline
// log refuses appends, rolls, truncation and flushes with it; reads of what
// is on disk keep working.
func (l *Log) Offline() error {
	if err := l.offline.Load(); err != nil {
		return err
	}
	return nil
}

// Offline returns the error that took the log dir offline, or nil: the
// first failed fsync or unrecoverable write of any of its logs. Every log
// of an offline dir refuses appends; DescribeLogDirs reports the dir with
// KAFKA_STORAGE_ERROR. It stays offline until the process restarts.
func (d *Dir) Offline() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.offline == nil {
		return nil
	}
	return d.mu.offline
}

// markOffline takes the dir and all its logs offline for err (the first
// error sticks).
func (d *Dir) markOffline(err *OfflineError) {
	d.mu.Lock()
	if d.mu.offline != nil {
		d.mu.Unlock()
		return
	}
	d.mu.offline = err
	logs := make([]*Log, 0, len(d.mu.logs))
	for _, l := range d.mu.logs {
		logs = append(logs, l)
	}
	d.mu.Unlock()
	d.logger.Error("log dir taken offline: appends to all its partitions are refused until restart", "err", err)
	for _, l := range logs {
		l.setOffline(err)
	}
	if d.cfg.OnOffline != nil {
		d.cfg.OnOffline(err)
	}
}
