package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

func TestEndOffsetFor(t *testing.T) {
	c := epochCache{entries: []EpochEntry{{1, 0}, {3, 10}, {5, 20}}}
	const leo = 30
	tests := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{UndefinedEpoch, UndefinedEpoch, UndefinedEpochOffset},
		{0, 0, 0}, // older than all known: start of the first
		{1, 1, 10},
		{2, 1, 10}, // unknown epoch between: previous epoch, next start
		{3, 3, 20},
		{4, 3, 20},
		{5, 5, leo}, // latest: log end
		{6, UndefinedEpoch, UndefinedEpochOffset},
	}
	for _, tt := range tests {
		e, end := c.endOffsetFor(tt.epoch, leo)
		if e != tt.wantEpoch || end != tt.wantEnd {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tt.epoch, e, end, tt.wantEpoch, tt.wantEnd)
		}
	}
	empty := epochCache{}
	if e, end := empty.endOffsetFor(3, leo); e != UndefinedEpoch || end != UndefinedEpochOffset {
		t.Errorf("empty cache: (%d, %d)", e, end)
	}
}

func TestEpochAssignAndTruncate(t *testing.T) {
	tests := []struct {
		name string
		op   func(c *epochCache) bool
		want []EpochEntry
		chg  bool
	}{
		{"new epoch", func(c *epochCache) bool { return c.assign(7, 30) }, []EpochEntry{{1, 0}, {3, 10}, {5, 20}, {7, 30}}, true},
		{"same epoch later offset", func(c *epochCache) bool { return c.assign(5, 25) }, []EpochEntry{{1, 0}, {3, 10}, {5, 20}}, false},
		{"conflicting older start", func(c *epochCache) bool { return c.assign(6, 15) }, []EpochEntry{{1, 0}, {3, 10}, {6, 15}}, true},
		{"undefined epoch", func(c *epochCache) bool { return c.assign(-1, 40) }, []EpochEntry{{1, 0}, {3, 10}, {5, 20}}, false},
		{"truncate end at start", func(c *epochCache) bool { return c.truncateFromEnd(20) }, []EpochEntry{{1, 0}, {3, 10}}, true},
		{"truncate end inside", func(c *epochCache) bool { return c.truncateFromEnd(21) }, []EpochEntry{{1, 0}, {3, 10}, {5, 20}}, false},
		{"truncate start inside", func(c *epochCache) bool { return c.truncateFromStart(12) }, []EpochEntry{{3, 12}, {5, 20}}, true},
		{"truncate start at entry", func(c *epochCache) bool { return c.truncateFromStart(20) }, []EpochEntry{{5, 20}}, true},
		{"truncate start at zero", func(c *epochCache) bool { return c.truncateFromStart(0) }, []EpochEntry{{1, 0}, {3, 10}, {5, 20}}, false},
	}
	for _, tt := range tests {
		c := epochCache{entries: []EpochEntry{{1, 0}, {3, 10}, {5, 20}}}
		if chg := tt.op(&c); chg != tt.chg {
			t.Errorf("%s: changed=%v, want %v", tt.name, chg, tt.chg)
		}
		if len(c.entries) != len(tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, c.entries, tt.want)
			continue
		}
		for i := range tt.want {
			if c.entries[i] != tt.want[i] {
				t.Errorf("%s: %v, want %v", tt.name, c.entries, tt.want)
			}
		}
	}
}

func TestEpochCheckpointFile(t *testing.T) {
	dir := t.TempDir()
	c := epochCache{fs: vfs.Default, path: filepath.Join(dir, LeaderEpochCheckpointFile), entries: []EpochEntry{{0, 0}, {4, 17}}}
	if err := c.persist(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(c.path)
	if string(data) != "0\n2\n0 0\n4 17\n" {
		t.Errorf("file %q", data)
	}
	got, err := loadEpochCache(vfs.Default, dir)
	if err != nil || len(got.entries) != 2 || got.entries[1] != (EpochEntry{4, 17}) {
		t.Fatalf("load: %v %v", got.entries, err)
	}
	for _, bad := range []string{"1\n0\n", "0\n2\n0 0\n", "0\n2\n3 5\n2 9\n", "0\n1\nx 1\n"} {
		os.WriteFile(c.path, []byte(bad), 0o644)
		if _, err := loadEpochCache(vfs.Default, dir); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestLogEndOffsetForEpoch(t *testing.T) {
	l, _ := openLog(t, Config{})
	mustAppend(t, l, 2, batchOf(3, 1, 1))
	mustAppend(t, l, 2, batchOf(1, 1, 1))
	mustAppend(t, l, 4, batchOf(2, 1, 1))
	mustAppend(t, l, 3, batchOf(1, 1, 1)) // a stale epoch does not enter the cache
	for _, tt := range []struct {
		in, e int32
		end   int64
	}{{1, 1, 0}, {2, 2, 4}, {3, 2, 4}, {4, 4, 7}, {5, -1, -1}} {
		if e, end := l.EndOffsetForEpoch(tt.in); e != tt.e || end != tt.end {
			t.Errorf("EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", tt.in, e, end, tt.e, tt.end)
		}
	}
}
