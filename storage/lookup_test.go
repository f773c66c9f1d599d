package storage

import (
	"testing"

	"github.com/kbroker/kbroker/protocol/records"
)

func TestOffsetForTimestamp(t *testing.T) {
	l, _ := openLog(t, Config{SegmentBytes: 700, IndexIntervalBytes: 150})
	// Batch i holds offsets [2i, 2i+1] with timestamps 1000+10i and
	// 1000+10i+5; batch 5 goes back in time (900).
	for i := 0; i < 12; i++ {
		ts := int64(1000 + 10*i)
		if i == 5 {
			ts = 900
		}
		mustAppend(t, l, 0, buildBatch(testRecord{ts: ts, value: make([]byte, 50)}, testRecord{ts: ts + 5, value: make([]byte, 50)}))
	}
	tests := []struct {
		ts     int64
		offset int64
		gotTs  int64
		ok     bool
	}{
		{0, 0, 1000, true},
		{1000, 0, 1000, true},
		{1001, 1, 1005, true},
		{1010, 2, 1010, true},
		{1040, 8, 1040, true},
		{1041, 9, 1045, true},
		{1046, 12, 1060, true}, // batch 5 (900) skipped
		{1110, 22, 1110, true},
		{1115, 23, 1115, true},
		{1116, -1, -1, false},
	}
	for _, tt := range tests {
		off, ts, ok := l.OffsetForTimestamp(tt.ts)
		if off != tt.offset || ts != tt.gotTs || ok != tt.ok {
			t.Errorf("OffsetForTimestamp(%d) = (%d, %d, %v), want (%d, %d, %v)", tt.ts, off, ts, ok, tt.offset, tt.gotTs, tt.ok)
		}
	}
	if err := l.SetLogStartOffset(9); err != nil {
		t.Fatal(err)
	}
	if off, _, ok := l.OffsetForTimestamp(0); !ok || off != 9 {
		t.Errorf("after log start 9: offset %d ok %v", off, ok)
	}
	if off, ts := l.MaxTimestamp(); off != 23 || ts != 1115 {
		t.Errorf("MaxTimestamp = (%d, %d), want (23, 1115)", off, ts)
	}
}

func TestMaxTimestamp(t *testing.T) {
	l, _ := openLog(t, Config{SegmentBytes: 300})
	if off, ts := l.MaxTimestamp(); off != -1 || ts != -1 {
		t.Errorf("empty: (%d, %d)", off, ts)
	}
	mustAppend(t, l, 0, batchOf(1, 50, 100))
	mustAppend(t, l, 0, batchOf(3, 70, 100)) // max; all records share it
	mustAppend(t, l, 0, batchOf(1, 60, 100))
	if off, ts := l.MaxTimestamp(); off != 1 || ts != 70 {
		t.Errorf("MaxTimestamp = (%d, %d), want (1, 70)", off, ts)
	}
	// The maximum in the middle of a CreateTime batch (offsets 5..7).
	mustAppend(t, l, 0, buildBatch(testRecord{ts: 5}, testRecord{ts: 90}, testRecord{ts: 20}))
	if off, ts := l.MaxTimestamp(); off != 6 || ts != 90 {
		t.Errorf("MaxTimestamp = (%d, %d), want (6, 90)", off, ts)
	}
	if off, ts, ok := l.OffsetForTimestamp(80); !ok || off != 6 || ts != 90 {
		t.Errorf("OffsetForTimestamp(80) = (%d, %d, %v), want (6, 90, true)", off, ts, ok)
	}
	// LogAppendTime: every record has the batch's max timestamp (offsets 8..9).
	b := batchOf(2, 1, 10)
	records.SetMaxTimestampLogAppendTime(b, 100)
	mustAppend(t, l, 0, b)
	if off, ts := l.MaxTimestamp(); off != 8 || ts != 100 {
		t.Errorf("MaxTimestamp = (%d, %d), want (8, 100)", off, ts)
	}
	if off, ts, ok := l.OffsetForTimestamp(95); !ok || off != 8 || ts != 100 {
		t.Errorf("OffsetForTimestamp(95) = (%d, %d, %v), want (8, 100, true)", off, ts, ok)
	}
}

func TestTruncateTo(t *testing.T) {
	cfg := Config{SegmentBytes: 800, IndexIntervalBytes: 100, Logger: quiet}
	build := func(t *testing.T) (*Log, string) {
		l, dir := openLog(t, cfg)
		for i := 0; i < 20; i++ { // batch i: offsets [2i, 2i+1], epoch i/5
			mustAppend(t, l, int32(i/5), batchOf(2, int64(100+i), 60))
		}
		return l, dir
	}
	tests := []struct {
		name   string
		offset int64
		ok     bool
		epochs []EpochEntry
	}{
		{"at LEO", 40, true, []EpochEntry{{0, 0}, {1, 10}, {2, 20}, {3, 30}}},
		{"last batch", 38, true, []EpochEntry{{0, 0}, {1, 10}, {2, 20}, {3, 30}}},
		{"epoch boundary", 20, true, []EpochEntry{{0, 0}, {1, 10}}},
		{"early", 6, true, []EpochEntry{{0, 0}}},
		{"to zero", 0, true, nil},
		{"inside batch", 7, false, nil},
		{"beyond LEO", 41, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, dir := build(t)
			err := l.TruncateTo(tt.offset)
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok {
				checkDense(t, readAll(t, l, 0), 0, 40)
				return
			}
			if l.LogEndOffset() != tt.offset {
				t.Fatalf("LEO %d, want %d", l.LogEndOffset(), tt.offset)
			}
			if l.RecoveryPoint() > tt.offset {
				t.Errorf("recovery point %d beyond LEO", l.RecoveryPoint())
			}
			if got := l.LeaderEpochs(); len(got) != len(tt.epochs) {
				t.Errorf("epochs %v, want %v", got, tt.epochs)
			}
			checkDense(t, readAll(t, l, 0), 0, tt.offset)
			if _, ts := l.MaxTimestamp(); tt.offset > 0 && ts != 100+tt.offset/2-1 {
				t.Errorf("max timestamp %d after truncation to %d", ts, tt.offset)
			}
			mustAppend(t, l, 7, batchOf(3, 500, 60))
			checkDense(t, readAll(t, l, 0), 0, tt.offset+3)
			// The truncated log survives a clean and an unclean reopen.
			for _, clean := range []bool{true, false} {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if l, err = Open(dir, cfg, 0, clean); err != nil {
					t.Fatal(err)
				}
				checkDense(t, readAll(t, l, 0), 0, tt.offset+3)
				if off, _, ok := l.OffsetForTimestamp(500); !ok || off != tt.offset {
					t.Errorf("timestamp 500 at %d, want %d", off, tt.offset)
				}
			}
			l.Close()
		})
	}
}

func TestTruncateBelowLogStart(t *testing.T) {
	l, _ := openLog(t, Config{})
	for i := 0; i < 5; i++ {
		mustAppend(t, l, 1, batchOf(2, 1, 10))
	}
	if err := l.SetLogStartOffset(6); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 4 || l.LogEndOffset() != 4 || len(l.LeaderEpochs()) != 0 {
		t.Fatalf("start %d LEO %d epochs %v", l.LogStartOffset(), l.LogEndOffset(), l.LeaderEpochs())
	}
	info := mustAppend(t, l, 2, batchOf(1, 1, 10))
	if info.FirstOffset != 4 {
		t.Fatalf("append at %d", info.FirstOffset)
	}
	checkDense(t, readAll(t, l, 4), 4, 5)
}

func TestSetLogStartOffsetDeletesSegments(t *testing.T) {
	l, dir := openLog(t, Config{SegmentBytes: 300})
	for i := 0; i < 10; i++ {
		mustAppend(t, l, int32(i), batchOf(1, 1, 150))
	}
	if err := l.SetLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(4, 1000, 100, true); err == nil {
		t.Error("read below start: no error")
	}
	checkDense(t, readAll(t, l, 5), 5, 10)
	if got := l.LeaderEpochs(); got[0] != (EpochEntry{5, 5}) {
		t.Errorf("epochs %v", got)
	}
	if err := l.SetLogStartOffset(11); err == nil {
		t.Error("start beyond LEO: no error")
	}
	l.Close()
	l2, err := Open(dir, Config{Logger: quiet}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogStartOffset() > 5 {
		t.Errorf("start after reopen %d", l2.LogStartOffset())
	}
}
