package storage

import "testing"

// A new leader's epoch starts at its log end before it appends anything:
// the previous epoch then ends there for OffsetForLeaderEpoch.
func TestAssignEpochAtLogEnd(t *testing.T) {
	l, _ := openLog(t, Config{})
	mustAppend(t, l, 1, batchOf(3, 1, 1))
	if err := l.AssignEpoch(3); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpoch(2); err != nil { // older: ignored
		t.Fatal(err)
	}
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != 3 {
		t.Fatalf("EndOffsetForEpoch(1) = (%d, %d), want (1, 3)", e, end)
	}
	mustAppend(t, l, 3, batchOf(2, 1, 1))
	got := l.LeaderEpochs()
	if len(got) != 2 || got[1] != (EpochEntry{Epoch: 3, StartOffset: 3}) {
		t.Fatalf("epochs %v, want epoch 3 at 3", got)
	}
}
