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

// failingSyncFS is a MemFS whose SyncFS fails, as a disk whose write-back
// failed.
type failingSyncFS struct{ *vfs.MemFS }

func (failingSyncFS) SyncFS(vfs.File) error { return syscall.EIO }

// closeWorkload fills a dir on fs with the logs a shutdown meets: one
// written and never flushed, one flushed and written again, one flushed
// since its last append, one empty, one that rolled, each with a producer
// snapshot at its end (as the broker writes at shutdown). It returns the
// dir, still open, and each log's end offset.
func closeWorkload(t *testing.T, fs vfs.FS, path string) (*Dir, map[TopicPartition]int64) {
	t.Helper()
	// The dir itself durable, as a real log dir is.
	if err := fs.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		if err := vfs.SyncDir(fs, p); err != nil {
			t.Fatal(err)
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	d, err := OpenDirConfig(path, DirConfig{FS: fs, Logger: quiet,
		ConfigFor: func(string, int32) Config { return Config{SegmentBytes: 400} }})
	if err != nil {
		t.Fatal(err)
	}
	ends := map[TopicPartition]int64{}
	for i, writes := range []func(l *Log){
		func(l *Log) { mustAppend(t, l, 0, batchOf(3, 1, 10)) },
		func(l *Log) {
			mustAppend(t, l, 0, batchOf(2, 1, 10))
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			mustAppend(t, l, 0, batchOf(4, 2, 10))
		},
		func(l *Log) {
			mustAppend(t, l, 0, batchOf(2, 1, 10))
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		},
		func(l *Log) {},
		func(l *Log) {
			for range 5 {
				mustAppend(t, l, 1, batchOf(2, 3, 100))
			}
		},
	} {
		tp := TopicPartition{"close", int32(i)}
		l, err := d.Create(tp, Config{SegmentBytes: 400})
		if err != nil {
			t.Fatal(err)
		}
		writes(l)
		if err := l.WriteProducerSnapshotAtClose(l.LogEndOffset(), nil); err != nil {
			t.Fatal(err)
		}
		ends[tp] = l.LogEndOffset()
	}
	return d, ends
}

// A clean Close leaves everything durable: after a power loss right after
// it, the dir opens as cleanly shut down, with every record (those written
// after their log's last flush included), recovery points at the log ends
// and the producer snapshots. Both ways of closing: one sync of the whole
// file system (MemFS is a vfs.FSSyncer) and an fsync per log (the
// error-injecting wrapper is not one).
func TestDirCloseLeavesEverythingDurable(t *testing.T) {
	for _, syncFS := range []bool{true, false} {
		name := "fsync per log"
		if syncFS {
			name = "syncfs"
		}
		t.Run(name, func(t *testing.T) {
			mem := vfs.NewMem()
			var fs vfs.FS = mem
			if !syncFS {
				fs = vfs.WithErrors(mem, func(vfs.Op) error { return nil })
			}
			if vfs.CanSyncFS(fs) != syncFS {
				t.Fatalf("CanSyncFS %v", vfs.CanSyncFS(fs))
			}
			const path = "/data/kafka"
			var mu sync.Mutex
			var synced []string
			mem.SetSyncHook(func(p string) {
				mu.Lock()
				synced = append(synced, p)
				mu.Unlock()
			})
			d, ends := closeWorkload(t, fs, path)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			mem.SetSyncHook(nil)
			// close-0 was never flushed (and never rolled, so the dir's
			// background flush of rolled segments does not touch it).
			segmentSyncs, snapshotSyncs := 0, 0
			for _, p := range synced {
				if strings.Contains(p, "close-0/") && strings.HasSuffix(p, logSuffix) {
					segmentSyncs++
				}
				if strings.HasSuffix(p, SnapshotSuffix+".tmp") {
					snapshotSyncs++
				}
			}
			if syncFS != (snapshotSyncs == 0) {
				t.Errorf("%d producer snapshots fsynced on their own", snapshotSyncs)
			}
			if syncFS && segmentSyncs != 0 {
				t.Errorf("Close with syncfs fsynced a segment on its own: %v", synced)
			}
			if !syncFS && segmentSyncs != 1 {
				t.Errorf("Close without syncfs fsynced the unflushed segment %d times: %v", segmentSyncs, synced)
			}

			crashed := mem.CrashClone(vfs.CrashOptions{})
			if _, err := crashed.Stat(filepath.Join(path, CleanShutdownFile)); err != nil {
				t.Fatalf("no clean shutdown marker after a power loss: %v", err)
			}
			rp, err := readOffsetCheckpoint(crashed, filepath.Join(path, RecoveryPointCheckpointFile))
			if err != nil {
				t.Fatal(err)
			}
			for tp, end := range ends {
				if rp[tp] != end {
					t.Errorf("%s: checkpointed recovery point %d, want the log end %d", tp, rp[tp], end)
				}
			}
			d2, err := OpenDirConfig(path, DirConfig{FS: crashed, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer d2.Close()
			for tp, end := range ends {
				l := d2.Log(tp)
				if l == nil {
					t.Fatalf("%s lost", tp)
				}
				if st := l.RecoveryStats(); st.Segments != 0 {
					t.Errorf("%s recovered after a clean shutdown: %+v", tp, st)
				}
				if l.LogEndOffset() != end || l.RecoveryPoint() != end {
					t.Errorf("%s: log end %d, recovery point %d; want %d", tp, l.LogEndOffset(), l.RecoveryPoint(), end)
				}
				checkDense(t, readAll(t, l, 0), 0, end)
				if snap, ok := l.LatestProducerSnapshot(end); !ok || snap.Offset != end {
					t.Errorf("%s: producer snapshot %+v %v, want one at %d", tp, snap, ok, end)
				}
			}
		})
	}
}

// A failed sync of the file system at Close is a failed Close: no clean
// shutdown marker, and the recovery points stay where the last flushes put
// them, so the next open recovers what was written since.
func TestDirCloseSyncFSFailure(t *testing.T) {
	mem := vfs.NewMem()
	fs := failingSyncFS{mem}
	const path = "/data/kafka"
	d, ends := closeWorkload(t, fs, path)
	if err := d.Close(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Close with a failing syncfs: %v, want EIO", err)
	}
	if _, err := mem.Stat(filepath.Join(path, CleanShutdownFile)); err == nil {
		t.Fatal("clean shutdown marker written after a failed sync")
	}
	rp, err := readOffsetCheckpoint(mem, filepath.Join(path, RecoveryPointCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	flushed := map[TopicPartition]int64{{"close", 1}: 2, {"close", 2}: 2, {"close", 4}: 8}
	for tp := range ends {
		if rp[tp] != flushed[tp] {
			t.Errorf("%s: checkpointed recovery point %d after a failed sync, want %d (its last flush)", tp, rp[tp], flushed[tp])
		}
	}
	d2, err := OpenDirConfig(path, DirConfig{FS: mem, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if st := d2.Log(TopicPartition{"close", 0}).RecoveryStats(); st.Segments == 0 {
		t.Error("no recovery after a failed Close")
	}
}

// SetConfig (a topic's config altered) keeps what the log's Dir set:
// before, it dropped WriteErrorsOffline, so a failed write no longer took
// a cluster-mode broker's dir offline after a topic config change.
func TestSetConfigKeepsWhatTheDirSet(t *testing.T) {
	mem := vfs.NewMem()
	d, err := OpenDirConfig("/data", DirConfig{FS: mem, Logger: quiet, WriteErrorsOffline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, err := d.Create(TopicPartition{"t", 0}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetConfig(Config{SegmentBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	cfg := l.config()
	if !cfg.writeErrorsOffline || !cfg.closeSyncsFS || cfg.FS != vfs.FS(mem) || cfg.files != d.files {
		t.Fatalf("after SetConfig: writeErrorsOffline %v, closeSyncsFS %v, FS kept %v, files kept %v",
			cfg.writeErrorsOffline, cfg.closeSyncsFS, cfg.FS == vfs.FS(mem), cfg.files == d.files)
	}
	if cfg.SegmentBytes != 1<<20 {
		t.Fatalf("segment bytes %d", cfg.SegmentBytes)
	}
}

// countingSyncFS is a MemFS that counts its SyncFS calls.
type countingSyncFS struct {
	*vfs.MemFS
	n *atomic.Int32
}

func (c countingSyncFS) SyncFS(dir vfs.File) error {
	c.n.Add(1)
	return c.MemFS.SyncFS(dir)
}

// A Close with nothing written since the last flushes (a restart with no
// traffic since) does not sync the whole file system, which would write
// back other programs' data too; one with anything written does.
func TestDirCloseSyncsFSOnlyIfNeeded(t *testing.T) {
	var n atomic.Int32
	fs := countingSyncFS{vfs.NewMem(), &n}
	const path = "/data/kafka"
	d, _ := closeWorkload(t, fs, path)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 {
		t.Fatalf("%d syncs of the file system closing written logs, want 1", n.Load())
	}
	for round, write := range []bool{false, true} {
		d, err := OpenDirConfig(path, DirConfig{FS: fs, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range d.Logs() {
			if write && l.Dir() == filepath.Join(path, "close-3") {
				mustAppend(t, l, 0, batchOf(1, 1, 10))
			}
			// As the broker at shutdown: an unchanged snapshot is not
			// rewritten.
			if err := l.WriteProducerSnapshotAtClose(l.LogEndOffset(), nil); err != nil {
				t.Fatal(err)
			}
		}
		n.Store(0)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int32{false: 0, true: 1}[write]; n.Load() != want {
			t.Fatalf("round %d (written %v): %d syncs of the file system, want %d", round, write, n.Load(), want)
		}
	}
}
