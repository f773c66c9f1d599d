package storage

import (
	"errors"
	"fmt"
)

// AssignEpoch records that leader epoch epoch starts at the current log end
// offset, as Kafka's Partition.makeLeader does when this replica becomes
// leader: from then on OffsetForLeaderEpoch for the previous epoch answers
// where this leader's log diverged from it, even before the new leader has
// appended anything (KIP-101, KIP-279). An epoch not newer than the latest
// one in the cache changes nothing. The checkpoint is durable when it
// returns.
func (l *Log) AssignEpoch(epoch int32) error {
	_, err := l.assignEpoch(epoch, false)
	return err
}

// AssignEpochDeferred is AssignEpoch with the checkpoint written but not
// yet durable: SyncEpochs (or the log's next append, truncation or close,
// whichever comes first) makes it durable. Until then the log appends
// nothing, so no record of the epoch is ever on disk before the epoch's
// entry is; a crash before the sync loses only the entry, as a crash just
// before the assignment would. It reports whether anything was written
// (false when the epoch is not newer than the latest).
//
// A broker applying a LeaderAndIsr for many partitions assigns each
// deferred and syncs them together, concurrently: one fsync after another
// made a failover at 30,000 partitions spend seconds on them (issue 26).
func (l *Log) AssignEpochDeferred(epoch int32) (written bool, err error) {
	return l.assignEpoch(epoch, true)
}

func (l *Log) assignEpoch(epoch int32, deferred bool) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return false, ErrClosed
	}
	if l.mu.offline != nil {
		return false, fmt.Errorf("assign epoch %d to log %s: %w", epoch, l.dir, l.mu.offline)
	}
	if epoch <= l.mu.epochs.latest() {
		return false, nil
	}
	before := l.mu.epochs.entries
	if !l.mu.epochs.assign(epoch, l.mu.leo) {
		return false, nil
	}
	persist := l.mu.epochs.persist
	if deferred {
		persist = l.mu.epochs.persistDeferred
	}
	if err := persist(); err != nil {
		l.mu.epochs.entries = before
		return false, fmt.Errorf("assign epoch %d to log %s: %w", epoch, l.dir, err)
	}
	return true, nil
}

// SyncEpochs makes the checkpoint of an AssignEpochDeferred durable (nothing
// if there is none). A failure takes the log offline: whether the entry
// reached the disk is unknown.
func (l *Log) SyncEpochs() error {
	l.mu.Lock()
	err := l.syncEpochsLocked()
	l.mu.Unlock()
	if err != nil {
		l.reportOffline()
	}
	return err
}

// syncEpochsLocked is SyncEpochs under mu; on a failure the log is
// offline and the caller reports it (reportOffline) once mu is released.
func (l *Log) syncEpochsLocked() error {
	if !l.mu.epochs.unsynced || l.mu.closed {
		// A closed log committed it (Close) or was dropped unflushed on
		// purpose (a deleted replica, a simulated crash).
		return nil
	}
	if l.mu.offline != nil {
		return fmt.Errorf("sync leader epochs of log %s: %w", l.dir, l.mu.offline)
	}
	if err := l.mu.epochs.sync(); err != nil {
		return fmt.Errorf("sync leader epochs of log %s: %w", l.dir, l.failLocked(err))
	}
	return nil
}

// SyncEpochs runs Log.SyncEpochs of every log on up to workers goroutines
// and returns every failure.
func SyncEpochs(logs []*Log, workers int) error {
	errs := make([]error, len(logs))
	_ = inParallel(len(logs), workers, func(i int) error {
		errs[i] = logs[i].SyncEpochs()
		return nil
	})
	return errors.Join(errs...)
}
