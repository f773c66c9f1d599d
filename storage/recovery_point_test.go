package storage

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// crashDir ends d as kill -9 would: no flush, no checkpoint, no clean
// shutdown marker; its files are closed and the lock released so that the
// test can open the same path again.
func crashDir(t *testing.T, d *Dir) {
	t.Helper()
	d.mu.Lock()
	d.mu.closed = true
	d.mu.Unlock()
	close(d.stop)
	<-d.done
	for _, l := range d.Logs() {
		if err := l.closeFiles(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.lock.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCrashRecoveryScansOnlyActiveSegment(t *testing.T) {
	passes := hookPasses(t)
	clock := newFakeClock()
	path := t.TempDir()
	cfg := Config{SegmentBytes: 1000, Now: clock.Now}
	dcfg := DirConfig{ConfigFor: func(string, int32) Config { return cfg }, Now: clock.Now}
	d := openDirCfg(t, path, dcfg)
	tp := TopicPartition{"t", 0}
	l, err := d.Create(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		mustAppend(t, l, 0, batchOf(3, int64(100+i), 40))
	}
	segs, _ := filepath.Glob(filepath.Join(l.Dir(), "*.log"))
	if len(segs) < 5 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	active := l.mu.segments[len(l.mu.segments)-1].base
	// The rolled segments are fsynced in the background: the recovery point
	// reaches the active segment without a Flush or a Close.
	deadline := time.After(10 * time.Second)
	for l.RecoveryPoint() != active {
		select {
		case <-passes:
		case <-deadline:
			t.Fatalf("recovery point %d, want the active segment's base %d", l.RecoveryPoint(), active)
		}
	}
	// Before log.flush.offset.checkpoint.interval.ms nothing is checkpointed...
	passes.pass(t, d)
	rp, _ := ReadOffsetCheckpoint(filepath.Join(path, RecoveryPointCheckpointFile))
	if _, ok := rp[tp]; ok {
		t.Fatalf("recovery point checkpointed before the interval: %v", rp)
	}
	// ...after it, the background goroutine writes it.
	clock.Advance(DefaultFlushOffsetCheckpointIntervalMs * time.Millisecond)
	passes.pass(t, d)
	rp, err = ReadOffsetCheckpoint(filepath.Join(path, RecoveryPointCheckpointFile))
	if err != nil || rp[tp] != active {
		t.Fatalf("checkpointed recovery points %v %v, want %d", rp, err, active)
	}

	crashDir(t, d)
	activeSize := func() int64 {
		st, err := os.Stat(segmentPath(filepath.Join(path, tp.String()), active, logSuffix))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}()
	d = openDirCfg(t, path, dcfg)
	defer d.Close()
	l = d.Log(tp)
	got := l.RecoveryStats()
	if got.Segments != 1 || got.From != active || got.Bytes != activeSize {
		t.Fatalf("recovery scanned %+v, want only the active segment %d (%d bytes)", got, active, activeSize)
	}
	if l.LogEndOffset() != 120 {
		t.Fatalf("LEO %d after crash, want 120", l.LogEndOffset())
	}
	checkDense(t, readAll(t, l, 0), 0, 120)
}

func TestCrashWithoutCheckpointScansEverything(t *testing.T) {
	// The control for the test above: with no recovery point checkpointed,
	// recovery validates every segment.
	path := t.TempDir()
	cfg := Config{SegmentBytes: 1000}
	dcfg := DirConfig{ConfigFor: func(string, int32) Config { return cfg }}
	d := openDirCfg(t, path, dcfg)
	tp := TopicPartition{"t", 0}
	l, _ := d.Create(tp, cfg)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, 0, batchOf(3, int64(100+i), 40))
	}
	n := len(l.mu.segments)
	crashDir(t, d)
	d = openDirCfg(t, path, dcfg)
	defer d.Close()
	if got := d.Log(tp).RecoveryStats(); got.Segments != n || got.From != 0 {
		t.Fatalf("recovery scanned %+v, want all %d segments", got, n)
	}
}

// TestDirRecoversManyLogsInParallel crashes a dir of many partitions, each
// with a torn tail, and reopens it with several recovery goroutines: every
// log is recovered and cut, its recovery point waits for a flush, and a
// clean close then lets the next open skip recovery.
func TestDirRecoversManyLogsInParallel(t *testing.T) {
	path := t.TempDir()
	cfg := Config{SegmentBytes: 1000}
	dcfg := DirConfig{ConfigFor: func(string, int32) Config { return cfg }, RecoveryThreads: 4}
	d := openDirCfg(t, path, dcfg)
	const n = 16
	for p := range int32(n) {
		l, err := d.Create(TopicPartition{"t", p}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range int(p) + 1 {
			mustAppend(t, l, 0, batchOf(3, 100, 40))
		}
	}
	crashDir(t, d)
	for p := range n {
		seg := lastSegment(t, filepath.Join(path, TopicPartition{"t", int32(p)}.String()))
		st, err := os.Stat(seg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(seg, st.Size()-5); err != nil { // tear the last batch
			t.Fatal(err)
		}
	}
	d = openDirCfg(t, path, dcfg)
	if got := len(d.Logs()); got != n {
		t.Fatalf("%d logs after the crash, want %d", got, n)
	}
	for p := range int32(n) {
		l := d.Log(TopicPartition{"t", p})
		want := 3 * int64(p)
		if l.LogEndOffset() != want || l.RecoveryStats().Segments == 0 || l.RecoveryPoint() > want {
			t.Fatalf("partition %d: LEO %d (want %d), recovery %+v, recovery point %d",
				p, l.LogEndOffset(), want, l.RecoveryStats(), l.RecoveryPoint())
		}
		checkDense(t, readAll(t, l, 0), 0, want)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	rp, err := ReadOffsetCheckpoint(filepath.Join(path, RecoveryPointCheckpointFile))
	if err != nil || len(rp) != n || rp[TopicPartition{"t", n - 1}] != 3*(n-1) {
		t.Fatalf("recovery points after a clean close: %v %v", rp, err)
	}
	d = openDirCfg(t, path, dcfg)
	defer d.Close()
	for tp, l := range d.Logs() {
		if got := l.RecoveryStats(); got.Segments != 0 {
			t.Fatalf("%v recovered after a clean shutdown: %+v", tp, got)
		}
	}
}
