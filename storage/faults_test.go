package storage

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage/vfs"
)

// anyOf combines injectors: the first error wins.
func anyOf(injs ...vfs.Injector) vfs.Injector {
	return func(op vfs.Op) error {
		for _, inj := range injs {
			if err := inj(op); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestFaultsNeverLeaveGarbage injects one failure (or a few) into the file
// operations of a workload of appends with an fsync each, rolls and epoch
// changes: a failed write, a short write on a full disk, a failed fsync of
// the log, an index or the directory, a failed open at roll, a failed
// rename of a checkpoint. Every failing Append returns an error; the log
// keeps serving reads of exactly the appended batches at dense offsets;
// after reopening it cleanly, and after a crash, nothing acknowledged is
// lost and nothing reads garbage.
func TestFaultsNeverLeaveGarbage(t *testing.T) {
	eio, enospc := syscall.EIO, syscall.ENOSPC
	tests := []struct {
		name string
		inj  vfs.Injector
	}{
		{"write log", vfs.OnNth(vfs.OpWrite, ".log", 5, eio)},
		{"short write log, full disk", vfs.OnNth(vfs.OpWrite, ".log", 5, vfs.ShortWrite(20, enospc))},
		{"short write log, truncate fails too", anyOf(
			vfs.OnNth(vfs.OpWrite, ".log", 5, vfs.ShortWrite(20, enospc)),
			vfs.OnNth(vfs.OpTruncate, ".log", 1, eio))},
		{"full disk for a while", func() vfs.Injector {
			n := 0
			return func(op vfs.Op) error {
				if op.Kind == vfs.OpWrite {
					if n++; n >= 8 && n < 14 {
						return vfs.ShortWrite(n, enospc)
					}
				}
				return nil
			}
		}()},
		{"fsync log", vfs.OnNth(vfs.OpSync, ".log", 3, eio)},
		{"fsync log repeatedly", vfs.OnNth(vfs.OpSync, "0.log", 0, eio)},
		{"fsync time index", vfs.OnNth(vfs.OpSync, ".timeindex", 2, eio)},
		{"fsync offset index", vfs.OnNth(vfs.OpSync, ".index", 2, eio)},
		{"short write offset index", vfs.OnNth(vfs.OpWrite, ".index", 1, vfs.ShortWrite(3, enospc))},
		{"open at roll", vfs.OnNth(vfs.OpOpen, ".log", 2, syscall.EMFILE)},
		{"fsync dir", vfs.OnNth(vfs.OpSync, "/data/t-0", 0, eio)},
		{"rename epoch checkpoint", vfs.OnNth(vfs.OpRename, LeaderEpochCheckpointFile, 1, eio)},
		{"write epoch checkpoint", vfs.OnNth(vfs.OpWrite, LeaderEpochCheckpointFile, 2, enospc)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem, dir := memLogDir(t)
			var sw vfs.Switchable
			cfg := Config{FS: vfs.WithErrors(mem, sw.Inject), SegmentBytes: 600, IndexIntervalBytes: 100,
				FlushIntervalMessages: 1, Logger: quiet}
			l, err := Open(dir, cfg, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			sw.Set(tt.inj)
			appended := map[int64][]byte{}
			ts := map[int64]int64{}
			durable, failures := int64(0), 0
			for i := range 40 {
				b := batchOf(1+i%3, int64(1000+10*i), 40)
				info, err := l.Append(b, int32(i/7))
				if info.Records > 0 {
					// Written (perhaps not flushed): it is in the log.
					appended[info.FirstOffset] = append([]byte(nil), b...)
					ts[info.FirstOffset] = int64(1000 + 10*i)
				}
				if err != nil {
					failures++
					continue
				}
				durable = info.LastOffset + 1
			}
			if failures == 0 {
				t.Fatal("no Append failed: the injected fault was never hit")
			}
			checkLive(t, l, appended)
			sw.Set(nil)
			// A failed fsync, or a write that could not be undone, takes the
			// log offline for good (its close then reports that); anything
			// else must close cleanly.
			if err := l.Close(); err != nil && !errors.Is(err, ErrLogDirOffline) {
				t.Fatalf("close after faults ended: %v", err)
			}
			// Reopen after the clean close, then after a crash.
			checkRecovered(t, crashPoint{fs: mem, path: "(clean)", durable: durable}, dir, Config{SegmentBytes: 600, IndexIntervalBytes: 100, Logger: quiet}, durable, appended, ts)
			checkRecovered(t, crashPoint{fs: mem.CrashClone(vfs.CrashOptions{}), path: "(crash)", durable: durable}, dir, Config{SegmentBytes: 600, IndexIntervalBytes: 100, Logger: quiet}, 0, appended, ts)
		})
	}
}

// checkLive reads the whole open log and checks each batch is the one
// appended at its offset, densely from the log start.
func checkLive(t *testing.T, l *Log, appended map[int64][]byte) {
	t.Helper()
	next, leo := l.LogStartOffset(), l.LogEndOffset()
	for next < leo {
		b, err := l.Read(next, 1<<30, 1<<62, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("live read %d of [0, %d): %d bytes, %v", next, leo, len(b), err)
		}
		for len(b) > 0 {
			raw, h, rest, err := records.Split(b)
			if err != nil {
				t.Fatalf("live batch at %d: %v", next, err)
			}
			if h.BaseOffset != next || !bytes.Equal(raw, appended[next]) {
				t.Fatalf("live batch at %d (base %d) is not the batch appended there", next, h.BaseOffset)
			}
			next = h.NextOffset()
			b = rest
		}
	}
}

// TestFaultErrorsAreReported checks a failing operation surfaces as an
// error wrapping the cause, never as success.
func TestFaultErrorsAreReported(t *testing.T) {
	for _, kind := range []vfs.OpKind{vfs.OpWrite, vfs.OpSync} {
		t.Run(kind.String(), func(t *testing.T) {
			mem, dir := memLogDir(t)
			var sw vfs.Switchable
			l, err := Open(dir, Config{FS: vfs.WithErrors(mem, sw.Inject), FlushIntervalMessages: 1, Logger: quiet}, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			sw.Set(vfs.OnNth(kind, ".log", 0, syscall.EIO))
			if _, err := l.Append(batchOf(1, 1, 10), 0); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Append with failing %v: %v, want EIO", kind, err)
			}
			if err := l.Flush(); kind == vfs.OpSync && !errors.Is(err, syscall.EIO) {
				t.Fatalf("Flush with failing fsync: %v, want EIO", err)
			}
			sw.Set(nil)
			err = l.Flush()
			if kind == vfs.OpSync {
				// fsyncgate: a retried fsync may succeed without the data.
				if !errors.Is(err, ErrLogDirOffline) {
					t.Fatalf("Flush after a failed fsync: %v, want the log offline", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Flush after the fault: %v", err)
			}
			if got := fmt.Sprint(l.RecoveryPoint()); got != fmt.Sprint(l.LogEndOffset()) {
				t.Fatalf("recovery point %s after a good flush, log end %d", got, l.LogEndOffset())
			}
		})
	}
}

// TestOutOfDescriptorsIsNotADiskFailure checks that EMFILE while flushing
// (opening an index file, or a segment through the cache) is reported as
// ErrTooManyOpenFiles and leaves the log online: nothing was lost, and the
// next flush, once descriptors are back, succeeds.
func TestOutOfDescriptorsIsNotADiskFailure(t *testing.T) {
	mem, dir := memLogDir(t)
	var sw vfs.Switchable
	l, err := Open(dir, Config{FS: vfs.WithErrors(mem, sw.Inject), IndexIntervalBytes: 10, Logger: quiet}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 5 {
		mustAppend(t, l, 0, batchOf(1, int64(i), 50))
	}
	sw.Set(vfs.OnNth(vfs.OpOpen, "", 0, syscall.EMFILE))
	err = l.Flush()
	if !errors.Is(err, ErrTooManyOpenFiles) || errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("Flush without descriptors: %v, want ErrTooManyOpenFiles and not offline", err)
	}
	if l.Offline() != nil {
		t.Fatalf("log offline after EMFILE: %v", l.Offline())
	}
	sw.Set(nil)
	if err := l.Flush(); err != nil {
		t.Fatalf("Flush once descriptors are back: %v", err)
	}
	if l.RecoveryPoint() != l.LogEndOffset() {
		t.Fatalf("recovery point %d, log end %d", l.RecoveryPoint(), l.LogEndOffset())
	}
	mustAppend(t, l, 0, batchOf(1, 9, 50))
}
