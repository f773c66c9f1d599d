package storage

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/kbroker/kbroker/protocol/records"
)

// replicate copies everything the leader holds from the follower's log end
// on, as a replica fetcher would, in fetches of at most maxBytes.
func replicate(t *testing.T, leader, follower *Log, maxBytes int) {
	t.Helper()
	for follower.LogEndOffset() < leader.LogEndOffset() {
		b, err := leader.Read(follower.LogEndOffset(), maxBytes, leader.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := follower.AppendAsFollower(b); err != nil {
			t.Fatalf("follower append at %d: %v", follower.LogEndOffset(), err)
		}
	}
}

func TestAppendAsFollowerKeepsOffsetsAndEpochs(t *testing.T) {
	cfg := Config{SegmentBytes: 4 << 10}
	leader, _ := openLog(t, cfg)
	follower, fdir := openLog(t, cfg)
	for epoch := int32(0); epoch < 3; epoch++ {
		for range 5 {
			mustAppend(t, leader, epoch*2, batchOf(3, 1_700_000_000_000, 300))
		}
	}
	replicate(t, leader, follower, 2<<10)

	if got, want := follower.LogEndOffset(), leader.LogEndOffset(); got != want {
		t.Fatalf("follower LEO %d, leader %d", got, want)
	}
	if !slices.Equal(follower.LeaderEpochs(), leader.LeaderEpochs()) {
		t.Fatalf("epochs: follower %v, leader %v", follower.LeaderEpochs(), leader.LeaderEpochs())
	}
	lb, _ := leader.Read(0, 1<<20, leader.LogEndOffset(), true)
	fb, _ := follower.Read(0, 1<<20, follower.LogEndOffset(), true)
	if !bytes.Equal(lb, fb) {
		t.Fatal("follower bytes differ from the leader's")
	}
	for _, e := range []int32{0, 2, 4} {
		le, lo := leader.EndOffsetForEpoch(e)
		fe, fo := follower.EndOffsetForEpoch(e)
		if le != fe || lo != fo {
			t.Fatalf("epoch %d ends at leader (%d,%d), follower (%d,%d)", e, le, lo, fe, fo)
		}
	}

	// A reopened follower log keeps all of it.
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(fdir, Config{SegmentBytes: 4 << 10, Logger: quiet}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if reopened.LogEndOffset() != leader.LogEndOffset() || !slices.Equal(reopened.LeaderEpochs(), leader.LeaderEpochs()) {
		t.Fatalf("reopened: LEO %d epochs %v", reopened.LogEndOffset(), reopened.LeaderEpochs())
	}
}

func TestAppendAsFollowerRefusesWhatDoesNotContinueTheLog(t *testing.T) {
	leader, _ := openLog(t, Config{})
	follower, _ := openLog(t, Config{})
	mustAppend(t, leader, 1, batchOf(2, 1, 10))
	mustAppend(t, leader, 1, batchOf(2, 1, 10))
	all, _ := leader.Read(0, 1<<20, leader.LogEndOffset(), true)
	hs := splitAll(t, all)
	first, second := all[:hs[0].TotalSize()], all[hs[0].TotalSize():]

	if _, err := follower.AppendAsFollower(all); err != nil {
		t.Fatal(err)
	}
	// The same batches again start below the log end.
	if _, err := follower.AppendAsFollower(first); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("re-append: %v", err)
	}
	// Batches out of order within one append.
	other, _ := openLog(t, Config{})
	if _, err := other.AppendAsFollower(append(append([]byte(nil), second...), first...)); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("out of order: %v", err)
	}
	if other.LogEndOffset() != 0 {
		t.Fatalf("a refused append moved the log end to %d", other.LogEndOffset())
	}
	// A gap (a compacted leader) is accepted: the log end follows the last batch.
	gap := append([]byte(nil), second...)
	records.SetBaseOffset(gap, 10)
	info, err := follower.AppendAsFollower(gap)
	if err != nil || info.FirstOffset != 10 || follower.LogEndOffset() != 12 {
		t.Fatalf("gap: info %+v LEO %d err %v", info, follower.LogEndOffset(), err)
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	l, _ := openLog(t, Config{})
	mustAppend(t, l, 3, batchOf(5, 1, 10))
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || len(l.LeaderEpochs()) != 0 {
		t.Fatalf("start %d end %d epochs %v", l.LogStartOffset(), l.LogEndOffset(), l.LeaderEpochs())
	}
	b := batchOf(2, 1, 10)
	records.SetBaseOffset(b, 100)
	records.SetPartitionLeaderEpoch(b, 7)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 102 || l.LatestEpoch() != 7 {
		t.Fatalf("after follower append: LEO %d epoch %d", l.LogEndOffset(), l.LatestEpoch())
	}
}
