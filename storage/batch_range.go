package storage

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/kbroker/kbroker/protocol/records"
)

// The segment walk of a fetch, shared by Read (the bytes copied) and
// ReadSection (a pinned file range for sendfile): which segments a read at
// an offset looks at (readViews), and within one segment which whole
// batches it returns (batchRange). Batch boundaries come from the sparse
// index wherever it has them, so a fetch reads a header or two near its
// start and its end instead of one per batch; the bytes between are never
// read by batchRange (Read reads them once, in one positioned read).

// readViews returns the views of the segments a read at offset looks at: the
// one holding offset may end below it (compaction leaves gaps) and compacted
// segments may be empty, so up to two non-empty segments, the second of
// which starts above offset. n == 0 means there is nothing to read
// (offset == LogEndOffset or offset >= maxOffset); gen is the generation to
// check after reading (readRaced).
func (l *Log) readViews(offset, maxOffset int64) (views [2]segView, n int, gen uint64, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return views, 0, 0, ErrClosed
	}
	start, leo := l.mu.logStart, l.mu.leo
	if offset < start || offset > leo {
		return views, 0, 0, fmt.Errorf("read offset %d of log [%d, %d]: %w", offset, start, leo, ErrOffsetOutOfRange)
	}
	if offset == leo || offset >= maxOffset {
		return views, 0, l.mu.gen, nil
	}
	for _, s := range l.mu.segments[l.segmentIndex(offset):] {
		if s.size == 0 {
			continue
		}
		views[n] = s.view()
		if n++; n == 2 {
			break
		}
	}
	return views, n, l.mu.gen, nil
}

// readRaced reports, after a read of views taken at generation gen, whether
// the log closed (ErrClosed) or bytes were removed under the read (stale:
// read again).
func (l *Log) readRaced(gen uint64) (stale bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return false, ErrClosed
	}
	return l.mu.gen != gen, nil
}

// batchRange finds in segment v (read through f) the batches a read at
// offset returns: from the batch holding offset (or the first after it) to
// the last whole batch whose last offset is below maxOffset, at most
// maxBytes in all, except that the first batch alone may exceed maxBytes
// when minOneBatch is set. It returns the file range [pos, end), empty when
// there are no such batches.
//
// The start is found by headers read from the sparse index's floor. The end
// jumps to the last indexed batch boundary within the limits: an index
// entry (last offset L of the batch at position P) tells that the bytes
// before P are whole batches whose offsets are all below that batch's base,
// so below L. The header at P is read to check the entry; headers after it
// only for the stretch the index does not cover.
func batchRange(v segView, f io.ReaderAt, offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (pos, end int64, err error) {
	scan := getScan()
	defer scanPool.Put(scan)
	pos, h, ok, err := scan.find(v, f, offset)
	if err != nil || !ok || h.LastOffset() >= maxOffset {
		return pos, pos, err
	}
	limit := int64(maxBytes)
	if first := int64(h.TotalSize()); first > limit {
		if !minOneBatch {
			return pos, pos, nil
		}
		limit = first
	}
	limit = min(limit, v.size-pos)
	end = pos + int64(h.TotalSize())
	// A boundary at file position p, after batches whose offsets are all
	// below bound, may end the range if it lies within limit and bound <=
	// maxOffset.
	fits := func(p, bound int64) bool { return p-pos <= limit && bound <= maxOffset }
	if fits(v.size, v.next) {
		return pos, v.size, nil // the whole rest of the segment
	}
	// Index entries after end: the first that does not fit, less one.
	from := sort.Search(len(v.index), func(i int) bool { return int64(v.index[i].pos) > end })
	k := from + sort.Search(len(v.index)-from, func(i int) bool {
		e := v.index[from+i]
		return !fits(int64(e.pos), e.offset) // base of e's batch <= e.offset
	})
	if k > from {
		// The entry jumped to must name the batch there: a header that
		// parses, ending at or below the entry's offset (recovery checks
		// only the last entry of an adopted index file). Its window also
		// serves the loop below.
		e := v.index[k-1]
		bh, err := scan.at(f, int64(e.pos), v.size)
		if err == nil && bh.LastOffset() > e.offset {
			err = fmt.Errorf("batch ends at %d, past its index entry %d", bh.LastOffset(), e.offset)
		}
		if err != nil {
			return pos, pos, fmt.Errorf("segment %d index entry at position %d: %w", v.base, e.pos, err)
		}
		end = int64(e.pos)
	}
	for end-pos+records.HeaderSize <= limit {
		bh, err := scan.at(f, end, v.size)
		if err != nil {
			return pos, pos, fmt.Errorf("segment %d position %d: %w", v.base, end, err)
		}
		if end-pos+int64(bh.TotalSize()) > limit || bh.LastOffset() >= maxOffset {
			break
		}
		end += int64(bh.TotalSize())
	}
	return pos, end, nil
}

// findBatch returns the position and header of the first batch in v whose
// last offset is >= offset, scanning headers from the sparse index's hint;
// ok is false if the segment has none.
func findBatch(v segView, offset int64) (pos int64, h records.Header, ok bool, err error) {
	scan := getScan()
	defer scanPool.Put(scan)
	return scan.find(v, v.f, offset)
}

// headerScanWindow is how much headerScan reads at once: several small
// batches' headers per read, and little waste before a large batch.
const headerScanWindow = 4 << 10

// headerScan reads batch headers through a small window, so that walking
// many small batches costs a read per window rather than a read per batch.
type headerScan struct {
	buf   [headerScanWindow]byte
	start int64 // file position of buf[0]
	n     int   // valid bytes in buf
}

// scanPool recycles headerScans: their window would otherwise be a 4 KiB
// allocation per fetched partition (it escapes into ReadAt).
var scanPool = sync.Pool{New: func() any { return new(headerScan) }}

// getScan returns an empty headerScan from the pool.
func getScan() *headerScan {
	s := scanPool.Get().(*headerScan)
	s.start, s.n = 0, 0
	return s
}

// find is findBatch through s, reading v through f.
func (s *headerScan) find(v segView, f io.ReaderAt, offset int64) (pos int64, h records.Header, ok bool, err error) {
	pos = floorPosition(v.index, offset)
	for pos < v.size {
		if h, err = s.at(f, pos, v.size); err != nil {
			return pos, h, false, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.TotalSize())
	}
	return pos, h, false, nil
}

// at parses the batch header at pos, checking the batch lies within the
// first size bytes (as headerAt).
func (s *headerScan) at(f io.ReaderAt, pos, size int64) (records.Header, error) {
	if size-pos < records.HeaderSize {
		return records.Header{}, records.ErrTruncated
	}
	if pos < s.start || pos+records.HeaderSize > s.start+int64(s.n) {
		m := int(min(int64(len(s.buf)), size-pos))
		k, err := f.ReadAt(s.buf[:m], pos)
		if k < records.HeaderSize {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return records.Header{}, fmt.Errorf("read batch header at %d: %w", pos, err)
		}
		s.start, s.n = pos, k
	}
	off := int(pos - s.start)
	h, err := records.ParseHeader(s.buf[off : off+records.HeaderSize])
	if err != nil {
		return h, err
	}
	if int64(h.TotalSize()) > size-pos {
		return h, records.ErrTruncated
	}
	return h, nil
}
