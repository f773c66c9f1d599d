package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func openTestDir(t *testing.T, path string, cfg Config) *Dir {
	t.Helper()
	d, err := OpenDir(path, func(string, int32) Config { return cfg }, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDirLock(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path, Config{})
	if _, err := OpenDir(path, nil, quiet); !errors.Is(err, ErrLocked) {
		t.Fatalf("second OpenDir: %v, want ErrLocked", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d2 := openTestDir(t, path, Config{})
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDirReopenCleanAndUnclean(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path, Config{SegmentBytes: 500})
	tps := []TopicPartition{{"a", 0}, {"a", 1}, {"with-dash", 3}}
	for i, tp := range tps {
		l, err := d.Create(tp, Config{SegmentBytes: 500})
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j <= i*5; j++ {
			mustAppend(t, l, 1, batchOf(2, 1, 100))
		}
	}
	if _, err := d.Create(tps[0], Config{}); !errors.Is(err, ErrExists) {
		t.Fatalf("create existing: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, CleanShutdownFile)); err != nil {
		t.Fatalf("no clean shutdown marker: %v", err)
	}
	rp, err := ReadOffsetCheckpoint(filepath.Join(path, RecoveryPointCheckpointFile))
	if err != nil || rp[tps[2]] != 22 || len(rp) != 3 {
		t.Fatalf("recovery points %v %v", rp, err)
	}

	d = openTestDir(t, path, Config{SegmentBytes: 500})
	if _, err := os.Stat(filepath.Join(path, CleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean shutdown marker still there: %v", err)
	}
	logs := d.Logs()
	if len(logs) != 3 {
		t.Fatalf("%d logs after reopen", len(logs))
	}
	for i, tp := range tps {
		l := d.Log(tp)
		if l == nil || l.LogEndOffset() != int64(2*(i*5+1)) {
			t.Fatalf("%v: log %v", tp, l)
		}
	}
	// Crash: the dir is not closed; a torn tail is dropped on reopen.
	l := d.Log(tps[2])
	mustAppend(t, l, 2, batchOf(2, 1, 100))
	seg := lastSegment(t, l.Dir())
	st, _ := os.Stat(seg)
	os.Truncate(seg, st.Size()-1)
	if err := d.lock.Close(); err != nil { // what process death does
		t.Fatal(err)
	}
	close(d.stop)
	<-d.done
	d2 := openTestDir(t, path, Config{SegmentBytes: 500})
	defer d2.Close()
	if got := d2.Log(tps[2]).LogEndOffset(); got != 22 {
		t.Fatalf("LEO after crash %d, want 22", got)
	}
	checkDense(t, readAll(t, d2.Log(tps[2]), 0), 0, 22)
}

func TestDirCheckpoints(t *testing.T) {
	path := t.TempDir()
	d := openTestDir(t, path, Config{})
	tp := TopicPartition{"t", 0}
	l, err := d.Create(tp, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		mustAppend(t, l, 0, batchOf(1, 1, 1))
	}
	if err := l.SetLogStartOffset(2); err != nil {
		t.Fatal(err)
	}
	hw := map[TopicPartition]int64{tp: 3, {"other", 7}: 9}
	if err := d.WriteHighWatermarks(hw); err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(path, ReplicationCheckpointFile))
	if string(data) != "0\n2\nother 7 9\nt 0 3\n" {
		t.Errorf("replication checkpoint %q", data)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openTestDir(t, path, Config{})
	defer d.Close()
	if got := d.HighWatermarks(); len(got) != 2 || got[tp] != 3 {
		t.Errorf("high watermarks %v", got)
	}
	if hw, ok := d.HighWatermark(TopicPartition{"other", 7}); !ok || hw != 9 {
		t.Errorf("high watermark of other-7: %d %v", hw, ok)
	}
	if _, ok := d.HighWatermark(TopicPartition{"other", 8}); ok {
		t.Error("high watermark of a partition the checkpoint lacks")
	}
	if got := d.Log(tp).LogStartOffset(); got != 2 {
		t.Errorf("log start offset %d, want 2", got)
	}
}

func TestDirSkipsForeignDirs(t *testing.T) {
	path := t.TempDir()
	os.MkdirAll(filepath.Join(path, "topic.abc-delete"), 0o755)
	os.MkdirAll(filepath.Join(path, "nodash"), 0o755)
	d := openTestDir(t, path, Config{})
	defer d.Close()
	if n := len(d.Logs()); n != 0 {
		t.Fatalf("%d logs", n)
	}
}

// watchPasses returns a channel that receives (without blocking the dir)
// after each pass of a dir's background goroutine, until the test ends.
func watchPasses(t *testing.T) <-chan struct{} {
	passes := make(chan struct{}, 100)
	testHookPass = func() {
		select {
		case passes <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { testHookPass = nil })
	return passes
}

func TestDirFlusher(t *testing.T) {
	clock := newFakeClock()
	passes := watchPasses(t)
	cfg := Config{FlushIntervalMs: 50, Now: clock.Now}
	d := openTestDir(t, t.TempDir(), cfg)
	defer d.Close()
	l, err := d.Create(TopicPartition{"f", 0}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, 0, batchOf(3, 1, 1))
	// Not old enough yet: passes leave it unflushed.
	<-passes
	<-passes
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("flushed too early: recovery point %d", rp)
	}
	clock.Advance(50 * time.Millisecond)
	deadline := time.After(10 * time.Second)
	for l.RecoveryPoint() != 3 {
		select {
		case <-passes:
		case <-deadline:
			t.Fatalf("flusher did not flush: recovery point %d", l.RecoveryPoint())
		}
	}
}

func TestOffsetCheckpointFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cp")
	if m, err := ReadOffsetCheckpoint(path); err != nil || len(m) != 0 {
		t.Fatalf("missing file: %v %v", m, err)
	}
	in := map[TopicPartition]int64{{"b", 1}: 5, {"a-x", 0}: 0, {"b", 0}: 1 << 40}
	if err := WriteOffsetCheckpoint(path, in); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := "0\n3\na-x 0 0\nb 0 1099511627776\nb 1 5\n"; string(data) != want {
		t.Errorf("file %q, want %q", data, want)
	}
	out, err := ReadOffsetCheckpoint(path)
	if err != nil || len(out) != 3 || out[TopicPartition{"b", 0}] != 1<<40 {
		t.Fatalf("read back %v %v", out, err)
	}
	// Kafka's cleaner creates cleaner-offset-checkpoint empty.
	os.WriteFile(path, nil, 0o644)
	if m, err := ReadOffsetCheckpoint(path); err != nil || len(m) != 0 {
		t.Fatalf("empty file: %v %v", m, err)
	}
	for _, bad := range []string{"\n", "1\n0\n", "0\n-1\n", "0\n2\na 0 1\n", "0\n1\na 0\n", "0\n1\na x 1\n", "0\n1\na 0 1\nextra\n"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := ReadOffsetCheckpoint(path); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// watched reports whether the dir's flusher watches l.
func (d *Dir) watched(l *Log) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.mu.unflushed[l]
	return ok
}

// The flusher watches only logs with unflushed records and a flush
// interval (issue 26: it walked every log on every pass), yet flushes a
// log given an interval by SetConfig while it holds unflushed records.
func TestDirFlusherWatchesOnlyUnflushedLogs(t *testing.T) {
	clock := newFakeClock()
	passes := watchPasses(t)
	timed := Config{FlushIntervalMs: 50, Now: clock.Now}
	untimed := Config{Now: clock.Now}
	d := openTestDir(t, t.TempDir(), untimed)
	defer d.Close()
	a, err := d.Create(TopicPartition{"timed", 0}, timed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Create(TopicPartition{"untimed", 0}, untimed)
	if err != nil {
		t.Fatal(err)
	}
	if d.watched(a) || d.watched(b) {
		t.Fatal("empty logs watched")
	}
	mustAppend(t, a, 0, batchOf(3, 1, 1))
	mustAppend(t, b, 0, batchOf(2, 1, 1))
	if !d.watched(a) || d.watched(b) {
		t.Fatalf("after appends: watched timed %v, untimed %v; want true, false", d.watched(a), d.watched(b))
	}
	clock.Advance(50 * time.Millisecond)
	waitPasses := func(what string, done func() bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for !done() {
			select {
			case <-passes:
			case <-deadline:
				t.Fatalf("flusher: %s", what)
			}
		}
	}
	waitPasses("timed log not flushed", func() bool { return a.RecoveryPoint() == 3 })
	waitPasses("flushed log still watched", func() bool { return !d.watched(a) })
	if rp := b.RecoveryPoint(); rp != 0 {
		t.Fatalf("log without flush interval flushed: recovery point %d", rp)
	}
	// An interval given to a log holding unflushed records, older than it.
	if err := b.SetConfig(timed); err != nil {
		t.Fatal(err)
	}
	waitPasses("log given an interval not flushed", func() bool { return b.RecoveryPoint() == 2 })
}
