package storage

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
)

// noBound is a stable offset that does not limit cleaning.
const noBound = math.MaxInt64

// txnBatch builds a transactional batch of producer pid.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, kvs ...kv) []byte {
	t.Helper()
	recs := make([]records.Record, len(kvs))
	for i, r := range kvs {
		recs[i] = records.Record{OffsetDelta: int32(i), Key: []byte(r.key)}
		if !r.tomb {
			recs[i].Value = []byte(r.value)
		}
	}
	b, err := records.Build(records.BatchSpec{FirstTimestamp: 1, ProducerID: pid, ProducerEpoch: epoch,
		BaseSequence: seq, Attributes: 0x10}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// markerBatch builds a COMMIT or ABORT marker of producer pid.
func markerBatch(t testing.TB, pid int64, epoch int16, ct records.ControlType, ts int64) []byte {
	t.Helper()
	b, err := records.BuildControlBatch(pid, epoch, ct, 0, ts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// abortedEntry is an aborted transaction as the broker lists it to
// read_committed fetches.
type abortedEntry struct{ pid, first, marker int64 }

// readCommitted reads the log as a read_committed consumer does (Kafka's
// CompletedFetch): given the aborted transactions the broker lists, a
// producer is skipped from the first offset of its aborted transaction until
// it meets that producer's ABORT marker. It returns the last value of each
// key (nil for a tombstone) and checks offsets increase.
func readCommitted(t testing.TB, l *Log, aborted []abortedEntry) map[string]*string {
	t.Helper()
	aborted = append([]abortedEntry(nil), aborted...)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].first < aborted[j].first })
	skipping := map[int64]bool{}
	out := map[string]*string{}
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		b, err := l.Read(off, 1<<30, 1<<62, true)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		if len(b) == 0 {
			break
		}
		for len(b) > 0 {
			h, recs, err := records.DecodeRecords(b)
			if err != nil {
				t.Fatalf("decode at %d: %v", off, err)
			}
			if h.BaseOffset <= last {
				t.Fatalf("batch at %d after offset %d", h.BaseOffset, last)
			}
			last = h.LastOffset()
			for len(aborted) > 0 && aborted[0].first <= h.LastOffset() {
				skipping[aborted[0].pid] = true
				aborted = aborted[1:]
			}
			switch {
			case h.IsControl():
				if ct, _ := records.ControlTypeOf(b[:h.TotalSize()]); ct == records.ControlAbort {
					delete(skipping, h.ProducerID)
				}
			case h.IsTransactional() && skipping[h.ProducerID]:
			default:
				for _, r := range recs {
					if r.Value == nil {
						out[string(r.Key)] = nil
					} else {
						v := string(r.Value)
						out[string(r.Key)] = &v
					}
				}
			}
			off = h.NextOffset()
			b = b[h.TotalSize():]
		}
	}
	return out
}

// checkCommitted compares a read_committed view with the expected newest
// committed value per key; an expected tombstone may also be absent.
func checkCommitted(t testing.TB, got, want map[string]*string) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == nil:
			if ok && g != nil {
				t.Errorf("key %s: want deleted, got %q", k, *g)
			}
		case !ok || g == nil:
			t.Errorf("key %s: want %q, got nothing", k, *v)
		case *g != *v:
			t.Errorf("key %s: want %q, got %q", k, *v, *g)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && g != nil {
			t.Errorf("key %s: unexpected value %q", k, *g)
		}
	}
}

// TestCleanTransactionsKeepsReadCommitted interleaves plain writes and
// committed and aborted transactions of several producers over many keys,
// then cleans repeatedly: after every pass a read_committed reader (told of
// aborted transactions as the broker tells it: its list less the ones the
// cleaner reported emptied) sees the newest committed value of every key,
// no record of an aborted transaction is left in the cleaned part, markers
// go only once their transaction's data is gone and their horizon passed,
// and a rescan of the log finds no transaction left open.
func TestCleanTransactionsKeepsReadCommitted(t *testing.T) {
	clock := newFakeClock()
	l, dir := openLog(t, Config{SegmentBytes: 4096, Now: clock.Now})
	rng := rand.New(rand.NewSource(42))
	want := map[string]*string{}
	pending := map[int64][]kv{}
	pendingAt := map[int64][]int64{} // offsets of pending's records
	wantAt := map[string]int64{}     // offset of want's value
	firstOf := map[int64]int64{}
	seq := map[int64]int32{}
	var aborted []abortedEntry
	isAbortedRec := map[int64]bool{} // offsets of records of aborted transactions
	txnRecs := map[int64][]int64{}   // producer → offsets of its open transaction's records
	// The newest committed value of a key is the one at the highest offset
	// (not the last committed): compaction and consumers go by offsets.
	set := func(r kv, at int64) {
		if o, ok := wantAt[r.key]; ok && o > at {
			return
		}
		wantAt[r.key] = at
		if r.tomb {
			want[r.key] = nil
		} else {
			v := r.value
			want[r.key] = &v
		}
	}
	randKV := func(i, j int) kv {
		r := kv{key: fmt.Sprintf("k%03d", rng.Intn(150)), value: fmt.Sprintf("v%d-%d", i, j)}
		if rng.Intn(10) == 0 {
			r = kv{key: r.key, tomb: true}
		}
		return r
	}
	endTxn := func(pid int64, commit bool) {
		ct := records.ControlAbort
		if commit {
			ct = records.ControlCommit
		}
		info := mustAppend(t, l, 0, markerBatch(t, pid, 0, ct, clock.Now().UnixMilli()))
		if commit {
			for i, r := range pending[pid] {
				set(r, pendingAt[pid][i])
			}
		} else {
			aborted = append(aborted, abortedEntry{pid: pid, first: firstOf[pid], marker: info.FirstOffset})
			for _, o := range txnRecs[pid] {
				isAbortedRec[o] = true
			}
		}
		delete(pending, pid)
		delete(pendingAt, pid)
		delete(firstOf, pid)
		delete(txnRecs, pid)
	}
	for i := 0; i < 1500; i++ {
		pid := int64(1 + rng.Intn(5))
		switch r := rng.Intn(10); {
		case r < 3:
			kvs := []kv{randKV(i, 0), randKV(i, 1)}
			info := mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kvs...))
			for j, r := range kvs {
				set(r, info.FirstOffset+int64(j))
			}
		case r < 8:
			kvs := []kv{randKV(i, 0)}
			if rng.Intn(2) == 0 {
				kvs = append(kvs, randKV(i, 1))
			}
			info := mustAppend(t, l, 0, txnBatch(t, pid, 0, seq[pid], kvs...))
			seq[pid] += int32(len(kvs))
			if _, ok := firstOf[pid]; !ok {
				firstOf[pid] = info.FirstOffset
			}
			pending[pid] = append(pending[pid], kvs...)
			for j := range kvs {
				pendingAt[pid] = append(pendingAt[pid], info.FirstOffset+int64(j))
			}
			for o := info.FirstOffset; o <= info.LastOffset; o++ {
				txnRecs[pid] = append(txnRecs[pid], o)
			}
		default:
			if _, ok := firstOf[pid]; ok {
				endTxn(pid, rng.Intn(2) == 0)
			}
		}
		clock.Advance(10 * time.Millisecond)
	}
	for pid := int64(1); pid <= 5; pid++ {
		if _, ok := firstOf[pid]; ok {
			endTxn(pid, pid%2 == 0)
		}
	}
	if len(aborted) < 20 {
		t.Fatalf("only %d aborted transactions generated", len(aborted))
	}
	// Each producer writes a last committed transaction, so no marker above
	// is its producer's last batch.
	for pid := int64(1); pid <= 5; pid++ {
		last := kv{key: fmt.Sprintf("last%d", pid), value: "x"}
		info := mustAppend(t, l, 0, txnBatch(t, pid, 0, seq[pid], last))
		pending[pid], pendingAt[pid] = []kv{last}, []int64{info.FirstOffset}
		endTxn(pid, true)
	}
	checkCommitted(t, readCommitted(t, l, aborted), want)

	cc := CleanerConfig{DeleteRetentionMs: 60_000}
	var abortedRemoved, markersRemoved int64
	for pass := 0; pass < 5; pass++ {
		l.Roll()
		// Fresh dirty bytes make every pass run.
		filler := kv{key: "filler", value: fmt.Sprint(pass)}
		info := mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, filler))
		set(filler, info.FirstOffset)
		l.Roll()
		st, err := l.Clean(clock.Now(), l.LogEndOffset(), cc)
		if err != nil {
			t.Fatal(err)
		}
		if st.Segments == 0 {
			t.Fatalf("pass %d cleaned nothing", pass)
		}
		abortedRemoved += st.AbortedRemoved
		markersRemoved += st.MarkersRemoved
		gone := map[AbortedTxn]bool{}
		for _, a := range st.EmptiedAborts {
			gone[a] = true
		}
		kept := aborted[:0]
		for _, a := range aborted {
			if !gone[AbortedTxn{ProducerID: a.pid, MarkerOffset: a.marker}] {
				kept = append(kept, a)
			}
		}
		aborted = kept
		checkCommitted(t, readCommitted(t, l, aborted), want)
		clock.Advance(time.Hour)
	}
	if len(aborted) != 0 {
		t.Errorf("%d aborted transactions still listed after their data went", len(aborted))
	}
	if abortedRemoved != int64(len(isAbortedRec)) || markersRemoved == 0 {
		t.Errorf("removed %d of %d aborted records and %d markers", abortedRemoved, len(isAbortedRec), markersRemoved)
	}

	// No record of an aborted transaction remains; a marker remains only
	// while data of its transaction does, or as its producer's last batch;
	// a rescan finds nothing open.
	seen := map[int64]bool{}
	lastMarker := map[int64]int64{}
	var dataless []int64
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		b, err := l.Read(off, 1<<30, 1<<62, true)
		if err != nil || len(b) == 0 {
			break
		}
		for len(b) > 0 {
			h, recs, err := records.DecodeRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case h.IsControl():
				if !seen[h.ProducerID] {
					dataless = append(dataless, h.BaseOffset)
				}
				seen[h.ProducerID] = false
				lastMarker[h.ProducerID] = h.BaseOffset
			case h.IsTransactional():
				seen[h.ProducerID] = true
			}
			for _, r := range recs {
				if o := h.BaseOffset + int64(r.OffsetDelta); isAbortedRec[o] && !h.IsControl() {
					t.Errorf("record %d of an aborted transaction remains", o)
				}
			}
			off = h.NextOffset()
			b = b[h.TotalSize():]
		}
	}
	for _, off := range dataless {
		last := false
		for _, m := range lastMarker {
			last = last || m == off
		}
		if !last {
			t.Errorf("marker at %d remains without data", off)
		}
	}
	l.Close()
	l2, err := Open(dir, Config{SegmentBytes: 4096, Now: clock.Now, Logger: quiet}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	views, _, err := l2.views()
	if err != nil {
		t.Fatal(err)
	}
	txns, err := scanTxns(views)
	if err != nil {
		t.Fatal(err)
	}
	if txns.open != math.MaxInt64 {
		t.Errorf("rescan finds a transaction open at %d", txns.open)
	}
	checkCommitted(t, readCommitted(t, l2, nil), want)
}

// TestCleanMarkerLifecycle follows one aborted and one committed
// transaction pass by pass: data goes first, the marker gets a delete
// horizon in the next pass and goes in the first pass after the horizon.
func TestCleanMarkerLifecycle(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, Config{SegmentBytes: 1 << 20, Now: clock.Now})
	mustAppend(t, l, 0, txnBatch(t, 1, 0, 0, kv{key: "a", value: "aborted"}))
	mustAppend(t, l, 0, txnBatch(t, 2, 0, 0, kv{key: "b", value: "old"}))
	abortAt := mustAppend(t, l, 0, markerBatch(t, 1, 0, records.ControlAbort, clock.Now().UnixMilli())).FirstOffset
	commitAt := mustAppend(t, l, 0, markerBatch(t, 2, 0, records.ControlCommit, clock.Now().UnixMilli())).FirstOffset
	// Later batches: "b" superseded; both producers' last batches are later.
	mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: "b", value: "new"}))
	mustAppend(t, l, 0, txnBatch(t, 1, 0, 1, kv{key: "c", value: "1"}), markerBatch(t, 1, 0, records.ControlCommit, 1))
	mustAppend(t, l, 0, txnBatch(t, 2, 0, 1, kv{key: "d", value: "2"}), markerBatch(t, 2, 0, records.ControlCommit, 1))

	cc := CleanerConfig{DeleteRetentionMs: 60_000}
	// batchAt returns the header of the batch at offset, ok false if gone.
	batchAt := func(off int64) (records.Header, bool) {
		b, err := l.Read(off, 1<<20, 1<<62, true)
		if err != nil || len(b) == 0 {
			return records.Header{}, false
		}
		h, err := records.ParseHeader(b)
		return h, err == nil && h.BaseOffset == off
	}
	pass := func() CleanStats {
		t.Helper()
		l.Roll()
		mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: "filler", value: "x"}))
		l.Roll()
		st, err := l.Clean(clock.Now(), l.LogEndOffset(), cc)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}

	st := pass()
	if st.AbortedRemoved != 1 || st.MarkersRemoved != 0 || len(st.EmptiedAborts) != 0 {
		t.Fatalf("pass 1: %+v", st)
	}
	if _, ok := batchAt(0); ok {
		t.Fatal("aborted data kept")
	}
	for _, off := range []int64{abortAt, commitAt} {
		if h, ok := batchAt(off); !ok || h.Attributes&deleteHorizonAttr != 0 {
			t.Fatalf("pass 1: marker at %d: %+v present=%v; want kept without horizon", off, h, ok)
		}
	}

	st = pass()
	if len(st.EmptiedAborts) != 1 || st.EmptiedAborts[0] != (AbortedTxn{ProducerID: 1, MarkerOffset: abortAt}) {
		t.Fatalf("pass 2 emptied aborts: %+v", st.EmptiedAborts)
	}
	for _, off := range []int64{abortAt, commitAt} {
		h, ok := batchAt(off)
		if !ok || h.Attributes&deleteHorizonAttr == 0 || h.FirstTimestamp != clock.Now().UnixMilli()+60_000 {
			t.Fatalf("pass 2: marker at %d: %+v present=%v; want a horizon", off, h, ok)
		}
	}

	clock.Advance(59 * time.Second)
	if st = pass(); st.MarkersRemoved != 0 {
		t.Fatalf("markers removed before their horizon: %+v", st)
	}
	clock.Advance(time.Second)
	if st = pass(); st.MarkersRemoved != 2 {
		t.Fatalf("pass after the horizon: %+v", st)
	}
	for _, off := range []int64{abortAt, commitAt} {
		if _, ok := batchAt(off); ok {
			t.Fatalf("marker at %d still there", off)
		}
	}
	got := readCommitted(t, l, nil)
	if len(got) != 4 || *got["b"] != "new" || *got["c"] != "1" || *got["d"] != "2" {
		t.Fatalf("after cleaning: %v", got)
	}
}

// TestCleanKeepsMarkerWhileDataRemains: a committed transaction whose
// records stay keeps its marker however old it is.
func TestCleanKeepsMarkerWhileDataRemains(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, Config{SegmentBytes: 1 << 20, Now: clock.Now})
	mustAppend(t, l, 0, txnBatch(t, 1, 0, 0, kv{key: "a", value: "1"}))
	at := mustAppend(t, l, 0, markerBatch(t, 1, 0, records.ControlCommit, 1)).FirstOffset
	mustAppend(t, l, 0, txnBatch(t, 1, 0, 1, kv{key: "b", value: "2"}), markerBatch(t, 1, 0, records.ControlCommit, 1))
	for i := 0; i < 4; i++ {
		l.Roll()
		mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: "filler", value: "x"}))
		l.Roll()
		if _, err := l.Clean(clock.Now(), l.LogEndOffset(), CleanerConfig{}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
	}
	b, err := l.Read(at, 1<<20, 1<<62, true)
	if err != nil || len(b) == 0 {
		t.Fatalf("read marker: %v", err)
	}
	if h, _ := records.ParseHeader(b); h.BaseOffset != at || !h.IsControl() {
		t.Fatalf("marker of a transaction with data removed; first batch now %+v", h)
	}
}

func TestCleanRespectsStableOffset(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, Config{SegmentBytes: 1 << 20, Now: clock.Now})
	for seg := 0; seg < 4; seg++ {
		for i := 0; i < 10; i++ {
			mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: "a", value: fmt.Sprint(seg*10 + i)}))
		}
		l.Roll()
	}
	// Stable offset 25 lies in the third segment [20, 30): only the first
	// two are cleanable.
	st, err := l.Clean(clock.Now(), 25, CleanerConfig{DeleteRetentionMs: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if st.Segments != 2 || st.FirstDirty != 20 {
		t.Fatalf("stats %+v; want 2 segments up to 20", st)
	}
	recs := readRecords(t, l)
	if len(recs) != 21 || recs[0].offset != 19 || recs[1].offset != 20 {
		t.Fatalf("records after clean: %d, first %+v", len(recs), recs[0])
	}
	if st, err := l.Clean(clock.Now(), 0, CleanerConfig{DeleteRetentionMs: 1 << 40}); err != nil || st.Segments != 0 {
		t.Fatalf("clean with stable offset 0: %+v %v", st, err)
	}
}

// TestCleanMaxCompactionLag: below min.cleanable.dirty.ratio a log is
// compacted once its oldest dirty segment is older than
// max.compaction.lag.ms, and not before.
func TestCleanMaxCompactionLag(t *testing.T) {
	clock := newFakeClock()
	l, _ := openLog(t, Config{SegmentBytes: 1 << 20, Now: clock.Now})
	for i := 0; i < 20; i++ {
		mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: fmt.Sprintf("k%d", i%4), value: fmt.Sprint(i)}))
	}
	l.Roll()
	cc := CleanerConfig{MinCleanableRatio: 0.99, MaxCompactionLagMs: 60_000, DeleteRetentionMs: 1 << 40}
	if st, err := l.Clean(clock.Now(), noBound, CleanerConfig{MinCleanableRatio: 0.5, DeleteRetentionMs: 1 << 40}); err != nil || st.Segments != 1 {
		t.Fatalf("first clean: %+v %v", st, err)
	}
	// A small dirty segment: ratio far below 0.99.
	mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: "k0", value: "new"}))
	l.Roll()
	clock.Advance(60 * time.Second)
	if st, err := l.Clean(clock.Now(), noBound, cc); err != nil || st.Segments != 0 {
		t.Fatalf("cleaned at the max lag, not past it: %+v %v", st, err)
	}
	clock.Advance(time.Millisecond)
	st, err := l.Clean(clock.Now(), noBound, cc)
	if err != nil || st.Segments == 0 || !st.Forced {
		t.Fatalf("not cleaned past the max lag: %+v %v", st, err)
	}
	recs := readRecords(t, l)
	if len(recs) != 4 || *recs[3].value != "new" {
		t.Fatalf("records: %+v", recs)
	}
	// Without a max lag, never below the ratio.
	mustAppend(t, l, 0, keyedBatch(t, clock.Now().UnixMilli(), records.CodecNone, kv{key: "k1", value: "new"}))
	l.Roll()
	clock.Advance(24 * time.Hour)
	cc.MaxCompactionLagMs = 0
	if st, err := l.Clean(clock.Now(), noBound, cc); err != nil || st.Segments != 0 {
		t.Fatalf("cleaned below the ratio without a max lag: %+v %v", st, err)
	}
}
