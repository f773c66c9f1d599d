package storage

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

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

// Truncating to the log end cuts no record but drops an epoch assigned at
// the end with no record after it (Kafka's truncateTo): a replica that led
// an epoch without writing and then follows must not keep it as its latest.
func TestTruncateToLogEndDropsEmptyEpoch(t *testing.T) {
	l, _ := openLog(t, Config{})
	mustAppend(t, l, 1, batchOf(3, 1, 1))
	if err := l.AssignEpoch(2); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if got := l.LatestEpoch(); got != 1 || l.LogEndOffset() != 3 {
		t.Fatalf("latest epoch %d, log end %d; want 1 and 3", got, l.LogEndOffset())
	}
	mustAppend(t, l, 4, batchOf(2, 1, 1)) // the next leader's records
	if got := l.LeaderEpochs(); len(got) != 2 || got[1] != (EpochEntry{Epoch: 4, StartOffset: 3}) {
		t.Fatalf("epochs %v, want epoch 1 at 0 and 4 at 3", got)
	}
}

// An epoch assigned deferred is not on disk until SyncEpochs or the log's
// next append, and at every durable state a crash can leave, the log holds
// no record of the epoch without the epoch's entry.
func TestAssignEpochDurableBeforeItsRecords(t *testing.T) {
	mem, dir := memLogDir(t)
	cfg := Config{FS: mem, Logger: quiet}
	l, err := Open(dir, cfg, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, 1, batchOf(3, 1, 1))
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		points []*vfs.MemFS
	)
	mem.SetSyncHook(func(string) {
		mu.Lock()
		points = append(points, mem.CrashClone(vfs.CrashOptions{}))
		mu.Unlock()
	})
	defer mem.SetSyncHook(nil)

	if err := l.AssignEpoch(3); err != nil {
		t.Fatal(err)
	}
	if len(points) != 0 {
		t.Fatalf("AssignEpoch synced %d times", len(points))
	}
	if got := l.LeaderEpochs(); len(got) != 2 || got[1] != (EpochEntry{Epoch: 3, StartOffset: 3}) {
		t.Fatalf("epochs %v, want epoch 3 at 3 in memory", got)
	}
	if got := checkpointedEpochs(t, mem, dir); len(got) != 1 || got[0] != "1 0" {
		t.Fatalf("checkpoint before any sync holds %v, want only epoch 1", got)
	}
	crashed := mem.CrashClone(vfs.CrashOptions{})
	if got := reopenEpochs(t, crashed, dir); len(got) != 1 || got[0].Epoch != 1 {
		t.Fatalf("after a crash before any sync: epochs %v, want only epoch 1", got)
	}
	if _, err := crashed.Stat(dir + "/" + LeaderEpochCheckpointFile + ".tmp"); err == nil {
		t.Fatal("the deferred checkpoint's temporary file survived a reopen")
	}

	mustAppend(t, l, 3, batchOf(2, 1, 1))
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	mem.SetSyncHook(nil)
	if len(points) == 0 {
		t.Fatal("no sync after the append")
	}
	for i, fs := range points {
		l2, err := Open(dir, Config{FS: fs, Logger: quiet}, 0, false)
		if err != nil {
			t.Fatalf("crash point %d: %v", i, err)
		}
		end, epochs := l2.LogEndOffset(), l2.LeaderEpochs()
		l2.Close()
		if end > 3 && (len(epochs) != 2 || epochs[1] != (EpochEntry{Epoch: 3, StartOffset: 3})) {
			t.Fatalf("crash point %d: log ends at %d with records of epoch 3, epochs %v", i, end, epochs)
		}
	}

	if got := checkpointedEpochs(t, mem, dir); len(got) != 2 || got[1] != "3 3" {
		t.Fatalf("checkpoint after the append holds %v, want epoch 3 at 3 last", got)
	}
}

// A deferred epoch whose checkpoint cannot be written before the epoch's
// first record fails that append, which writes nothing. As a failed
// segment write truncated back, that takes the log offline in a dir with
// WriteErrorsOffline (cluster mode); a single node writes the checkpoint at
// the next append instead.
func TestAssignEpochWriteFailure(t *testing.T) {
	for _, offline := range []bool{false, true} {
		mem, dir := memLogDir(t)
		failed := errors.New("injected write failure")
		var failing atomic.Bool
		fs := vfs.WithErrors(mem, func(op vfs.Op) error {
			if failing.Load() && strings.HasPrefix(filepath.Base(op.Path), LeaderEpochCheckpointFile) {
				return failed
			}
			return nil
		})
		l, err := Open(dir, Config{FS: fs, Logger: quiet, writeErrorsOffline: offline}, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, 1, batchOf(2, 1, 1))
		if err := l.AssignEpoch(2); err != nil {
			t.Fatal(err)
		}
		failing.Store(true)
		if _, err := l.Append(batchOf(1, 1, 1), 2); !errors.Is(err, failed) {
			t.Fatalf("WriteErrorsOffline %v: append = %v, want the injected failure", offline, err)
		}
		if end := l.LogEndOffset(); end != 2 {
			t.Fatalf("WriteErrorsOffline %v: log end %d after the failed append, want 2", offline, end)
		}
		if got := checkpointedEpochs(t, mem, dir); len(got) != 1 || got[0] != "1 0" {
			t.Fatalf("WriteErrorsOffline %v: checkpoint holds %v, want only epoch 1", offline, got)
		}
		failing.Store(false)
		_, err = l.Append(batchOf(1, 1, 1), 2)
		if offline {
			// Sticky until restart, as Kafka's offline log dir.
			if l.Offline() == nil || err == nil {
				t.Fatalf("WriteErrorsOffline: log online (append %v) after its leader epoch checkpoint failed", err)
			}
		} else {
			// A single node's disk that fills up and frees again: the
			// next append writes the epoch, then its record.
			if err != nil || l.Offline() != nil {
				t.Fatalf("append after the disk recovered = %v (offline %v), want it written", err, l.Offline())
			}
			if got := checkpointedEpochs(t, mem, dir); len(got) != 2 || got[1] != "2 2" {
				t.Fatalf("checkpoint holds %v after the retry, want epoch 2 at 2", got)
			}
		}
		l.Close()
	}
}

// An append that starts a new epoch itself (a leader's first record of an
// epoch it was not assigned, a follower copying the leader's batches) and
// cannot write the checkpoint follows the same rule.
func TestAppendEpochWriteFailure(t *testing.T) {
	for _, offline := range []bool{false, true} {
		mem, dir := memLogDir(t)
		var failing atomic.Bool
		fs := vfs.WithErrors(mem, func(op vfs.Op) error {
			if failing.Load() && strings.HasPrefix(filepath.Base(op.Path), LeaderEpochCheckpointFile) {
				return errors.New("injected write failure")
			}
			return nil
		})
		l, err := Open(dir, Config{FS: fs, Logger: quiet, writeErrorsOffline: offline}, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, 1, batchOf(2, 1, 1))
		failing.Store(true)
		if _, err := l.Append(batchOf(1, 1, 1), 3); err == nil {
			t.Fatalf("WriteErrorsOffline %v: append of a new epoch succeeded without its checkpoint", offline)
		}
		if got := l.LeaderEpochs(); len(got) != 1 || got[0].Epoch != 1 {
			t.Fatalf("WriteErrorsOffline %v: epochs %v after the failed append, want only epoch 1", offline, got)
		}
		if (l.Offline() != nil) != offline {
			t.Fatalf("WriteErrorsOffline %v: offline = %v", offline, l.Offline())
		}
		l.Close()
	}
}

// reopenEpochs opens the log at dir on fs and returns its leader epochs.
func reopenEpochs(t *testing.T, fs vfs.FS, dir string) []EpochEntry {
	t.Helper()
	l, err := Open(dir, Config{FS: fs, Logger: quiet}, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.LeaderEpochs()
}

// checkpointedEpochs is what dir's leader-epoch-checkpoint on fs holds,
// one "epoch start" per entry (reopening a log would drop entries at its
// end, as Kafka's load does).
func checkpointedEpochs(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	lines, err := readCheckpointFS(fs, dir+"/"+LeaderEpochCheckpointFile, 2)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range lines {
		out = append(out, strings.Join(f, " "))
	}
	return out
}

// Running out of descriptors while writing the checkpoint is not a disk
// failure, for the checkpoint as for a segment write: the append is
// refused and the log stays online even with WriteErrorsOffline.
func TestEpochWriteOutOfDescriptors(t *testing.T) {
	mem, dir := memLogDir(t)
	var failing atomic.Bool
	fs := vfs.WithErrors(mem, func(op vfs.Op) error {
		if failing.Load() && strings.HasPrefix(filepath.Base(op.Path), LeaderEpochCheckpointFile) {
			return syscall.EMFILE
		}
		return nil
	})
	l, err := Open(dir, Config{FS: fs, Logger: quiet, writeErrorsOffline: true}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, 1, batchOf(2, 1, 1))
	failing.Store(true)
	if _, err := l.Append(batchOf(1, 1, 1), 3); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("append = %v, want EMFILE", err)
	}
	if l.Offline() != nil {
		t.Fatalf("log offline after running out of descriptors: %v", l.Offline())
	}
	failing.Store(false)
	mustAppend(t, l, 3, batchOf(1, 1, 1))
}
