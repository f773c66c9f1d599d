package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// crashLog appends n single-batch appends of 3 records to a fresh log across
// several segments and returns its dir and the batch sizes, leaving the log
// open (as after kill -9, nothing sealed).
func crashLog(t *testing.T, cfg Config, n int) (dir string, l *Log) {
	t.Helper()
	l, dir = openLog(t, cfg)
	for i := 0; i < n; i++ {
		mustAppend(t, l, int32(i/4), batchOf(3, int64(100+i), 40))
	}
	return dir, l
}

// lastSegment returns the path of the last .log file in dir.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) == 0 {
		t.Fatal("no segments")
	}
	return logs[len(logs)-1]
}

// tornLog is crashLog of 12 appends (offsets 0-35) with its last batch torn.
func tornLog(t *testing.T, cfg Config) string {
	t.Helper()
	dir, _ := crashLog(t, cfg, 12)
	seg := lastSegment(t, dir)
	st, _ := os.Stat(seg)
	if err := os.Truncate(seg, st.Size()-7); err != nil { // tear the last batch
		t.Fatal(err)
	}
	return dir
}

func TestRecoveryTornTail(t *testing.T) {
	cfg := Config{SegmentBytes: 1000, IndexIntervalBytes: 100, Logger: quiet}
	dir := tornLog(t, cfg)
	l, err := Open(dir, cfg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 33 {
		t.Fatalf("LEO %d, want 33", l.LogEndOffset())
	}
	if l.RecoveryPoint() != 0 {
		t.Errorf("recovery point %d before a flush, want the checkpoint's 0", l.RecoveryPoint())
	}
	checkDense(t, readAll(t, l, 0), 0, 33)
	info := mustAppend(t, l, 5, batchOf(2, 1, 1))
	if info.FirstOffset != 33 {
		t.Errorf("append after recovery at %d, want 33", info.FirstOffset)
	}
	checkDense(t, readAll(t, l, 0), 0, 35)
}

func TestRecoveryCorruptByte(t *testing.T) {
	cfg := Config{SegmentBytes: 100000, IndexIntervalBytes: 100, Logger: quiet}
	tests := []struct {
		name    string
		flipAt  func(size, batch int64) int64 // position in the single segment
		wantLEO int64
	}{
		{"payload of last batch", func(size, batch int64) int64 { return size - 3 }, 27},
		{"crc of 5th batch", func(size, batch int64) int64 { return 4*batch + 18 }, 12},
		{"magic of 2nd batch", func(size, batch int64) int64 { return batch + 16 }, 3},
		{"length of 1st batch", func(size, batch int64) int64 { return 9 }, 0},
		// Base offsets are outside the CRC: one going backwards is caught
		// by the offset check (9 ^ 0x40 = 73 would be a legal gap).
		{"base offset of 4th batch", func(size, batch int64) int64 { return 3*batch + 7 }, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, l := crashLog(t, cfg, 10)
			batch := l.Size() / 10
			seg := lastSegment(t, dir)
			data, _ := os.ReadFile(seg)
			at := tt.flipAt(int64(len(data)), batch)
			if at%batch == 7 {
				data[at] ^= 0x08 // 9 -> 1
			} else {
				data[at] ^= 0x40
			}
			if err := os.WriteFile(seg, data, 0o644); err != nil {
				t.Fatal(err)
			}
			l2, err := Open(dir, cfg, 0, false)
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			if l2.LogEndOffset() != tt.wantLEO {
				t.Fatalf("LEO %d, want %d", l2.LogEndOffset(), tt.wantLEO)
			}
			checkDense(t, readAll(t, l2, 0), 0, tt.wantLEO)
			if e, end := l2.EndOffsetForEpoch(l2.LatestEpoch()); tt.wantLEO > 0 && (e < 0 || end != tt.wantLEO) {
				t.Errorf("latest epoch lookup: (%d, %d)", e, end)
			}
			for _, e := range l2.LeaderEpochs() {
				if e.StartOffset >= tt.wantLEO {
					t.Errorf("epoch entry %v beyond LEO %d", e, tt.wantLEO)
				}
			}
		})
	}
}

func TestRecoveryDropsLaterSegments(t *testing.T) {
	cfg := Config{SegmentBytes: 600, IndexIntervalBytes: 100, Logger: quiet}
	dir, _ := crashLog(t, cfg, 12)
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) < 3 {
		t.Fatalf("only %d segments", len(logs))
	}
	// Corrupt the first batch of the second segment.
	data, _ := os.ReadFile(logs[1])
	data[30] ^= 1
	os.WriteFile(logs[1], data, 0o644)
	second, _ := parseSegmentName(filepath.Base(logs[1]), logSuffix)
	l, err := Open(dir, cfg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != second {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), second)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(left) != 2 {
		t.Errorf("segments after recovery: %v", left)
	}
	checkDense(t, readAll(t, l, 0), 0, second)
	mustAppend(t, l, 9, batchOf(1, 1, 1))
	checkDense(t, readAll(t, l, 0), 0, second+1)
}

func TestRecoverySkipsBelowRecoveryPoint(t *testing.T) {
	cfg := Config{SegmentBytes: 600, IndexIntervalBytes: 100, Logger: quiet}
	dir, l := crashLog(t, cfg, 12)
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	rp := l.RecoveryPoint() // base of the active segment: earlier ones were fsynced at roll
	last, _ := parseSegmentName(filepath.Base(logs[len(logs)-1]), logSuffix)
	if rp != last {
		t.Fatalf("recovery point %d, want %d", rp, last)
	}
	// A flipped payload byte below the recovery point is not noticed (no
	// CRC scan there), as in Kafka.
	data, _ := os.ReadFile(logs[0])
	data[len(data)-3] ^= 1
	os.WriteFile(logs[0], data, 0o644)
	l2, err := Open(dir, cfg, rp, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogEndOffset() != 36 {
		t.Fatalf("LEO %d, want 36", l2.LogEndOffset())
	}
}

func TestIndexRebuild(t *testing.T) {
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*131 + 7)
		}
		return b
	}
	tests := []struct {
		name  string
		apply func(t *testing.T, base string)
	}{
		{"delete both", func(t *testing.T, base string) {
			os.Remove(base + indexSuffix)
			os.Remove(base + timeIndexSuffix)
		}},
		{"wrong size", func(t *testing.T, base string) {
			f, _ := os.OpenFile(base+indexSuffix, os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{1, 2, 3})
			f.Close()
			f, _ = os.OpenFile(base+timeIndexSuffix, os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{1})
			f.Close()
		}},
		{"garbage", func(t *testing.T, base string) {
			os.WriteFile(base+indexSuffix, garbage(64), 0o644)
			os.WriteFile(base+timeIndexSuffix, garbage(96), 0o644)
		}},
		{"position beyond file", func(t *testing.T, base string) {
			os.WriteFile(base+indexSuffix, []byte{0, 0, 0, 1, 0x7f, 0, 0, 0}, 0o644)
		}},
		{"offset index points between batches", func(t *testing.T, base string) {
			os.WriteFile(base+indexSuffix, []byte{0, 0, 0, 1, 0, 0, 0, 5}, 0o644)
		}},
	}
	for _, tt := range tests {
		for _, clean := range []bool{true, false} {
			name := tt.name + map[bool]string{true: " clean", false: " unclean"}[clean]
			t.Run(name, func(t *testing.T) {
				cfg := Config{SegmentBytes: 1000, IndexIntervalBytes: 100, Logger: quiet}
				dir, l := crashLog(t, cfg, 12)
				want := readAll(t, l, 0)
				rp := l.RecoveryPoint()
				if clean {
					l.Close()
				}
				// The index files as the log holds them in memory; the
				// active segment's file lags until the next flush.
				var wantIdx [][]byte
				l.mu.RLock()
				for _, s := range l.mu.segments {
					wantIdx = append(wantIdx, encodeOffsetEntries(nil, s.base, s.index))
				}
				l.mu.RUnlock()
				segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
				for _, s := range segs {
					tt.apply(t, s[:len(s)-len(logSuffix)])
				}
				l2, err := Open(dir, cfg, rp, clean)
				if err != nil {
					t.Fatal(err)
				}
				defer l2.Close()
				got := readAll(t, l2, 0)
				if len(got) != len(want) {
					t.Fatalf("%d batches, want %d", len(got), len(want))
				}
				for _, off := range []int64{0, 7, 20, 35} {
					b, err := l2.Read(off, 1, 100, true)
					if err != nil {
						t.Fatal(err)
					}
					if hs := splitAll(t, b); len(hs) != 1 || hs[0].BaseOffset > off || hs[0].LastOffset() < off {
						t.Errorf("read %d: %+v", off, hs)
					}
				}
				if off, ts, ok := l2.OffsetForTimestamp(105); !ok || off != 15 || ts != 105 {
					t.Errorf("offset for timestamp: (%d, %d), want (15, 105)", off, ts)
				}
				// Rebuilt indexes reach the files by the next flush or close.
				if err := l2.Close(); err != nil {
					t.Fatal(err)
				}
				for i, s := range segs {
					base := s[:len(s)-len(logSuffix)]
					idx, _ := os.ReadFile(base + indexSuffix)
					if string(idx) != string(wantIdx[i]) {
						t.Errorf("segment %d: rebuilt offset index differs", i)
					}
				}
			})
		}
	}
}

func TestEmptyDirGetsSegment(t *testing.T) {
	l, dir := openLog(t, Config{})
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000000.log")); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 0 || l.LogStartOffset() != 0 {
		t.Fatalf("LEO %d start %d", l.LogEndOffset(), l.LogStartOffset())
	}
	if b, err := l.Read(0, 100, 100, true); err != nil || len(b) != 0 {
		t.Fatalf("read empty: %v %d", err, len(b))
	}
}

// TestRecoveryPointWaitsForFlush checks Kafka's LogLoader rule: recovery
// syncs nothing, so the recovery point stays at the checkpoint until a
// flush; a second kill -9 before that recovers (and cuts the torn tail)
// again, and the flush then moves the recovery point to the log end.
func TestRecoveryPointWaitsForFlush(t *testing.T) {
	cfg := Config{SegmentBytes: 1000, IndexIntervalBytes: 100, Logger: quiet}
	dir := tornLog(t, cfg)
	for range 2 {
		l, err := Open(dir, cfg, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != 33 || l.RecoveryPoint() != 0 || l.RecoveryStats().Segments == 0 {
			t.Fatalf("LEO %d, recovery point %d, %+v: want 33, 0 and a recovery",
				l.LogEndOffset(), l.RecoveryPoint(), l.RecoveryStats())
		}
		if err := l.closeFiles(); err != nil { // kill -9 again, nothing flushed
			t.Fatal(err)
		}
	}
	l, err := Open(dir, cfg, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if l.RecoveryPoint() != 33 {
		t.Fatalf("recovery point %d after a flush, want 33", l.RecoveryPoint())
	}
	checkDense(t, readAll(t, l, 0), 0, 33)
}
