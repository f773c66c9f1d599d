package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWritebackDue: a range is due once every bytes of whole pages were
// appended since the last one, covers the whole pages since it (never the
// page the writer is filling), and a non-positive every never is.
func TestWritebackDue(t *testing.T) {
	p := writebackPage
	s := &segment{}
	for _, step := range []struct {
		size          int64
		every         int64
		due           bool
		off, n, after int64
	}{
		{size: 100, every: 2 * p, due: false, after: 0},
		{size: 2*p - 1, every: 2 * p, due: false, after: 0},
		{size: 3*p + 100, every: 2 * p, due: true, off: 0, n: 3 * p, after: 3 * p},
		{size: 4*p + 5, every: 2 * p, due: false, after: 3 * p},
		{size: 5 * p, every: 2 * p, due: true, off: 3 * p, n: 2 * p, after: 5 * p},
		{size: 9 * p, every: 0, due: false, after: 5 * p},
		{size: 9 * p, every: -1, due: false, after: 5 * p},
	} {
		s.size = step.size
		j, ok := writebackDue(s, step.every)
		if ok != step.due || (ok && (j.off != step.off || j.n != step.n)) || s.writebackFrom != step.after {
			t.Errorf("size %d every %d: got %v %+v from %d, want %v [%d,+%d) from %d",
				step.size, step.every, ok, j, s.writebackFrom, step.due, step.off, step.n, step.after)
		}
	}
}

// TestDirWriteback: appends to a dir's log past SegmentWritebackBytes start
// writeback without error and the data reads back; a closed dir's
// goroutine has ended.
func TestDirWriteback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs")
	d, err := OpenDirConfig(path, DirConfig{SegmentWritebackBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Create(TopicPartition{Topic: "t", Partition: 0}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := l.Append(buildBatch(testRecord{ts: int64(i), value: make([]byte, 1000)}), 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.LogEndOffset(); got != 20 {
		t.Fatalf("log end %d, want 20", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.writebackDone:
	default:
		t.Fatal("writeback goroutine still running after Close")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
