package storage

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
)

// testRecord is one record for buildBatch; ts is absolute.
type testRecord struct {
	ts         int64
	key, value []byte
}

// buildBatch builds a valid uncompressed v2 batch (base offset 0, leader
// epoch -1, no producer) holding recs.
func buildBatch(recs ...testRecord) []byte {
	first, maxTs := recs[0].ts, recs[0].ts
	for _, r := range recs {
		maxTs = max(maxTs, r.ts)
	}
	b := make([]byte, records.HeaderSize)
	for i, r := range recs {
		var body []byte
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, r.ts-first)
		body = binary.AppendVarint(body, int64(i))
		if r.key == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(r.key)))
			body = append(body, r.key...)
		}
		body = binary.AppendVarint(body, int64(len(r.value)))
		body = append(body, r.value...)
		body = binary.AppendVarint(body, 0) // headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], 0)
	be.PutUint32(b[8:], uint32(len(b)-records.LogOverhead))
	be.PutUint32(b[12:], 0xffffffff)
	b[16] = 2
	be.PutUint16(b[21:], 0)
	be.PutUint32(b[23:], uint32(len(recs)-1))
	be.PutUint64(b[27:], uint64(first))
	be.PutUint64(b[35:], uint64(maxTs))
	be.PutUint64(b[43:], ^uint64(0))
	be.PutUint16(b[51:], 0xffff)
	be.PutUint32(b[53:], 0xffffffff)
	be.PutUint32(b[57:], uint32(len(recs)))
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// batchOf builds a batch of n records with timestamp ts and values of size bytes.
func batchOf(n int, ts int64, size int) []byte {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{ts: ts, value: make([]byte, size)}
	}
	return buildBatch(recs...)
}

// splitAll checks and splits every batch in b.
func splitAll(t testing.TB, b []byte) []records.Header {
	t.Helper()
	var hs []records.Header
	for len(b) > 0 {
		_, h, rest, err := records.Split(b)
		if err != nil {
			t.Fatalf("batch %d: %v", len(hs), err)
		}
		hs = append(hs, h)
		b = rest
	}
	return hs
}

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// quiet is a logger that discards output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openLog opens a log in a fresh temp dir, closing it at cleanup.
func openLog(t testing.TB, cfg Config) (*Log, string) {
	t.Helper()
	dir := t.TempDir() + "/topic-0"
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	l, err := Open(dir, cfg, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, dir
}

// mustAppend appends batches and fails the test on error.
func mustAppend(t testing.TB, l *Log, epoch int32, batches ...[]byte) AppendInfo {
	t.Helper()
	var all []byte
	for _, b := range batches {
		all = append(all, b...)
	}
	info, err := l.Append(all, epoch)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// readAll reads every batch from offset to the log end.
func readAll(t testing.TB, l *Log, offset int64) []records.Header {
	t.Helper()
	var hs []records.Header
	for offset < l.LogEndOffset() {
		b, err := l.Read(offset, 1<<30, 1<<62, true)
		if err != nil {
			t.Fatalf("read %d: %v", offset, err)
		}
		if len(b) == 0 {
			t.Fatalf("read %d: empty before log end %d", offset, l.LogEndOffset())
		}
		got := splitAll(t, b)
		hs = append(hs, got...)
		offset = got[len(got)-1].NextOffset()
	}
	return hs
}

// checkDense checks hs cover [0, end) densely.
func checkDense(t testing.TB, hs []records.Header, start, end int64) {
	t.Helper()
	next := start
	for i, h := range hs {
		if h.BaseOffset != next {
			t.Fatalf("batch %d base %d, want %d", i, h.BaseOffset, next)
		}
		next = h.NextOffset()
	}
	if next != end {
		t.Fatalf("batches end at %d, want %d", next, end)
	}
}
