package storage

import (
	"os"
	"path/filepath"
	"testing"
)

func TestProducerSnapshots(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Config{}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, ok := l.LatestProducerSnapshot(100); ok {
		t.Fatal("snapshot found in an empty dir")
	}
	for _, off := range []int64{10, 20, 30} {
		if err := l.WriteProducerSnapshot(off, snapOf(off)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000010.snapshot")); !os.IsNotExist(err) {
		t.Fatalf("oldest snapshot kept beyond %d: %v", snapshotsKept, err)
	}
	ps, ok := l.LatestProducerSnapshot(100)
	if !ok || ps.Offset != 30 || ps.Producers[0].ProducerID != 30 {
		t.Fatalf("latest = %+v %v", ps, ok)
	}
	// A log truncated below 30 must not use (and drops) the snapshot at 30.
	ps, ok = l.LatestProducerSnapshot(25)
	if !ok || ps.Offset != 20 {
		t.Fatalf("latest below 25 = %d %v", ps.Offset, ok)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000030.snapshot")); !os.IsNotExist(err) {
		t.Fatal("snapshot beyond the log end kept")
	}
	// A corrupt snapshot is skipped.
	path := filepath.Join(dir, "00000000000000000020.snapshot")
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 0xff
	os.WriteFile(path, b, 0o644)
	if _, ok := l.LatestProducerSnapshot(100); ok {
		t.Fatal("corrupt snapshot used")
	}
}

// TestProducerSnapshotsAfterReopen checks the snapshot list Open reads with
// the segments: the first lookup after a reopen uses it, and a snapshot
// written after the open is seen by the next lookup. Writing a snapshot
// identical to the one on disk leaves the file alone.
func TestProducerSnapshotsAfterReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Config{}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{10, 20} {
		if err := l.WriteProducerSnapshot(off, snapOf(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, Config{}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if ps, ok := l.LatestProducerSnapshot(100); !ok || ps.Offset != 20 || ps.Producers[0].ProducerID != 20 {
		t.Fatalf("latest after reopen = %+v %v, want 20", ps, ok)
	}
	path := filepath.Join(dir, "00000000000000000020.snapshot")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o444); err != nil { // a rewrite would replace the file
		t.Fatal(err)
	}
	if err := l.WriteProducerSnapshot(20, snapOf(20)); err != nil {
		t.Fatal(err)
	}
	if after, err := os.Stat(path); err != nil || after.Mode() != 0o444 || !os.SameFile(before, after) {
		t.Fatalf("identical snapshot rewritten: %v", err)
	}
	if err := l.WriteProducerSnapshot(30, snapOf(30)); err != nil {
		t.Fatal(err)
	}
	if ps, ok := l.LatestProducerSnapshot(100); !ok || ps.Offset != 30 {
		t.Fatalf("latest after a new snapshot = %d %v, want 30", ps.Offset, ok)
	}
}

// snapOf is a one-producer snapshot naming producer id n.
func snapOf(n int64) []ProducerSnapshotEntry {
	return []ProducerSnapshotEntry{{ProducerID: n, LastSequence: -1, LastOffset: -1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}}
}
