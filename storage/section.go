package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage/vfs"
)

// Section is a byte range of a segment file that a Fetch answer holds by
// reference instead of copying it into memory: whole batches, as Read
// would return them, sent later with sendfile (or copied, on TLS). The
// range pins the segment's descriptor (a use of its segFile), so neither
// the descriptor cache nor a retention delete or compaction swap closes it
// before Release: an unlinked file stays readable through an open
// descriptor.
//
// What it cannot hold still is the file's content: bytes are read when the
// answer is written, and a truncation in between (only a leader turning
// follower truncates) makes the write come up short, which the writer
// reports as an error (io.ErrUnexpectedEOF), as Kafka's FileRecords.writeTo
// does, so the connection closes rather than send a wrong length.
type Section struct {
	sf   *segFile
	f    vfs.File
	pos  int64
	n    int64
	once sync.Once
}

// Len is the byte length of the range.
func (s *Section) Len() int64 { return s.n }

// File returns the OS file behind the range and the range's offset in it,
// for sendfile; ok is false for other file systems (tests' vfs.Mem).
func (s *Section) File() (f *os.File, off int64, ok bool) {
	f, ok = vfs.AsOSFile(s.f)
	return f, s.pos, ok
}

// sectionChunk is the buffer of the copying path.
const sectionChunk = 256 << 10

var sectionBufs = sync.Pool{New: func() any { b := make([]byte, sectionChunk); return &b }}

// WriteTo copies the range to w through a pooled buffer (the TLS path, and
// file systems without an OS file). A file that ends early is
// io.ErrUnexpectedEOF.
func (s *Section) WriteTo(w io.Writer) (int64, error) {
	bp := sectionBufs.Get().(*[]byte)
	defer sectionBufs.Put(bp)
	buf := *bp
	var done int64
	for done < s.n {
		m := min(int64(len(buf)), s.n-done)
		k, err := s.f.ReadAt(buf[:m], s.pos+done)
		if int64(k) < m {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return done, fmt.Errorf("segment %s position %d: %w", s.sf.Name(), s.pos+done, err)
		}
		k, err = w.Write(buf[:m])
		done += int64(k)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// ReadAt reads from the range (p is relative to its start), for callers
// that need the bytes in memory.
func (s *Section) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.n {
		return 0, io.EOF
	}
	if rest := s.n - off; int64(len(p)) > rest {
		p = p[:rest]
	}
	return s.f.ReadAt(p, s.pos+off)
}

// Release unpins the segment's descriptor. It may be called more than
// once; only the first counts.
func (s *Section) Release() {
	s.once.Do(func() { s.sf.release() })
}

// ReadSection is Read without the copy: it returns the same batches as a
// pinned range of the segment file, or nil when Read would return no bytes.
// The caller must Release a non-nil Section. Batch headers are found with
// small reads (headerScan), not by reading the records.
func (l *Log) ReadSection(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (*Section, error) {
	for {
		l.mu.RLock()
		if l.mu.closed {
			l.mu.RUnlock()
			return nil, ErrClosed
		}
		start, leo, gen := l.mu.logStart, l.mu.leo, l.mu.gen
		if offset < start || offset > leo {
			l.mu.RUnlock()
			return nil, fmt.Errorf("read offset %d of log [%d, %d]: %w", offset, start, leo, ErrOffsetOutOfRange)
		}
		if offset == leo || offset >= maxOffset {
			l.mu.RUnlock()
			return nil, nil
		}
		i := l.segmentIndex(offset)
		// As Read: at most two non-empty segments, the second starting
		// above offset (compaction leaves gaps).
		var views [2]segView
		nv := 0
		for _, s := range l.mu.segments[i:] {
			if s.size == 0 {
				continue
			}
			views[nv] = s.view()
			if nv++; nv == 2 {
				break
			}
		}
		l.mu.RUnlock()

		var sec *Section
		var err error
		for _, v := range views[:nv] {
			if sec, err = sectionOf(v, max(offset, v.base), maxBytes, maxOffset, minOneBatch); err != nil || sec != nil {
				break
			}
		}
		l.mu.RLock()
		stale, closed := l.mu.gen != gen, l.mu.closed
		l.mu.RUnlock()
		if (stale || closed || err != nil) && sec != nil {
			sec.Release()
			sec = nil
		}
		switch {
		case closed:
			return nil, ErrClosed
		case stale:
			continue // truncated under us: the range may be gone
		case err != nil:
			return nil, fmt.Errorf("read offset %d: %w", offset, err)
		}
		return sec, nil
	}
}

// sectionOf implements ReadSection within one segment view: the batches
// readSegment would return, as a pinned range.
func sectionOf(v segView, offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (*Section, error) {
	f, err := v.f.acquire()
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", v.base, err)
	}
	sec := &Section{sf: v.f, f: f}
	keep := false
	defer func() {
		if !keep {
			sec.Release()
		}
	}()
	var scan headerScan
	pos := floorPosition(v.index, offset)
	var h records.Header
	for {
		if pos >= v.size {
			return nil, nil
		}
		if h, err = scan.at(f, pos, v.size); err != nil {
			return nil, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += int64(h.TotalSize())
	}
	if h.LastOffset() >= maxOffset {
		return nil, nil
	}
	limit := int64(maxBytes)
	if first := int64(h.TotalSize()); first > limit {
		if !minOneBatch {
			return nil, nil
		}
		limit = first
	}
	limit = min(limit, v.size-pos)
	// Whole batches below maxOffset within limit; the first is in.
	end := int64(h.TotalSize())
	for end+records.HeaderSize <= limit {
		bh, err := scan.at(f, pos+end, v.size)
		if err != nil {
			return nil, fmt.Errorf("segment %d position %d: %w", v.base, pos+end, err)
		}
		if end+int64(bh.TotalSize()) > limit || bh.LastOffset() >= maxOffset {
			break
		}
		end += int64(bh.TotalSize())
	}
	sec.pos, sec.n = pos, end
	keep = true
	return sec, nil
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
