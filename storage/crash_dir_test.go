package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

// dirCrashPoint is the durable state of a MemFS at one sync during a log
// dir workload, with what the workload had been acknowledged by then.
type dirCrashPoint struct {
	fs      *vfs.MemFS
	path    string
	created []TopicPartition         // Create returned
	durable map[TopicPartition]int64 // offsets below were fsynced (flush.messages=1)
	removed map[TopicPartition]bool  // Remove returned
}

// TestCrashAtEverySyncPointOfLogDir crashes at every fsync of a log dir's
// life: partition creation, appends with an fsync each, segment rolls,
// checkpoint writes (recovery points, log start offsets, high watermarks),
// DeleteRecords, a partition removal and the clean shutdown. Every crashed
// state opens; every checkpoint file in it is readable; every partition
// whose creation returned exists (unless its removal returned) with every
// acknowledged record, densely, byte for byte.
func TestCrashAtEverySyncPointOfLogDir(t *testing.T) {
	for _, torn := range []bool{false, true} {
		t.Run(fmt.Sprintf("torn=%v", torn), func(t *testing.T) { crashLogDir(t, torn) })
	}
}

// crashLogDir runs TestCrashAtEverySyncPointOfLogDir; torn crashes keep a
// random prefix of the bytes written since each file's last fsync.
func crashLogDir(t *testing.T, torn bool) {
	var rng *rand.Rand
	if torn {
		rng = rand.New(rand.NewSource(11))
	}
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/data/kafka", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.SyncDir(mem, "/data"); err != nil {
		t.Fatal(err)
	}
	if err := vfs.SyncDir(mem, "/"); err != nil {
		t.Fatal(err)
	}
	const path = "/data/kafka"
	logCfg := Config{SegmentBytes: 500, IndexIntervalBytes: 100, FlushIntervalMessages: 1}
	cfg := DirConfig{FS: mem, Logger: quiet, ConfigFor: func(string, int32) Config { return logCfg }}

	var mu sync.Mutex
	var points []dirCrashPoint
	var created []TopicPartition
	durable := map[TopicPartition]int64{}
	removed := map[TopicPartition]bool{}
	appended := map[TopicPartition]map[int64][]byte{}
	snapshot := func(p string) dirCrashPoint {
		d := make(map[TopicPartition]int64, len(durable))
		for k, v := range durable {
			d[k] = v
		}
		r := make(map[TopicPartition]bool, len(removed))
		for k, v := range removed {
			r[k] = v
		}
		return dirCrashPoint{fs: mem.CrashClone(vfs.CrashOptions{Rand: rng}), path: p, created: append([]TopicPartition(nil), created...), durable: d, removed: r}
	}
	mem.SetSyncHook(func(p string) {
		mu.Lock()
		defer mu.Unlock()
		points = append(points, snapshot(p))
	})

	d, err := OpenDirConfig(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tps := []TopicPartition{{"a", 0}, {"a", 1}, {"b", 0}}
	for _, tp := range tps {
		if _, err := d.Create(tp, logCfg); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		created = append(created, tp)
		appended[tp] = map[int64][]byte{}
		mu.Unlock()
	}
	for i := range 24 {
		tp := tps[i%len(tps)]
		l := d.Log(tp)
		b := batchOf(1+i%2, int64(100+i), 60)
		info, err := l.Append(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		appended[tp][info.FirstOffset] = b
		durable[tp] = info.LastOffset + 1
		mu.Unlock()
		switch i {
		case 8:
			if err := d.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		case 12:
			if err := d.WriteHighWatermarks(map[TopicPartition]int64{tps[0]: d.Log(tps[0]).LogEndOffset()}); err != nil {
				t.Fatal(err)
			}
		case 17:
			// DeleteRecords: the log start moves; checkpointed at once.
			l0 := d.Log(tps[0])
			if err := l0.SetLogStartOffset(l0.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			if err := d.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// From here on b-0 may be gone after a crash; after Remove returns, and
	// after the close, it must be.
	mu.Lock()
	removed[tps[2]] = true
	mu.Unlock()
	if err := d.Remove(tps[2]); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	mem.SetSyncHook(nil)
	points = append(points, snapshot("(after close)"))

	if len(points) < 30 {
		t.Fatalf("only %d sync points", len(points))
	}
	for _, cp := range points {
		where := fmt.Sprintf("crash at sync of %s", cp.path)
		for _, name := range []string{RecoveryPointCheckpointFile, LogStartOffsetCheckpointFile, ReplicationCheckpointFile, CleanerCheckpointFile} {
			if _, err := readOffsetCheckpoint(cp.fs, filepath.Join(path, name)); err != nil {
				t.Fatalf("%s: checkpoint %s unreadable: %v", where, name, err)
			}
		}
		c := cfg
		c.FS = cp.fs
		d, err := OpenDirConfig(path, c)
		if err != nil {
			t.Fatalf("%s: open: %v", where, err)
		}
		for _, tp := range cp.created {
			l := d.Log(tp)
			if cp.removed[tp] {
				if l != nil && cp.path == "(after close)" {
					t.Errorf("%s: removed %v is back", where, tp)
				}
				continue
			}
			if l == nil {
				t.Fatalf("%s: created %v is gone", where, tp)
			}
			if l.LogEndOffset() < cp.durable[tp] {
				t.Fatalf("%s: %v ends at %d, acknowledged durable up to %d", where, tp, l.LogEndOffset(), cp.durable[tp])
			}
			next := l.LogStartOffset()
			for _, h := range readAll(t, l, next) {
				if h.BaseOffset != next {
					t.Fatalf("%s: %v: batch at %d, want %d", where, tp, h.BaseOffset, next)
				}
				raw, err := l.Read(next, 1, 1<<62, true)
				if err != nil || len(raw) < h.TotalSize() || string(raw[:h.TotalSize()]) != string(appended[tp][next]) {
					t.Fatalf("%s: %v: batch at %d is not the one appended (%v)", where, tp, next, err)
				}
				next = h.NextOffset()
			}
		}
		if err := d.Close(); err != nil {
			t.Fatalf("%s: close: %v", where, err)
		}
		if _, err := cp.fs.Stat(filepath.Join(path, CleanShutdownFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
}
