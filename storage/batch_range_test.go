package storage

import (
	"io"
	"testing"

	"github.com/kbroker/kbroker/protocol/records"
)

// refRange is batchRange's contract computed the plain way: walk every
// header of the segment from its start.
func refRange(t *testing.T, v segView, offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (pos, end int64) {
	t.Helper()
	type hb struct {
		pos int64
		h   records.Header
	}
	var all []hb
	for p := int64(0); p < v.size; {
		h, err := headerAt(v.f, p, v.size)
		if err != nil {
			t.Fatalf("segment %d position %d: %v", v.base, p, err)
		}
		all = append(all, hb{p, h})
		p += int64(h.TotalSize())
	}
	i := 0
	for i < len(all) && all[i].h.LastOffset() < offset {
		i++
	}
	if i == len(all) {
		return v.size, v.size
	}
	pos = all[i].pos
	if all[i].h.LastOffset() >= maxOffset {
		return pos, pos
	}
	if all[i].h.TotalSize() > maxBytes && !minOneBatch {
		return pos, pos
	}
	end = pos + int64(all[i].h.TotalSize())
	for _, b := range all[i+1:] {
		if end+int64(b.h.TotalSize())-pos > int64(maxBytes) || b.h.LastOffset() >= maxOffset {
			break
		}
		end += int64(b.h.TotalSize())
	}
	return pos, end
}

// countingReader counts the reads batchRange makes.
type countingReader struct {
	r     io.ReaderAt
	reads int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.r.ReadAt(p, off)
}

// TestBatchRangeMatchesHeaderWalk: the range found through the index is the
// one a walk over every header finds, for every offset, byte budget, bound
// and minOneBatch, with sparse and dense indexes and batches of mixed sizes.
func TestBatchRangeMatchesHeaderWalk(t *testing.T) {
	for _, interval := range []int32{1, 300, 5000} {
		l, _ := openLog(t, Config{SegmentBytes: 6000, IndexIntervalBytes: interval})
		for i := 0; i < 40; i++ {
			mustAppend(t, l, 0, batchOf(1+i%4, int64(i), 10+(i*37)%390))
		}
		vs, _, err := l.views()
		if err != nil {
			t.Fatal(err)
		}
		leo := l.LogEndOffset()
		for _, v := range vs {
			for off := v.base; off <= v.next; off++ {
				for _, maxBytes := range []int{0, 50, 400, 1000, 2500, 1 << 20} {
					for _, maxOffset := range []int64{off, off + 1, off + 5, off + 17, leo} {
						for _, minOne := range []bool{false, true} {
							wp, we := refRange(t, v, off, maxBytes, maxOffset, minOne)
							gp, ge, err := batchRange(v, v.f, off, maxBytes, maxOffset, minOne)
							if err != nil {
								t.Fatalf("interval %d segment %d batchRange(%d, %d, %d, %v): %v", interval, v.base, off, maxBytes, maxOffset, minOne, err)
							}
							if ge-gp != we-wp || (we > wp && gp != wp) {
								t.Fatalf("interval %d segment %d batchRange(%d, %d, %d, %v) = [%d, %d), want [%d, %d)", interval, v.base, off, maxBytes, maxOffset, minOne, gp, ge, wp, we)
							}
						}
					}
				}
			}
		}
	}
}

// TestBatchRangeReadsFewHeaders: with every batch indexed (1 MiB batches
// under the default 4 KiB interval), a fetch of sixteen batches reads at
// most three header windows, not one per batch, whether it ends at the
// segment's end, at a byte limit or at the high watermark.
func TestBatchRangeReadsFewHeaders(t *testing.T) {
	l, _ := openLog(t, Config{})
	for range 16 {
		mustAppend(t, l, 0, batchOf(64, 1, 16<<10))
	}
	vs, _, err := l.views()
	if err != nil {
		t.Fatal(err)
	}
	v := vs[len(vs)-1]
	batch := v.size / 16
	for _, c := range []struct {
		name      string
		maxBytes  int
		maxOffset int64
		want      int64 // bytes
	}{
		{"segment end", 32 << 20, v.next, v.size},
		{"byte limit", int(10*batch + batch/2), v.next, 10 * batch},
		{"high watermark", 32 << 20, 64*12 + 3, 12 * batch},
	} {
		cr := &countingReader{r: v.f}
		pos, end, err := batchRange(v, cr, 0, c.maxBytes, c.maxOffset, true)
		if err != nil || pos != 0 || end != c.want {
			t.Fatalf("%s: [%d, %d) (%v), want [0, %d)", c.name, pos, end, err, c.want)
		}
		if cr.reads > 3 { // the start, the last indexed batch, the one after it
			t.Errorf("%s: %d reads for %d batches", c.name, cr.reads, end/batch)
		}
	}
}

// TestBatchRangeRefusesAMisplacedIndexEntry: an index entry that does not
// point at its batch is an error, never a range cut in the middle of a
// batch.
func TestBatchRangeRefusesAMisplacedIndexEntry(t *testing.T) {
	l, _ := openLog(t, Config{IndexIntervalBytes: 1})
	for range 8 {
		mustAppend(t, l, 0, batchOf(4, 1, 1000))
	}
	vs, _, err := l.views()
	if err != nil {
		t.Fatal(err)
	}
	v := vs[0]
	if len(v.index) < 5 {
		t.Fatalf("%d index entries, want one per batch", len(v.index))
	}
	for _, bad := range []struct {
		name string
		edit func(e *indexEntry)
	}{
		{"mid-batch position", func(e *indexEntry) { e.pos += 100 }},
		{"offset below its batch", func(e *indexEntry) { e.offset -= 2 }},
	} {
		w := v
		w.index = append([]indexEntry(nil), v.index...)
		bad.edit(&w.index[len(w.index)-1]) // the entry a fetch to below the log end jumps to
		if _, _, err := batchRange(w, w.f, 0, 1<<20, w.next-1, true); err == nil {
			t.Errorf("%s: no error", bad.name)
		}
	}
}
