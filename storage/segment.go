package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
)

// File name suffixes of a segment.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
)

// segmentPath is Kafka's file name for the segment starting at base.
func segmentPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// parseSegmentName returns the base offset encoded in a segment file name
// such as "00000000000000000042.log", and whether name has that form.
func parseSegmentName(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok || len(stem) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || base < 0 {
		return 0, false
	}
	return base, true
}

// segment is one "<base>.log" file with its offset and time indexes.
//
// Fields below the files are guarded by the owning Log's mu: written only
// with the write lock held, read by readers under the read lock (see view).
// Invariants: size is the file size and a batch boundary; every batch in
// [0,size) has offsets in [base, next) with next-1-base <= MaxInt32; index
// and times hold exactly the entries in idx and tidx; index and times slices
// are never overwritten in place below their length (truncation reallocates),
// so a reader's copy of a slice header stays valid.
type segment struct {
	base int64
	dir  string
	log  *os.File
	idx  *indexFile
	tidx *indexFile

	size            int64
	next            int64 // offset after the last batch; base when empty
	index           []indexEntry
	times           []timeEntry
	maxTs           int64 // largest batch max timestamp, -1 if none
	maxTsOffset     int64 // last offset of the batch holding maxTs, -1 if none
	bytesSinceIndex int64
	rollStart       time.Time // time of the first append since creation or load; zero if none
	dirty           bool      // written since the last fsync
}

// openSegment opens (creating if absent) the files of the segment at base.
// The indexes' contents are returned undecoded; the caller loads or rebuilds them.
func openSegment(dir string, base int64, create bool) (s *segment, idxBytes, timeBytes []byte, err error) {
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(segmentPath(dir, base, logSuffix), flag, 0o644)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open segment: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("stat segment: %w", err)
	}
	s = &segment{base: base, dir: dir, log: f, size: st.Size(), next: base, maxTs: -1, maxTsOffset: -1}
	if create {
		for _, suf := range []string{indexSuffix, timeIndexSuffix} {
			if err := os.Remove(segmentPath(dir, base, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.close()
				return nil, nil, nil, fmt.Errorf("remove stale index: %w", err)
			}
		}
	}
	if s.idx, idxBytes, err = openIndexFile(segmentPath(dir, base, indexSuffix), offsetIndexEntrySize); err != nil {
		s.close()
		return nil, nil, nil, err
	}
	if s.tidx, timeBytes, err = openIndexFile(segmentPath(dir, base, timeIndexSuffix), timeIndexEntrySize); err != nil {
		s.close()
		return nil, nil, nil, err
	}
	return s, idxBytes, timeBytes, nil
}

// String names the segment for log lines and errors.
func (s *segment) String() string { return segmentPath(s.dir, s.base, logSuffix) }

// track accounts for a batch of size bytes written at pos, adding index
// entries as Kafka's LogSegment.append does: an offset entry (and a time
// entry if the max timestamp grew) once more than interval bytes were
// appended since the last entry.
func (s *segment) track(h records.Header, pos int64, size int, interval int32) {
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.maxTsOffset = h.MaxTimestamp, h.LastOffset()
	}
	if s.bytesSinceIndex > int64(interval) {
		s.index = append(s.index, indexEntry{offset: h.LastOffset(), pos: int32(pos)})
		s.appendTimeEntry()
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(size)
	s.size = pos + int64(size)
	s.next = h.NextOffset()
}

// appendTimeEntry adds (maxTs, maxTsOffset) to times if it raises the largest
// indexed timestamp. It reports whether it did.
func (s *segment) appendTimeEntry() bool {
	if s.maxTs < 0 || (len(s.times) > 0 && s.maxTs <= s.times[len(s.times)-1].ts) {
		return false
	}
	s.times = append(s.times, timeEntry{ts: s.maxTs, offset: s.maxTsOffset})
	return true
}

// seal records the final largest timestamp in the time index, as Kafka does
// when a segment becomes inactive or is closed, so a reload knows it.
func (s *segment) seal() error {
	if !s.appendTimeEntry() {
		return nil
	}
	if err := s.tidx.append(encodeTimeEntries(nil, s.base, s.times[len(s.times)-1:])); err != nil {
		s.times = s.times[:len(s.times)-1]
		return err
	}
	s.dirty = true
	return nil
}

// canHold reports whether offsets up to last fit as int32 relative offsets.
func (s *segment) canHold(last int64) bool {
	return last-s.base >= 0 && last-s.base <= math.MaxInt32
}

// writeIndexes rewrites both index files from the in-memory entries.
func (s *segment) writeIndexes() error {
	if err := s.idx.rewrite(encodeOffsetEntries(nil, s.base, s.index)); err != nil {
		return err
	}
	if err := s.tidx.rewrite(encodeTimeEntries(nil, s.base, s.times)); err != nil {
		return err
	}
	s.dirty = true
	return nil
}

// sync fsyncs the log and index files.
func (s *segment) sync() error {
	for _, f := range []*os.File{s.log, s.idx.f, s.tidx.f} {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", f.Name(), err)
		}
	}
	return nil
}

// close closes the segment's files.
func (s *segment) close() error {
	var errs []error
	for _, f := range []*os.File{s.log, s.idxFile(), s.tidxFile()} {
		if f != nil {
			if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (s *segment) idxFile() *os.File {
	if s.idx == nil {
		return nil
	}
	return s.idx.f
}

func (s *segment) tidxFile() *os.File {
	if s.tidx == nil {
		return nil
	}
	return s.tidx.f
}

// remove closes the segment and deletes its files.
func (s *segment) remove() error {
	err := s.close()
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if e := os.Remove(segmentPath(s.dir, s.base, suf)); e != nil && !errors.Is(e, os.ErrNotExist) {
			err = errors.Join(err, e)
		}
	}
	if err != nil {
		return fmt.Errorf("remove segment %d: %w", s.base, err)
	}
	return nil
}

// segView is a reader's consistent copy of a segment's state, taken under
// the log's read lock. Bytes in [0,size) of f never change while the log's
// generation is unchanged.
type segView struct {
	base        int64
	f           *os.File
	size        int64
	next        int64
	index       []indexEntry
	times       []timeEntry
	maxTs       int64
	maxTsOffset int64
}

// view copies the reader-visible state. Callers hold the log's lock.
func (s *segment) view() segView {
	return segView{base: s.base, f: s.log, size: s.size, next: s.next, index: s.index,
		times: s.times, maxTs: s.maxTs, maxTsOffset: s.maxTsOffset}
}

// headerAt reads and parses the batch header at pos, checking the batch
// lies within the first size bytes.
func headerAt(f *os.File, pos, size int64) (records.Header, error) {
	var buf [records.HeaderSize]byte
	if size-pos < records.HeaderSize {
		return records.Header{}, records.ErrTruncated
	}
	if _, err := f.ReadAt(buf[:], pos); err != nil {
		return records.Header{}, fmt.Errorf("read batch header at %d: %w", pos, err)
	}
	h, err := records.ParseHeader(buf[:])
	if err != nil {
		return h, err
	}
	if int64(h.TotalSize()) > size-pos {
		return h, records.ErrTruncated
	}
	return h, nil
}
