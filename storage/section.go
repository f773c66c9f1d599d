package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

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
// The caller must Release a non-nil Section. Batch boundaries come from the
// index and a few header reads (batchRange), not from reading the records.
func (l *Log) ReadSection(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (*Section, error) {
	for {
		views, n, gen, err := l.readViews(offset, maxOffset)
		if err != nil || n == 0 {
			return nil, err
		}
		var sec *Section
		for _, v := range views[:n] {
			if sec, err = sectionOf(v, max(offset, v.base), maxBytes, maxOffset, minOneBatch); err != nil || sec != nil {
				break
			}
		}
		stale, cerr := l.readRaced(gen)
		if (stale || cerr != nil || err != nil) && sec != nil {
			sec.Release()
			sec = nil
		}
		switch {
		case cerr != nil:
			return nil, cerr
		case stale:
			continue // truncated under us: the range may be gone
		case err != nil:
			return nil, fmt.Errorf("read offset %d: %w", offset, err)
		}
		return sec, nil
	}
}

// sectionOf implements ReadSection within one segment view: the batches of
// batchRange, as a pinned range.
func sectionOf(v segView, offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (*Section, error) {
	f, err := v.f.acquire()
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", v.base, err)
	}
	pos, end, err := batchRange(v, f, offset, maxBytes, maxOffset, minOneBatch)
	if err != nil || end == pos {
		v.f.release()
		return nil, err
	}
	return &Section{sf: v.f, f: f, pos: pos, n: end - pos}, nil
}
