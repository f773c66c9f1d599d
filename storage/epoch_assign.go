package storage

import "fmt"

// AssignEpoch records that leader epoch epoch starts at the current log end
// offset, as Kafka's Partition.makeLeader does when this replica becomes
// leader: from then on OffsetForLeaderEpoch for the previous epoch answers
// where this leader's log diverged from it, even before the new leader has
// appended anything (KIP-101, KIP-279). An epoch not newer than the latest
// one in the cache changes nothing.
//
// The checkpoint file is left as it is until a record follows the new
// entry: the log writes (and fsyncs) it before it appends its next
// record, so no record of an epoch is ever on disk without the epoch's
// entry. Writing it earlier (Kafka's assign does) buys nothing: opening a
// log drops the entries that start at or after its end (truncateFromEnd,
// as Kafka's log loading), so an entry no record follows never survives a
// restart anyway. A broker applying a LeaderAndIsr assigns thousands of
// epochs at once at a failover; a synced checkpoint write for each took
// most of the 30,000-partition failover's time here (issue 26).
func (l *Log) AssignEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	if l.mu.offline != nil {
		return fmt.Errorf("assign epoch %d to log %s: %w", epoch, l.dir, l.mu.offline)
	}
	if epoch > l.mu.epochs.latest() && l.mu.epochs.assign(epoch, l.mu.leo) {
		l.mu.epochs.persistLater()
	}
	return nil
}
