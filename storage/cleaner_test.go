package storage

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
)

// kv is a keyed record for keyedBatch; a nil value is a tombstone.
type kv struct {
	key, value string
	tomb       bool
}

// keyedBatch builds a batch of keyed records, all with timestamp ts.
func keyedBatch(t testing.TB, ts int64, codec records.Codec, kvs ...kv) []byte {
	t.Helper()
	recs := make([]records.Record, len(kvs))
	for i, r := range kvs {
		recs[i] = records.Record{OffsetDelta: int32(i), Key: []byte(r.key)}
		if !r.tomb {
			recs[i].Value = []byte(r.value)
		}
	}
	b, err := records.Build(records.BatchSpec{FirstTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logRecord is one record read back from a log.
type logRecord struct {
	offset int64
	key    string
	value  *string
}

// readRecords decodes every record of the log, checking batches and
// offsets strictly increase.
func readRecords(t testing.TB, l *Log) []logRecord {
	t.Helper()
	var out []logRecord
	last := int64(-1)
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		b, err := l.Read(off, 1<<30, 1<<62, true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if len(b) == 0 {
			break // a trailing gap left by compaction
		}
		for len(b) > 0 {
			h, recs, err := records.DecodeRecords(b)
			if err != nil {
				t.Fatalf("decode at %d: %v", off, err)
			}
			for _, r := range recs {
				o := h.BaseOffset + int64(r.OffsetDelta)
				if o <= last {
					t.Fatalf("offset %d after %d", o, last)
				}
				last = o
				lr := logRecord{offset: o, key: string(r.Key)}
				if r.Value != nil {
					v := string(r.Value)
					lr.value = &v
				}
				out = append(out, lr)
			}
			off = h.NextOffset()
			b = b[h.TotalSize():]
		}
	}
	return out
}

// fillKeyed appends n batches of 5 records over nkeys keys, every 7th record
// a tombstone, advancing clock by 10ms per batch, and returns the latest
// value of each key (nil for a tombstone).
func fillKeyed(t testing.TB, l *Log, clock *fakeClock, rng *rand.Rand, n, nkeys int, want map[string]*string) {
	for i := 0; i < n; i++ {
		var kvs []kv
		for j := 0; j < 5; j++ {
			k := fmt.Sprintf("k%03d", rng.Intn(nkeys))
			r := kv{key: k, value: fmt.Sprintf("v%d-%d", i, j)}
			if rng.Intn(7) == 0 {
				r = kv{key: k, tomb: true}
				want[k] = nil
			} else {
				v := r.value
				want[k] = &v
			}
			kvs = append(kvs, r)
		}
		codec := records.CodecNone
		if i%3 == 0 {
			codec = records.CodecLZ4
		}
		mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), codec, kvs...))
		clock.Advance(10 * time.Millisecond)
	}
}

// checkCompacted checks one record per key among the compacted offsets
// (below upTo), that every key's newest value is present, and that no
// tombstone remains if noTombstones.
func checkCompacted(t testing.TB, recs []logRecord, want map[string]*string, upTo int64, noTombstones bool) {
	t.Helper()
	seen := map[string]int{}
	latest := map[string]*string{}
	for _, r := range recs {
		if r.offset < upTo {
			seen[r.key]++
		}
		latest[r.key] = r.value
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("key %s appears %d times in the compacted part", k, n)
		}
	}
	for k, v := range want {
		got, ok := latest[k]
		switch {
		case v == nil && noTombstones:
			if ok {
				t.Errorf("key %s: tombstone or value %v remains", k, got)
			}
		case v == nil:
			if !ok || got != nil {
				t.Errorf("key %s: want tombstone, got present=%v", k, ok)
			}
		case !ok || got == nil || *got != *v:
			t.Errorf("key %s: got %v, want %s", k, got, *v)
		}
	}
}

func TestCleanKeepsNewestPerKey(t *testing.T) {
	clock := newFakeClock()
	l, dir := openLog(t, Config{SegmentBytes: 4096, Now: clock.Now})
	rng := rand.New(rand.NewSource(1))
	want := map[string]*string{}
	fillKeyed(t, l, clock, rng, 400, 60, want)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	leo, sizeBefore := l.LogEndOffset(), l.Size()
	cc := CleanerConfig{DeleteRetentionMs: 3600_000, MinCleanableRatio: 0.5}
	st, err := l.Clean(clock.Now(), noBound, cc)
	if err != nil {
		t.Fatal(err)
	}
	if st.Segments == 0 || st.RecordsRemoved == 0 || l.Size() >= sizeBefore/4 {
		t.Fatalf("stats %+v, size %d -> %d", st, sizeBefore, l.Size())
	}
	if l.LogEndOffset() != leo || l.LogStartOffset() != 0 {
		t.Fatalf("log range [%d, %d), want [0, %d)", l.LogStartOffset(), l.LogEndOffset(), leo)
	}
	checkCompacted(t, readRecords(t, l), want, leo, false)
	if st.FirstDirty != leo {
		t.Fatalf("first dirty %d, want %d", st.FirstDirty, leo)
	}

	// Nothing dirty: a second pass does nothing.
	if st, err := l.Clean(clock.Now(), noBound, cc); err != nil || st.Segments != 0 {
		t.Fatalf("second pass: %+v %v", st, err)
	}

	// Later, with new data, expired tombstones go too.
	clock.Advance(2 * time.Hour)
	fillKeyed(t, l, clock, rng, 200, 60, want)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	cc.MinCleanableRatio = 0
	// Tombstones written in the last hour stay.
	if _, err := l.Clean(clock.Now(), noBound, cc); err != nil {
		t.Fatal(err)
	}
	checkCompacted(t, readRecords(t, l), want, l.LogEndOffset(), false)
	clock.Advance(2 * time.Hour)
	fillKeyed(t, l, clock, rng, 1, 1000, map[string]*string{})
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	st, err = l.Clean(clock.Now(), noBound, cc)
	if err != nil {
		t.Fatal(err)
	}
	if st.TombstonesRemoved == 0 {
		t.Fatalf("no tombstone removed: %+v", st)
	}
	recs := readRecords(t, l)
	for _, r := range recs {
		if r.value == nil {
			t.Fatalf("tombstone for %s at %d survived its delete.retention.ms", r.key, r.offset)
		}
	}
	checkCompacted(t, recs, want, l.LogEndOffset(), true)

	// The rewritten segments and indexes survive a reopen, clean or not.
	for _, clean := range []bool{true, false} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, err := Open(dir, Config{SegmentBytes: 4096, Now: clock.Now, Logger: quiet}, 0, clean)
		if err != nil {
			t.Fatal(err)
		}
		l = l2
		t.Cleanup(func() { l2.Close() })
		if l.LogEndOffset() != leo+200*5+5 {
			t.Fatalf("reopened LEO %d", l.LogEndOffset())
		}
		checkCompacted(t, readRecords(t, l), want, l.LogEndOffset(), true)
	}
}

func TestCleanRespectsMinCompactionLagAndRatio(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, Config{SegmentBytes: 2048, Now: clock.Now})
	rng := rand.New(rand.NewSource(2))
	want := map[string]*string{}
	fillKeyed(t, l, clock, rng, 100, 5, want)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	// Every record is younger than the lag: nothing is cleanable.
	st, err := l.Clean(clock.Now(), noBound, CleanerConfig{MinCompactionLagMs: 60_000, DeleteRetentionMs: 1 << 40})
	if err != nil || st.Segments != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	// A ratio above 1 is never reached.
	st, err = l.Clean(clock.Now(), noBound, CleanerConfig{MinCleanableRatio: 1.1, DeleteRetentionMs: 1 << 40})
	if err != nil || st.Segments != 0 {
		t.Fatalf("%+v %v", st, err)
	}
	// Half the records old enough: only segments before the first young one are cleaned.
	clock.Advance(59500 * time.Millisecond)
	st, err = l.Clean(clock.Now(), noBound, CleanerConfig{MinCompactionLagMs: 60_000, DeleteRetentionMs: 1 << 40})
	if err != nil || st.Segments == 0 || st.FirstDirty >= l.LogEndOffset() {
		t.Fatalf("%+v %v", st, err)
	}
	checkCompacted(t, readRecords(t, l), want, 0, false)
}

func TestCleanStopsAtOpenTransaction(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, Config{SegmentBytes: 1024, Now: clock.Now})
	for i := 0; i < 20; i++ {
		mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: "a", value: fmt.Sprint(i)}))
	}
	open := l.LogEndOffset()
	// A transactional batch without a marker: an open transaction, even if
	// the caller's bound (noBound) does not know of it.
	mustAppend(t, l, 0, txnBatch(t, 7, 0, 1, kv{key: "a", value: "txn"}))
	for i := 20; i < 60; i++ {
		mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: "a", value: fmt.Sprint(i)}))
	}
	l.Roll()
	st, err := l.Clean(clock.Now(), noBound, CleanerConfig{DeleteRetentionMs: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if st.Segments == 0 {
		t.Fatal("nothing cleaned below the open transaction")
	}
	var after []string
	for _, r := range readRecords(t, l) {
		if r.offset >= open {
			after = append(after, *r.value)
		}
	}
	if len(after) != 41 || after[0] != "txn" || after[40] != "59" {
		t.Fatalf("records from the open transaction on: %v", after)
	}
	if got := l.FirstDirtyOffset(); got > open {
		t.Fatalf("first dirty offset %d beyond the open transaction at %d", got, open)
	}
}

func TestCleanKeepsLastBatchOfProducer(t *testing.T) {
	clock := newFakeClock()
	l, dir := openLog(t, Config{SegmentBytes: 1024, Now: clock.Now})
	for i := 0; i < 3; i++ {
		b, err := records.Build(records.BatchSpec{FirstTimestamp: 1, ProducerID: 9, ProducerEpoch: 0, BaseSequence: int32(i * 2)},
			[]records.Record{{Key: []byte("p"), Value: []byte("x")}, {OffsetDelta: 1, Key: []byte("q"), Value: []byte("y")}})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, 0, b)
	}
	for i := 0; i < 40; i++ {
		mustAppend(t, l, 0, keyedBatch(t, 2, records.CodecNone, kv{key: "p", value: "z"}, kv{key: "q", value: "z"}))
	}
	l.Roll()
	if _, err := l.Clean(clock.Now(), noBound, CleanerConfig{DeleteRetentionMs: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	// The producer's last batch (offsets 4-5) remains, empty.
	b, err := l.Read(0, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	h, recs, err := records.DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 4 || h.LastOffset() != 5 || h.ProducerID != 9 || h.BaseSequence != 4 || len(recs) != 0 {
		t.Fatalf("first batch %+v with %d records", h, len(recs))
	}
	_ = dir
}

func TestCleanCrashLeavesValidLog(t *testing.T) {
	for _, stage := range []string{"before-swap", "indexes-swapped", "old-removed", "log-swapped"} {
		t.Run(stage, func(t *testing.T) {
			clock := newFakeClock()
			cfg := Config{SegmentBytes: 4096, Now: clock.Now, Logger: quiet}
			dir := t.TempDir() + "/t-0"
			l, err := Open(dir, cfg, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(3))
			want := map[string]*string{}
			fillKeyed(t, l, clock, rng, 300, 40, want)
			l.Roll()
			leo := l.LogEndOffset()
			if stage == "before-swap" {
				// A crash while writing: a partial ".cleaned" file.
				os.WriteFile(filepath.Join(dir, "00000000000000000000.log.cleaned"), []byte("partial"), 0o644)
				os.WriteFile(filepath.Join(dir, "00000000000000000000.index.swap"), []byte("partial"), 0o644)
			} else {
				testHookCleanStage = func(s string) error {
					if s == stage {
						return errors.New("crash")
					}
					return nil
				}
				defer func() { testHookCleanStage = nil }()
				if _, err := l.Clean(clock.Now(), noBound, CleanerConfig{DeleteRetentionMs: 1 << 40}); err == nil {
					t.Fatal("clean did not stop at the injected crash")
				}
				testHookCleanStage = nil
			}
			l.Close()
			l, err = Open(dir, cfg, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.LogEndOffset() != leo {
				t.Fatalf("LEO %d after crash, want %d", l.LogEndOffset(), leo)
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if filepath.Ext(e.Name()) == ".swap" || filepath.Ext(e.Name()) == ".cleaned" {
					t.Errorf("left over: %s", e.Name())
				}
			}
			checkCompacted(t, readRecords(t, l), want, 0, false)
			// And it can be compacted fully afterwards.
			if _, err := l.Clean(clock.Now(), noBound, CleanerConfig{DeleteRetentionMs: 1 << 40}); err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, readRecords(t, l), want, leo, false)
		})
	}
}

func TestApplyRetentionByTime(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, Config{SegmentBytes: 200, Now: clock.Now})
	base := clock.Now().UnixMilli()
	for i := 0; i < 10; i++ {
		mustAppend(t, l, 0, batchOf(1, base+int64(i)*1000, 150)) // one batch per segment
	}
	if n := len(l.mu.segments); n != 10 {
		t.Fatalf("%d segments", n)
	}
	clock.Advance(10 * time.Second) // now = base+10000; segment i is 10000-1000i old
	n, err := l.ApplyRetention(clock.Now(), 5500, -1)
	if err != nil {
		t.Fatal(err)
	}
	// Segments 0..4 are 10s..6s old: deleted; segment 5 is 5s old.
	if n != 5 || l.LogStartOffset() != 5 {
		t.Fatalf("deleted %d, log start %d", n, l.LogStartOffset())
	}
	if _, err := l.Read(4, 1<<20, 1<<62, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	// Everything expired: the active segment stays.
	clock.Advance(time.Hour)
	n, err = l.ApplyRetention(clock.Now(), 1000, -1)
	if err != nil || n != 4 || l.LogStartOffset() != 9 || l.LogEndOffset() != 10 {
		t.Fatalf("deleted %d (%v), log [%d, %d)", n, err, l.LogStartOffset(), l.LogEndOffset())
	}
	if hs := readAll(t, l, 9); len(hs) != 1 {
		t.Fatalf("%d batches left", len(hs))
	}
	// -1 means no limit.
	if n, _ := l.ApplyRetention(clock.Now(), -1, -1); n != 0 {
		t.Fatalf("deleted %d with no limits", n)
	}
}

func TestApplyRetentionBySize(t *testing.T) {
	l, _ := openLog(t, Config{SegmentBytes: 200})
	for i := 0; i < 10; i++ {
		mustAppend(t, l, 0, batchOf(1, 1, 150))
	}
	seg := l.Size() / 10
	n, err := l.ApplyRetention(time.Now(), -1, 3*seg+seg/2)
	if err != nil {
		t.Fatal(err)
	}
	// Deleting while the rest stays >= the limit: 10 segments -> 4.
	if n != 6 || l.LogStartOffset() != 6 || l.Size() != 4*seg {
		t.Fatalf("deleted %d, start %d, size %d", n, l.LogStartOffset(), l.Size())
	}
	if n, _ := l.ApplyRetention(time.Now(), -1, 0); n != 3 || l.LogStartOffset() != 9 {
		t.Fatalf("retention.bytes=0 deleted %d, start %d", n, l.LogStartOffset())
	}
}

func TestSetConfigLive(t *testing.T) {
	l, _ := openLog(t, Config{})
	mustAppend(t, l, 0, batchOf(1, 1, 150))
	mustAppend(t, l, 0, batchOf(1, 1, 150))
	if err := l.SetConfig(Config{SegmentBytes: 100}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, 0, batchOf(1, 1, 150))
	if n := len(l.mu.segments); n != 2 {
		t.Fatalf("%d segments after lowering segment bytes", n)
	}
	if err := l.SetConfig(Config{SegmentBytes: 1}); err == nil {
		t.Fatal("invalid segment bytes accepted")
	}
}

func TestWriteFaultLosesNothingAcknowledged(t *testing.T) {
	var fail error
	cfg := Config{SegmentBytes: 1000, WriteFault: func(string, int) (int, error) { return 37, fail }}
	dir := t.TempDir() + "/t-0"
	cfg.Logger = quiet
	l, err := Open(dir, cfg, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		mustAppend(t, l, 0, batchOf(2, 1, 100))
	}
	fail = syscall.ENOSPC
	for i := 0; i < 3; i++ {
		if _, err := l.Append(batchOf(2, 1, 100), 0); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("append on full disk: %v", err)
		}
	}
	if l.LogEndOffset() != 20 {
		t.Fatalf("LEO %d after failed appends", l.LogEndOffset())
	}
	checkDense(t, readAll(t, l, 0), 0, 20)
	fail = nil
	mustAppend(t, l, 0, batchOf(2, 1, 100))
	// A crash now: recovery finds exactly the acknowledged batches.
	l2dir := dir
	l.Flush()
	l, err = Open(l2dir, cfg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 22 {
		t.Fatalf("LEO %d after recovery", l.LogEndOffset())
	}
	checkDense(t, readAll(t, l, 0), 0, 22)
}

func TestCleanAndRetentionConcurrentWithAppendAndRead(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, Config{SegmentBytes: 2048, Now: clock.Now})
	done := make(chan struct{})
	errc := make(chan error, 2)
	go func() { // reader: whatever it reads decodes and has increasing offsets
		defer func() { errc <- nil }()
		for {
			select {
			case <-done:
				return
			default:
			}
			off := l.LogStartOffset()
			b, err := l.Read(off, 1<<16, 1<<62, true)
			if err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
				errc <- err
				return
			}
			for len(b) > 0 {
				h, _, err := records.DecodeRecords(b)
				if err != nil {
					errc <- err
					return
				}
				b = b[h.TotalSize():]
			}
		}
	}()
	rng := rand.New(rand.NewSource(4))
	for i := 0; i < 30; i++ {
		fillKeyed(t, l, clock, rng, 20, 10, map[string]*string{})
		if _, err := l.Clean(clock.Now(), noBound, CleanerConfig{DeleteRetentionMs: 1000}); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if _, err := l.ApplyRetention(clock.Now(), 1500, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	readRecords(t, l)
}
