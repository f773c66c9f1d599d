package isr

// UndefinedEpoch and UndefinedOffset are Kafka's sentinels (UNDEFINED_EPOCH,
// UNDEFINED_EPOCH_OFFSET) in OffsetForLeaderEpoch answers.
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// EpochEnd answers "where does epoch E end": the largest epoch at or below
// the one asked for, and the offset where it ends. It is what a log's
// leader-epoch cache answers (storage.Log.EndOffsetForEpoch) and what the
// leader returns in OffsetForLeaderEpoch.
type EpochEnd struct {
	Epoch     int32
	EndOffset int64
}

// Truncation is where a follower cuts its log after asking the leader.
type Truncation struct {
	// Offset is the new log end offset (the log keeps offsets below it).
	Offset int64
	// Done is false when the follower must ask the leader again, for the
	// epoch Again, before it may fetch (KIP-279: the leader answered with an
	// epoch the follower does not have).
	Done  bool
	Again int32
}

// Truncate decides how a follower whose log ends at localLEO truncates,
// given the leader's answer to OffsetForLeaderEpoch for the follower's latest
// epoch, and local, the follower's own lookup (its leader-epoch cache).
// It follows Kafka's AbstractFetcherThread (KIP-101, KIP-279):
//   - the leader knows no epoch (old format): cut to min(leader end, LEO);
//   - the follower has no epoch at or below the leader's: cut to
//     min(leader end, LEO);
//   - the follower's largest epoch at or below the leader's epoch differs from
//     it: cut to where that epoch ends locally and ask again for it;
//   - the same epoch: cut to min(leader end, local end of that epoch, LEO).
//
// The answer never exceeds localLEO. The high watermark hw is used only when
// the leader cannot answer at all (an undefined end offset: it has no epoch
// history), as Kafka does; otherwise truncating to the HW would lose
// acknowledged data (KIP-101's first case).
func Truncate(leader EpochEnd, local func(epoch int32) EpochEnd, localLEO, hw int64) Truncation {
	if leader.EndOffset == UndefinedOffset {
		return Truncation{Offset: min(hw, localLEO), Done: true}
	}
	if leader.Epoch == UndefinedEpoch {
		return Truncation{Offset: min(leader.EndOffset, localLEO), Done: true}
	}
	mine := local(leader.Epoch)
	if mine.Epoch == UndefinedEpoch || mine.EndOffset == UndefinedOffset {
		return Truncation{Offset: min(leader.EndOffset, localLEO), Done: true}
	}
	if mine.Epoch != leader.Epoch {
		return Truncation{Offset: min(mine.EndOffset, localLEO), Done: false, Again: mine.Epoch}
	}
	return Truncation{Offset: min(leader.EndOffset, mine.EndOffset, localLEO), Done: true}
}
