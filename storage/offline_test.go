package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// faults is a switchable fault for a Config hook.
type faults struct{ err atomic.Pointer[error] }

func (f *faults) set(err error) { f.err.Store(&err) }
func (f *faults) hook(string) error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}

func TestFsyncFailureTakesDirOffline(t *testing.T) {
	var sync faults
	path := t.TempDir()
	cfg := Config{FlushIntervalMessages: 1, syncFault: sync.hook}
	d := openDirCfg(t, path, DirConfig{ConfigFor: func(string, int32) Config { return cfg }})
	a, _ := d.Create(TopicPartition{"a", 0}, cfg)
	b, _ := d.Create(TopicPartition{"b", 0}, cfg)
	for i := 0; i < 3; i++ {
		mustAppend(t, a, 0, batchOf(2, 1, 10))
	}
	mustAppend(t, b, 0, batchOf(1, 1, 10))

	sync.set(syscall.EIO)
	_, err := a.Append(batchOf(2, 1, 10), 0)
	if !errors.Is(err, ErrLogDirOffline) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with failing fsync: %v, want ErrLogDirOffline wrapping EIO", err)
	}
	// The failed append is not part of the log; what was there is readable.
	if a.LogEndOffset() != 6 {
		t.Fatalf("LEO %d after a failed append, want 6", a.LogEndOffset())
	}
	checkDense(t, readAll(t, a, 0), 0, 6)

	// Sticky: the disk "recovers", but appends stay refused and the
	// recovery point never moves (a retried fsync proves nothing).
	sync.set(nil)
	rp := a.RecoveryPoint()
	for _, l := range []*Log{a, b} {
		if _, err := l.Append(batchOf(1, 1, 10), 0); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("append to %s after the failure: %v, want ErrLogDirOffline", l.Dir(), err)
		}
	}
	if err := a.Flush(); !errors.Is(err, ErrLogDirOffline) || a.RecoveryPoint() != rp {
		t.Fatalf("flush of an offline log: %v, recovery point %d -> %d", err, rp, a.RecoveryPoint())
	}
	if err := a.Roll(); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("roll: %v", err)
	}
	if err := a.TruncateTo(2); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("truncate: %v", err)
	}
	if err := d.Offline(); !errors.Is(err, ErrLogDirOffline) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("dir offline: %v", err)
	}
	if _, err := d.Create(TopicPartition{"c", 0}, cfg); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("create in an offline dir: %v", err)
	}
	checkDense(t, readAll(t, b, 0), 0, 1)

	// Close does not claim a clean shutdown; the next open recovers.
	if err := d.Close(); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("close of an offline dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(path, CleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("clean shutdown marker written for an offline dir: %v", err)
	}
	cfg.syncFault = nil
	d = openDirCfg(t, path, DirConfig{ConfigFor: func(string, int32) Config { return cfg }})
	defer d.Close()
	if d.Offline() != nil {
		t.Fatal("offline after restart")
	}
	a = d.Log(TopicPartition{"a", 0})
	if a.RecoveryStats().Segments == 0 {
		t.Fatal("no recovery after an offline close")
	}
	checkDense(t, readAll(t, a, 0), 0, 6)
	mustAppend(t, a, 0, batchOf(1, 1, 10))
}

func TestWriteFailureNotRolledBackTakesLogOffline(t *testing.T) {
	var write, trunc faults
	cfg := Config{
		WriteFault:    func(string, int) (int, error) { return 11, write.hook("") },
		truncateFault: trunc.hook,
	}
	path := t.TempDir()
	d := openDirCfg(t, path, DirConfig{ConfigFor: func(string, int32) Config { return cfg }})
	defer d.Close()
	l, _ := d.Create(TopicPartition{"w", 0}, cfg)
	mustAppend(t, l, 0, batchOf(2, 1, 10))

	// ENOSPC cleanly truncated back: not offline, appends resume.
	write.set(syscall.ENOSPC)
	if _, err := l.Append(batchOf(2, 1, 10), 0); !errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if l.Offline() != nil || d.Offline() != nil {
		t.Fatalf("offline after a cleanly undone write: %v", d.Offline())
	}
	write.set(nil)
	mustAppend(t, l, 0, batchOf(2, 1, 10))

	// A failed write whose partial bytes cannot be removed: offline.
	write.set(syscall.EIO)
	trunc.set(syscall.EROFS)
	_, err := l.Append(batchOf(2, 1, 10), 0)
	if !errors.Is(err, ErrLogDirOffline) || !errors.Is(err, syscall.EIO) || !errors.Is(err, syscall.EROFS) {
		t.Fatalf("append with a failed rollback: %v", err)
	}
	if l.LogEndOffset() != 4 {
		t.Fatalf("LEO %d, want 4", l.LogEndOffset())
	}
	write.set(nil)
	trunc.set(nil)
	if _, err := l.Append(batchOf(2, 1, 10), 0); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("append after the failure: %v", err)
	}
	if err := d.Offline(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("dir offline: %v", err)
	}
	checkDense(t, readAll(t, l, 0), 0, 4)
}

func TestFailedRollFsyncInBackgroundTakesDirOffline(t *testing.T) {
	passes := hookPasses(t)
	var sync faults
	cfg := Config{SegmentBytes: 300, syncFault: sync.hook}
	d := openDirCfg(t, t.TempDir(), DirConfig{ConfigFor: func(string, int32) Config { return cfg }})
	defer d.Close()
	l, _ := d.Create(TopicPartition{"r", 0}, cfg)
	sync.set(syscall.EIO)
	for i := 0; i < 10 && l.Offline() == nil; i++ {
		if _, err := l.Append(batchOf(2, 1, 100), 0); err != nil && !errors.Is(err, ErrLogDirOffline) {
			t.Fatal(err)
		}
		passes.pass(t, d)
	}
	if err := d.Offline(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("dir offline after a failed fsync of a rolled segment: %v", err)
	}
	if l.RecoveryPoint() != 0 {
		t.Fatalf("recovery point %d advanced past an unsynced segment", l.RecoveryPoint())
	}
}

// TestWriteErrorsOffline: with DirConfig.WriteErrorsOffline (a cluster
// broker's dirs) even a cleanly undone ENOSPC write takes the whole dir
// offline, as Kafka does, and OnOffline hears of it exactly once.
func TestWriteErrorsOffline(t *testing.T) {
	var write faults
	cfg := Config{WriteFault: func(string, int) (int, error) { return 0, write.hook("") }}
	var told []error
	path := t.TempDir()
	d := openDirCfg(t, path, DirConfig{
		ConfigFor:          func(string, int32) Config { return cfg },
		WriteErrorsOffline: true,
		OnOffline:          func(err error) { told = append(told, err) },
	})
	defer d.Close()
	a, _ := d.Create(TopicPartition{"a", 0}, cfg)
	b, _ := d.Create(TopicPartition{"b", 0}, cfg)
	mustAppend(t, a, 0, batchOf(2, 1, 10))

	write.set(syscall.ENOSPC)
	if _, err := a.Append(batchOf(2, 1, 10), 0); !errors.Is(err, ErrLogDirOffline) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ErrLogDirOffline wrapping ENOSPC", err)
	}
	write.set(nil) // space again: the dir stays offline until restart
	for _, l := range []*Log{a, b} {
		if _, err := l.Append(batchOf(1, 1, 10), 0); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("append to %s after the failure: %v, want ErrLogDirOffline", l.Dir(), err)
		}
	}
	if len(told) != 1 || !errors.Is(told[0], syscall.ENOSPC) {
		t.Fatalf("OnOffline called with %v, want once with ENOSPC", told)
	}
	if a.LogEndOffset() != 2 {
		t.Fatalf("LEO %d, want 2", a.LogEndOffset())
	}
	checkDense(t, readAll(t, a, 0), 0, 2)
}
