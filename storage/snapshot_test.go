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
	if _, _, ok := l.LatestProducerSnapshot(100); ok {
		t.Fatal("snapshot found in an empty dir")
	}
	for _, off := range []int64{10, 20, 30} {
		if err := l.WriteProducerSnapshot(off, []byte{byte(off)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000010.snapshot")); !os.IsNotExist(err) {
		t.Fatalf("oldest snapshot kept beyond %d: %v", snapshotsKept, err)
	}
	off, data, ok := l.LatestProducerSnapshot(100)
	if !ok || off != 30 || data[0] != 30 {
		t.Fatalf("latest = %d %v %v", off, data, ok)
	}
	// A log truncated below 30 must not use (and drops) the snapshot at 30.
	off, _, ok = l.LatestProducerSnapshot(25)
	if !ok || off != 20 {
		t.Fatalf("latest below 25 = %d %v", off, ok)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000030.snapshot")); !os.IsNotExist(err) {
		t.Fatal("snapshot beyond the log end kept")
	}
	// A corrupt snapshot is skipped.
	path := filepath.Join(dir, "00000000000000000020.snapshot")
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 0xff
	os.WriteFile(path, b, 0o644)
	if _, _, ok := l.LatestProducerSnapshot(100); ok {
		t.Fatal("corrupt snapshot used")
	}
}
