package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/kbroker/kbroker/protocol/records"
)

// CorruptionError describes the first invalid batch found while scanning a
// segment: a torn write, a bad CRC, bad magic or offsets going backwards.
type CorruptionError struct {
	Segment string // path of the .log file
	Pos     int64  // file position of the invalid batch
	Err     error  // what was wrong
}

// Error describes the segment, position and reason.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("segment %s: invalid batch at position %d: %v", e.Segment, e.Pos, e.Err)
}

// Unwrap returns the reason, e.g. records.ErrTruncated or a *records.CorruptError.
func (e *CorruptionError) Unwrap() error { return e.Err }

// scanBufSize is the read-ahead used when validating whole batches.
const scanBufSize = 1 << 20

// scan walks the batches in [pos, fileSize), tracking each valid one (which
// advances s.size and s.next and adds index entries). With validate it reads
// every batch and checks its CRC; otherwise only headers. minBase is the
// lowest base offset the first batch may have. It stops at the first invalid
// batch and returns a *CorruptionError for it (tail), or a non-nil ioErr if
// the file could not be read.
func (s *segment) scan(pos, fileSize, minBase int64, validate bool, interval int32) (tail, ioErr error) {
	s.size = pos
	bad := func(err error) error { return &CorruptionError{Segment: s.String(), Pos: pos, Err: err} }
	var br *bufio.Reader
	var buf []byte
	if validate {
		// Sized to what is left (bufio's floor is 16 bytes): recovery scans
		// the active segment of every partition, mostly far below 1 MiB.
		size := int(min(fileSize-pos, scanBufSize))
		br = bufio.NewReaderSize(io.NewSectionReader(s.log, pos, fileSize-pos), size)
	}
	for pos < fileSize {
		var h records.Header
		var err error
		if validate {
			h, err = readBatch(br, &buf, fileSize-pos)
			if err != nil && !isBatchError(err) {
				return nil, fmt.Errorf("scan %s at %d: %w", s, pos, err)
			}
		} else {
			h, err = headerAt(s.log, pos, fileSize)
			if err != nil && !isBatchError(err) {
				return nil, fmt.Errorf("scan %s at %d: %w", s, pos, err)
			}
		}
		switch {
		case err != nil:
			return bad(err), nil
		case h.BaseOffset < minBase:
			return bad(fmt.Errorf("base offset %d below %d", h.BaseOffset, minBase)), nil
		case !s.canHold(h.LastOffset()):
			return bad(fmt.Errorf("offset %d does not fit segment based at %d", h.LastOffset(), s.base)), nil
		case h.LastOffset() == math.MaxInt64:
			return bad(fmt.Errorf("last offset overflows")), nil
		}
		s.track(h, pos, h.TotalSize(), interval)
		pos += int64(h.TotalSize())
		minBase = h.NextOffset()
	}
	return nil, nil
}

// isBatchError reports whether err describes bad batch bytes rather than a
// failed read.
func isBatchError(err error) bool {
	return errors.Is(err, records.ErrTruncated) || errors.Is(err, records.ErrUnsupportedMagic) || records.IsCorrupt(err)
}

// readBatch reads the next whole batch from br (with remain bytes left in
// the segment) into *buf and checks it.
func readBatch(br *bufio.Reader, buf *[]byte, remain int64) (records.Header, error) {
	if remain < records.HeaderSize {
		return records.Header{}, records.ErrTruncated
	}
	hdr, err := br.Peek(records.HeaderSize)
	if err != nil {
		return records.Header{}, err
	}
	h, err := records.ParseHeader(hdr)
	if err != nil {
		return h, err
	}
	n := int64(h.TotalSize())
	if n > remain {
		return h, records.ErrTruncated
	}
	if int64(cap(*buf)) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := io.ReadFull(br, b); err != nil {
		return h, err
	}
	return records.Check(b)
}

// resetState forgets everything tracked about the segment's contents.
func (s *segment) resetState() {
	s.size, s.next = 0, s.base
	s.index, s.times = nil, nil
	s.maxTs, s.maxTsOffset = -1, -1
	s.bytesSinceIndex = 0
}

// rebuild rescans the whole segment (checking CRCs if validate), truncates
// the file after the last valid batch and rewrites both indexes. tail is the
// reason for truncation, nil if none.
func (s *segment) rebuild(fileSize int64, validate bool, interval int32) (tail, err error) {
	s.resetState()
	tail, err = s.scan(0, fileSize, s.base, validate, interval)
	if err != nil {
		return nil, err
	}
	if err := s.truncateFile(fileSize); err != nil {
		return nil, err
	}
	if err := s.writeIndexes(); err != nil {
		return nil, err
	}
	return tail, nil
}

// truncateFile cuts the log file (of fileSize bytes) to s.size if longer.
func (s *segment) truncateFile(fileSize int64) error {
	if s.size >= fileSize {
		return nil
	}
	if err := s.log.Truncate(s.size); err != nil {
		return fmt.Errorf("truncate %s to %d: %w", s, s.size, err)
	}
	s.dirty = true
	return nil
}

// load trusts the segment's batches (they were validated before a clean
// shutdown or lie below the recovery point) and adopts its index files if
// they are consistent with it; otherwise it rebuilds them from batch headers.
// It scans headers after the last index entry to find the segment's end
// and entries the files lack; nextBase is the following segment's base
// (the log end of an inactive segment, which compaction may leave gaps before).
// rebuilt explains why indexes were rebuilt (nil if not); tail is as in rebuild.
func (s *segment) load(idxB, timeB []byte, fileSize, nextBase int64, last bool, interval int32) (rebuilt, tail, err error) {
	bound := nextBase
	if last {
		bound = math.MaxInt64
	}
	index, rebuilt := decodeOffsetIndex(idxB, s.base, fileSize)
	var times []timeEntry
	if rebuilt == nil {
		times, rebuilt = decodeTimeIndex(timeB, s.base, bound)
	}
	if rebuilt == nil && len(index) > 0 {
		// The last entry must point at a batch ending at its offset.
		e := index[len(index)-1]
		h, herr := headerAt(s.log, int64(e.pos), fileSize)
		if herr != nil || h.LastOffset() != e.offset {
			rebuilt = fmt.Errorf("offset index entry %d at %d does not match the batch there", e.offset, e.pos)
		}
	}
	if rebuilt == nil && !last && fileSize > 0 && len(times) == 0 {
		rebuilt = errors.New("time index of an inactive non-empty segment is empty")
	}
	if rebuilt != nil {
		tail, err = s.rebuild(fileSize, false, interval)
		return rebuilt, tail, err
	}
	s.index, s.times = index, times
	s.idxOnDisk, s.timesOnDisk, s.idxStale = len(index), len(times), false
	if n := len(times); n > 0 {
		s.maxTs, s.maxTsOffset = times[n-1].ts, times[n-1].offset
	}
	// Scan the batch headers after the last index entry, for every segment:
	// the index files are synced after the log file and the time index
	// before the offset index, so after a crash the files may lack entries
	// (such as the largest timestamp sealed at roll) only for batches after
	// the last offset index entry on disk.
	pos := int64(0)
	if n := len(index); n > 0 {
		pos = int64(index[n-1].pos)
	}
	nIdx, nTimes := len(s.index), len(s.times)
	s.bytesSinceIndex = 0
	if tail, err = s.scan(pos, fileSize, s.base, false, interval); err != nil {
		return nil, nil, err
	}
	if n := len(s.times); n > 0 && s.times[n-1].offset >= s.next {
		rebuilt = fmt.Errorf("time index offset %d beyond log end %d", s.times[n-1].offset, s.next)
		tail, err = s.rebuild(fileSize, false, interval)
		return rebuilt, tail, err
	}
	if !last {
		if tail != nil || s.next > nextBase {
			rebuilt = fmt.Errorf("inactive segment does not end cleanly before %d: %v", nextBase, tail)
			tail, err = s.rebuild(fileSize, false, interval)
			return rebuilt, tail, err
		}
		// Compaction may leave a gap before the next segment.
		s.next = nextBase
		s.appendTimeEntry()
	}
	if err := s.truncateFile(fileSize); err != nil {
		return nil, nil, err
	}
	if len(s.index) > nIdx || len(s.times) > nTimes {
		s.dirty = true // the new entries reach the files at the next sync
	}
	return nil, tail, nil
}
