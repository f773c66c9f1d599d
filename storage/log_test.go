package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
)

func TestAppendReadRoundTrip(t *testing.T) {
	l, _ := openLog(t, Config{})
	a := mustAppend(t, l, 3, batchOf(2, 100, 10))
	b := mustAppend(t, l, 3, batchOf(3, 200, 10), batchOf(1, 150, 10))
	c := mustAppend(t, l, 5, batchOf(4, 300, 10))
	want := []AppendInfo{
		{FirstOffset: 0, LastOffset: 1, MaxTimestamp: 100, OffsetOfMaxTimestamp: 1, Records: 2},
		{FirstOffset: 2, LastOffset: 5, MaxTimestamp: 200, OffsetOfMaxTimestamp: 4, Records: 4},
		{FirstOffset: 6, LastOffset: 9, MaxTimestamp: 300, OffsetOfMaxTimestamp: 9, Records: 4},
	}
	for i, got := range []AppendInfo{a, b, c} {
		got.Bytes = 0
		if got != want[i] {
			t.Errorf("append %d: got %+v, want %+v", i, got, want[i])
		}
	}
	if l.LogEndOffset() != 10 {
		t.Fatalf("LEO %d, want 10", l.LogEndOffset())
	}
	hs := readAll(t, l, 0)
	checkDense(t, hs, 0, 10)
	epochs := []int32{3, 3, 3, 5}
	for i, h := range hs {
		if h.PartitionLeaderEpoch != epochs[i] {
			t.Errorf("batch %d epoch %d, want %d", i, h.PartitionLeaderEpoch, epochs[i])
		}
	}
	if got := l.LeaderEpochs(); len(got) != 2 || got[0] != (EpochEntry{3, 0}) || got[1] != (EpochEntry{5, 6}) {
		t.Errorf("epochs %v", got)
	}
	if l.Size() != int64(a.Bytes+b.Bytes+c.Bytes) {
		t.Errorf("size %d, want %d", l.Size(), a.Bytes+b.Bytes+c.Bytes)
	}
}

func TestAppendRejectsMalformed(t *testing.T) {
	l, _ := openLog(t, Config{})
	good := batchOf(1, 1, 1)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"magic":     append(append([]byte(nil), good[:16]...), append([]byte{1}, good[17:]...)...),
	} {
		if _, err := l.Append(b, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Errorf("log changed: LEO %d size %d", l.LogEndOffset(), l.Size())
	}
}

func TestReadRules(t *testing.T) {
	l, _ := openLog(t, Config{})
	// Batches: [0,1] [2,4] [5] [6,9], each 100-byte values.
	sizes := []int{2, 3, 1, 4}
	var bsz []int
	for _, n := range sizes {
		info := mustAppend(t, l, 0, batchOf(n, 1, 100))
		bsz = append(bsz, info.Bytes)
	}
	if err := l.SetLogStartOffset(1); err != nil {
		t.Fatal(err)
	}
	all := bsz[0] + bsz[1] + bsz[2] + bsz[3]
	tests := []struct {
		name      string
		offset    int64
		maxBytes  int
		maxOffset int64
		minOne    bool
		bases     []int64
		err       error
	}{
		{"all", 1, all, 100, false, []int64{0, 2, 5, 6}, nil},
		{"middle of batch", 3, all, 100, false, []int64{2, 5, 6}, nil},
		{"last offset of batch", 4, all, 100, false, []int64{2, 5, 6}, nil},
		{"maxBytes cuts whole batches", 2, bsz[1] + bsz[2] + 10, 100, false, []int64{2, 5}, nil},
		{"maxBytes below first, minOne", 2, 10, 100, true, []int64{2}, nil},
		{"maxBytes below first, no minOne", 2, 10, 100, false, nil, nil},
		{"zero maxBytes, minOne", 6, 0, 100, true, []int64{6}, nil},
		{"maxOffset excludes batch", 1, all, 9, false, []int64{0, 2, 5}, nil},
		{"maxOffset inside first batch", 3, all, 4, true, nil, nil},
		{"offset at maxOffset", 5, all, 5, true, nil, nil},
		{"offset at LEO", 10, all, 100, true, nil, nil},
		{"below log start", 0, all, 100, true, nil, ErrOffsetOutOfRange},
		{"above LEO", 11, all, 100, true, nil, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := l.Read(tt.offset, tt.maxBytes, tt.maxOffset, tt.minOne)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			var bases []int64
			for _, h := range splitAll(t, b) {
				bases = append(bases, h.BaseOffset)
			}
			if len(bases) != len(tt.bases) {
				t.Fatalf("bases %v, want %v", bases, tt.bases)
			}
			for i := range bases {
				if bases[i] != tt.bases[i] {
					t.Fatalf("bases %v, want %v", bases, tt.bases)
				}
			}
		})
	}
}

func TestRollBySize(t *testing.T) {
	l, dir := openLog(t, Config{SegmentBytes: 1000, IndexIntervalBytes: 1})
	var one int
	for i := 0; i < 20; i++ {
		one = mustAppend(t, l, 0, batchOf(1, int64(i), 200)).Bytes
	}
	perSeg := 1000 / one
	wantSegs := (20 + perSeg - 1) / perSeg
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) != wantSegs {
		t.Fatalf("%d segments, want %d", len(logs), wantSegs)
	}
	for i, p := range logs {
		st, _ := os.Stat(p)
		if st.Size() > 1000 {
			t.Errorf("segment %s is %d bytes", p, st.Size())
		}
		if base, _ := parseSegmentName(filepath.Base(p), logSuffix); base != int64(i*perSeg) {
			t.Errorf("segment %d base %d, want %d", i, base, i*perSeg)
		}
	}
	checkDense(t, readAll(t, l, 0), 0, 20)
	// Rolled segments were fsynced, so the recovery point reached the active one.
	if rp := l.RecoveryPoint(); rp != int64((wantSegs-1)*perSeg) {
		t.Errorf("recovery point %d, want %d", rp, (wantSegs-1)*perSeg)
	}
}

func TestRollByTime(t *testing.T) {
	clock := newFakeClock()
	l, dir := openLog(t, Config{SegmentMs: 1000, Now: clock.Now})
	mustAppend(t, l, 0, batchOf(1, 1, 10))
	clock.Advance(1000 * time.Millisecond)
	mustAppend(t, l, 0, batchOf(1, 1, 10)) // exactly SegmentMs: no roll
	clock.Advance(1 * time.Millisecond)
	mustAppend(t, l, 0, batchOf(1, 1, 10))
	clock.Advance(5000 * time.Millisecond) // the new segment's clock starts at its first append
	mustAppend(t, l, 0, batchOf(1, 1, 10))
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	want := []string{"00000000000000000000.log", "00000000000000000002.log", "00000000000000000003.log"}
	if len(logs) != len(want) {
		t.Fatalf("segments %v, want %v", logs, want)
	}
	for i := range want {
		if filepath.Base(logs[i]) != want[i] {
			t.Errorf("segment %d is %s, want %s", i, filepath.Base(logs[i]), want[i])
		}
	}
	checkDense(t, readAll(t, l, 0), 0, 4)
}

func TestReopenAfterClose(t *testing.T) {
	l, dir := openLog(t, Config{SegmentBytes: 2000, IndexIntervalBytes: 100})
	for i := 0; i < 30; i++ {
		mustAppend(t, l, int32(i/10), batchOf(2, int64(1000+i), 100))
	}
	before := readAll(t, l, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 100, 100, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	l2, err := Open(dir, Config{SegmentBytes: 2000, IndexIntervalBytes: 100, Logger: quiet}, 60, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() != 60 || l2.RecoveryPoint() != 60 {
		t.Fatalf("LEO %d recovery point %d, want 60", l2.LogEndOffset(), l2.RecoveryPoint())
	}
	after := readAll(t, l2, 0)
	if len(after) != len(before) {
		t.Fatalf("%d batches after reopen, want %d", len(after), len(before))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("batch %d: %+v, want %+v", i, after[i], before[i])
		}
	}
	if got := l2.LeaderEpochs(); len(got) != 3 || got[2] != (EpochEntry{2, 40}) {
		t.Errorf("epochs %v", got)
	}
	if off, ts := l2.MaxTimestamp(); off != 58 || ts != 1029 {
		t.Errorf("max timestamp (%d, %d), want (58, 1029)", off, ts)
	}
	info := mustAppend(t, l2, 2, batchOf(1, 5, 1))
	if info.FirstOffset != 60 {
		t.Errorf("append after reopen at %d, want 60", info.FirstOffset)
	}
}

func TestFlushIntervalMessages(t *testing.T) {
	l, _ := openLog(t, Config{FlushIntervalMessages: 3})
	mustAppend(t, l, 0, batchOf(2, 1, 1))
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d after 2 records, want 0", rp)
	}
	mustAppend(t, l, 0, batchOf(1, 1, 1))
	if rp := l.RecoveryPoint(); rp != 3 {
		t.Fatalf("recovery point %d after 3 records, want 3", rp)
	}
}

func TestConcurrentReadAppendTruncate(t *testing.T) {
	l, _ := openLog(t, Config{SegmentBytes: 4096, IndexIntervalBytes: 256})
	mustAppend(t, l, 0, batchOf(1, 1, 50))
	var wg sync.WaitGroup
	done := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				leo := l.LogEndOffset()
				b, err := l.Read(leo/2, 1<<20, 1<<62, true)
				if err != nil && !errors.Is(err, ErrOffsetOutOfRange) {
					t.Error(err)
					return
				}
				splitAll(t, b)
				l.OffsetForTimestamp(5)
				l.MaxTimestamp()
			}
		}()
	}
	for i := 0; i < 500; i++ {
		mustAppend(t, l, int32(i/100), batchOf(1+i%3, int64(i), 50))
		if i%97 == 96 {
			if err := l.TruncateTo(l.LeaderEpochs()[0].StartOffset + 1); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 == 0 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
	checkDense(t, readAll(t, l, 0), 0, l.LogEndOffset())
}

func TestParseTopicPartition(t *testing.T) {
	tests := []struct {
		in   string
		want TopicPartition
		ok   bool
	}{
		{"foo-0", TopicPartition{"foo", 0}, true},
		{"my-topic-12", TopicPartition{"my-topic", 12}, true},
		{"__consumer_offsets-49", TopicPartition{"__consumer_offsets", 49}, true},
		{"foo", TopicPartition{}, false},
		{"foo-", TopicPartition{}, false},
		{"-1", TopicPartition{}, false},
		{"foo-x", TopicPartition{}, false},
		{"foo--1", TopicPartition{"foo-", 1}, true},
		{"foo.abc-delete", TopicPartition{}, false},
	}
	for _, tt := range tests {
		got, err := ParseTopicPartition(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: got %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if tt.ok && got.String() != tt.in {
			t.Errorf("%q round trips to %q", tt.in, got.String())
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{{SegmentBytes: 1}, {SegmentBytes: 1 << 40}, {SegmentMs: -1}, {IndexIntervalBytes: -1}, {FlushIntervalMessages: -1}} {
		if _, err := Open(t.TempDir(), c, 0, true); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestAppendParsed: a batch appended with its parsed header lands as
// Append would put it (offsets, leader epoch, time index input), and a
// header that does not describe the bytes is refused with nothing written.
func TestAppendParsed(t *testing.T) {
	l, _ := openLog(t, Config{})
	mustAppend(t, l, 0, batchOf(3, 10, 1))
	batch := batchOf(2, 20, 1)
	h, err := records.Check(batch)
	if err != nil {
		t.Fatal(err)
	}
	info, err := l.AppendParsed(batch, h, 4)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 3 || info.LastOffset != 4 || info.MaxTimestamp != 20 || info.Records != 2 {
		t.Fatalf("info %+v", info)
	}
	hs := readAll(t, l, 0)
	checkDense(t, hs, 0, 5)
	if hs[1].PartitionLeaderEpoch != 4 {
		t.Fatalf("leader epoch %d, want 4", hs[1].PartitionLeaderEpoch)
	}
	for _, bad := range []struct {
		name  string
		batch []byte
		h     records.Header
	}{
		{"short", batch[:len(batch)-1], h},
		{"two batches", append(append([]byte{}, batch...), batch...), h},
		{"zero header", batch, records.Header{}},
	} {
		if _, err := l.AppendParsed(bad.batch, bad.h, 4); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
	if l.LogEndOffset() != 5 {
		t.Fatalf("log end %d after refused appends, want 5", l.LogEndOffset())
	}
}

// benchAppendBatch is a 16 KiB batch of sixteen 1 KiB records, with its
// header, for the append benchmarks.
func benchAppendBatch(b *testing.B) ([]byte, records.Header) {
	recs := make([]testRecord, 16)
	for i := range recs {
		recs[i] = testRecord{ts: 1, value: make([]byte, 1024-30)}
	}
	batch := buildBatch(recs...)
	h, err := records.Check(batch)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	return batch, h
}

func BenchmarkAppend(b *testing.B) {
	l, _ := openLog(b, Config{})
	batch, _ := benchAppendBatch(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendParsed is BenchmarkAppend through AppendParsed, the
// produce path's call (the header parsed by validation).
func BenchmarkAppendParsed(b *testing.B) {
	l, _ := openLog(b, Config{})
	batch, h := benchAppendBatch(b)
	for b.Loop() {
		if _, err := l.AppendParsed(batch, h, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRollAndCorruptionError(t *testing.T) {
	l, dir := openLog(t, Config{})
	if err := l.Roll(); err != nil { // empty active segment: no-op
		t.Fatal(err)
	}
	mustAppend(t, l, 0, batchOf(2, 1, 1))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() != 2 {
		t.Errorf("recovery point %d after roll, want 2", l.RecoveryPoint())
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000002.log")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, 0, batchOf(1, 1, 1))
	checkDense(t, readAll(t, l, 0), 0, 3)
	var ce error = &CorruptionError{Segment: "x", Pos: 1, Err: ErrClosed}
	if !errors.Is(ce, ErrClosed) {
		t.Error("CorruptionError does not unwrap")
	}
}
