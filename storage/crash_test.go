package storage

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage/vfs"
)

// crashPoint is the durable state of a MemFS at one sync, and what the
// workload had been told was durable by then.
type crashPoint struct {
	fs      *vfs.MemFS
	path    string // the file or directory just synced
	durable int64  // every offset below was acknowledged as fsynced
	logEnd  int64  // offsets below were written (acknowledged to a producer)
	start   int64  // the log start offset retention had moved to
}

// crashRecorder takes a crash clone at every sync of fs.
type crashRecorder struct {
	mu      sync.Mutex
	fs      *vfs.MemFS
	rng     *rand.Rand // torn crashes if set
	durable int64
	logEnd  int64
	start   int64
	points  []crashPoint
}

func newCrashRecorder(fs *vfs.MemFS, rng *rand.Rand) *crashRecorder {
	r := &crashRecorder{fs: fs, rng: rng}
	fs.SetSyncHook(func(path string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		c := fs.CrashClone(vfs.CrashOptions{Rand: r.rng})
		r.points = append(r.points, crashPoint{fs: c, path: path, durable: r.durable, logEnd: r.logEnd, start: r.start})
	})
	return r
}

// acked records what the workload knows: written up to logEnd, durable
// below durable.
func (r *crashRecorder) acked(durable, logEnd int64) {
	r.mu.Lock()
	r.durable = max(r.durable, durable)
	r.logEnd = logEnd
	r.mu.Unlock()
}

// memLogDir makes a durable empty directory for a partition on a new MemFS.
func memLogDir(t testing.TB) (*vfs.MemFS, string) {
	t.Helper()
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.SyncDir(fs, "/"); err != nil {
		t.Fatal(err)
	}
	return fs, "/data/t-0"
}

// checkRecovered opens the log on a crashed FS and checks the invariants:
// it opens; nothing acknowledged as durable is lost; offsets are dense from
// the log start; every batch is byte-for-byte one that was appended at that
// offset; lookups by offset and by time land on the right batch.
func checkRecovered(t *testing.T, cp crashPoint, dir string, cfg Config, rp int64, appended map[int64][]byte, ts map[int64]int64) {
	t.Helper()
	cfg.FS = cp.fs
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("crash at sync of %s, durable %d, recovery point %d: "+format, append([]any{cp.path, cp.durable, rp}, args...)...)
	}
	l, err := Open(dir, cfg, rp, false)
	if err != nil {
		fail("reopen after crash at sync of %s (durable %d): %v", cp.path, cp.durable, err)
	}
	defer l.Close()
	leo := l.LogEndOffset()
	if leo < cp.durable {
		fail("crash at sync of %s: log end %d, but offsets below %d were acknowledged durable", cp.path, leo, cp.durable)
	}
	// Retention's deletions may be undone by a crash, never go further.
	start := l.LogStartOffset()
	if start > cp.start {
		fail("log start %d, retention had moved it to %d only", start, cp.start)
	}
	next := start
	for next < leo {
		b, err := l.Read(next, 1<<30, 1<<62, true)
		if err != nil || len(b) == 0 {
			fail("read %d of [0, %d): %d bytes, %v", next, leo, len(b), err)
		}
		for len(b) > 0 {
			raw, h, rest, err := records.Split(b)
			if err != nil {
				fail("batch at %d: %v", next, err)
			}
			if h.BaseOffset != next {
				fail("batch at %d has base %d: offsets not dense", next, h.BaseOffset)
			}
			if want, ok := appended[next]; !ok || !bytes.Equal(raw, want) {
				fail("batch at %d is not the batch appended there", next)
			}
			next = h.NextOffset()
			b = rest
		}
	}
	if next != leo {
		fail("batches end at %d, log end %d", next, leo)
	}
	for off := start; off < leo; off++ {
		b, err := l.Read(off, 1, 1<<62, true)
		if err != nil {
			fail("read %d: %v", off, err)
		}
		hs := splitAll(t, b)
		if len(hs) != 1 || hs[0].BaseOffset > off || hs[0].LastOffset() < off {
			fail("read %d: wrong batch %+v", off, hs)
		}
	}
	for base, want := range ts {
		if base >= leo || base < start {
			continue
		}
		off, got, ok := l.OffsetForTimestamp(want)
		if !ok || off != base || got != want {
			fail("offset for timestamp %d: (%d, %d, %v), want (%d, %d)", want, off, got, ok, base, want)
		}
	}
}

// TestCrashAtEverySyncPointOfAppend crashes at every fsync of a workload of
// appends, rolls, flushes and producer snapshots, with an fsync per append
// (flush.messages=1) and with the default (fsync at roll and Flush), losing
// all unsynced bytes or keeping a random prefix of them, and checks each
// crashed state recovers from a zero recovery point and from the last
// acknowledged one.
func TestCrashAtEverySyncPointOfAppend(t *testing.T) {
	for _, flushMessages := range []int64{1, 0} {
		for _, torn := range []bool{false, true} {
			t.Run(fmt.Sprintf("flush.messages=%d/torn=%v", flushMessages, torn), func(t *testing.T) {
				fs, dir := memLogDir(t)
				var rng *rand.Rand
				if torn {
					rng = rand.New(rand.NewSource(7))
				}
				rec := newCrashRecorder(fs, rng)
				cfg := Config{FS: fs, SegmentBytes: 700, IndexIntervalBytes: 150, FlushIntervalMessages: flushMessages, Logger: quiet}
				l, err := Open(dir, cfg, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				appended := map[int64][]byte{}
				ts := map[int64]int64{}
				for i := range 30 {
					b := batchOf(1+i%3, int64(1000+10*i), 30+7*(i%5))
					info, err := l.Append(b, int32(i/10))
					if err != nil {
						t.Fatal(err)
					}
					appended[info.FirstOffset] = b
					ts[info.FirstOffset] = int64(1000 + 10*i)
					durable := int64(0)
					if flushMessages == 1 {
						durable = info.LastOffset + 1
					}
					rec.acked(durable, info.LastOffset+1)
					switch {
					case i%11 == 5:
						if err := l.Flush(); err != nil {
							t.Fatal(err)
						}
						rec.acked(l.LogEndOffset(), l.LogEndOffset())
					case i%13 == 7:
						if err := l.Roll(); err != nil {
							t.Fatal(err)
						}
						// Roll makes the segments before the new one durable.
						rec.acked(l.LogEndOffset(), l.LogEndOffset())
					case i%9 == 4:
						if err := l.WriteProducerSnapshot(l.LogEndOffset(), []ProducerSnapshotEntry{{ProducerID: 1, LastSequence: -1, LastOffset: -1, CurrentTxnFirstOffset: -1}}); err != nil {
							t.Fatal(err)
						}
					case i == 26:
						// Retention deletes the oldest segments; while it runs
						// the log start may be anything up to the log end.
						rec.mu.Lock()
						rec.start = l.LogEndOffset()
						rec.mu.Unlock()
						if n, err := l.ApplyRetention(time.UnixMilli(int64(1000+10*i)), 100, -1); err != nil || n == 0 {
							t.Fatalf("retention: %d segments, %v", n, err)
						}
						rec.mu.Lock()
						rec.start = l.LogStartOffset()
						rec.mu.Unlock()
					}
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				rec.acked(l.LogEndOffset(), l.LogEndOffset())
				fs.SetSyncHook(nil)
				rec.points = append(rec.points, crashPoint{fs: fs.CrashClone(vfs.CrashOptions{}), path: "(after close)", durable: rec.durable, start: rec.start})
				if len(rec.points) < 10 {
					t.Fatalf("only %d sync points", len(rec.points))
				}
				kinds := map[string]bool{}
				for _, cp := range rec.points {
					kinds[filepath.Ext(cp.path)] = true
					checkRecovered(t, cp, dir, cfg, 0, appended, ts)
					checkRecovered(t, cp, dir, cfg, cp.durable, appended, ts)
				}
				for _, k := range []string{".log", ".index", ".timeindex", ""} {
					if !kinds[k] {
						t.Errorf("no sync point of a %q file: %v", k, kinds)
					}
				}
			})
		}
	}
}

// TestCrashAtEverySyncPointOfCompaction crashes at every fsync of a
// compaction pass (the ".cleaned" files, their rename to ".swap", the swap
// into place) and checks each crashed state opens to the same log end and
// the same latest value of every key.
func TestCrashAtEverySyncPointOfCompaction(t *testing.T) {
	fs, dir := memLogDir(t)
	clock := newFakeClock()
	cfg := Config{FS: fs, SegmentBytes: 4096, Now: clock.Now, Logger: quiet}
	l, err := Open(dir, cfg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	want := map[string]*string{}
	fillKeyed(t, l, clock, rng, 300, 40, want)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	rec := newCrashRecorder(fs, nil)
	rec.acked(leo, leo)
	st, err := l.Clean(clock.Now(), noBound, CleanerConfig{DeleteRetentionMs: 1 << 40})
	if err != nil || st.Segments == 0 {
		t.Fatalf("clean: %+v, %v", st, err)
	}
	fs.SetSyncHook(nil)
	l.Close()
	if len(rec.points) < 4 {
		t.Fatalf("only %d sync points in a compaction", len(rec.points))
	}
	for _, cp := range rec.points {
		c := cfg
		c.FS = cp.fs
		l, err := Open(dir, c, leo, false)
		if err != nil {
			t.Fatalf("reopen after crash at sync of %s: %v", cp.path, err)
		}
		if l.LogEndOffset() != leo {
			t.Fatalf("crash at sync of %s: log end %d, want %d", cp.path, l.LogEndOffset(), leo)
		}
		ents, _ := cp.fs.ReadDir(dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), swapSuffix) || strings.HasSuffix(e.Name(), cleanedSuffix) {
				t.Errorf("crash at sync of %s: left over %s", cp.path, e.Name())
			}
		}
		checkCompacted(t, readRecords(t, l), want, 0, false)
		l.Close()
	}
}
