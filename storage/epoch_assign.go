package storage

import "fmt"

// AssignEpoch records that leader epoch epoch starts at the current log end
// offset, as Kafka's Partition.makeLeader does when this replica becomes
// leader: from then on OffsetForLeaderEpoch for the previous epoch answers
// where this leader's log diverged from it, even before the new leader has
// appended anything (KIP-101, KIP-279). An epoch not newer than the latest
// one in the cache changes nothing.
func (l *Log) AssignEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.offline != nil {
		return fmt.Errorf("assign epoch %d to log %s: %w", epoch, l.dir, l.mu.offline)
	}
	if epoch <= l.mu.epochs.latest() {
		return nil
	}
	before := l.mu.epochs.entries
	if !l.mu.epochs.assign(epoch, l.mu.leo) {
		return nil
	}
	if err := l.mu.epochs.persist(); err != nil {
		l.mu.epochs.entries = before
		return fmt.Errorf("assign epoch %d to log %s: %w", epoch, l.dir, err)
	}
	return nil
}
