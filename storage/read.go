package storage

import (
	"errors"
	"fmt"
	"io"

	"github.com/kbroker/kbroker/protocol/records"
)

// Read returns whole batches starting with the one that contains offset (it
// may start before offset; consumers skip the earlier records). Only batches
// whose last offset is below maxOffset (the high watermark, exclusive) are
// returned, at most maxBytes in total, except that if minOneBatch is set and
// the first such batch alone exceeds maxBytes it is returned by itself.
// Batches come from a single segment per call.
//
// offset == LogEndOffset, or offset >= maxOffset, returns no bytes and no
// error; offset outside [LogStartOffset, LogEndOffset] returns an error
// wrapping ErrOffsetOutOfRange. Read never blocks on an Append.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	for {
		views, n, gen, err := l.readViews(offset, maxOffset)
		if err != nil || n == 0 {
			return nil, err
		}
		var out []byte
		for _, v := range views[:n] {
			if out, err = readSegment(v, max(offset, v.base), maxBytes, maxOffset, minOneBatch); err != nil || len(out) > 0 {
				break
			}
		}
		stale, cerr := l.readRaced(gen)
		switch {
		case cerr != nil:
			return nil, cerr
		case stale:
			continue // truncated under us: bytes read may be gone
		case err != nil:
			return nil, fmt.Errorf("read offset %d: %w", offset, err)
		}
		return out, nil
	}
}

// readSegment implements Read within one segment view: the batches of
// batchRange, in one positioned read.
func readSegment(v segView, offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	f, err := v.f.acquire()
	if err != nil {
		return nil, fmt.Errorf("segment %d: %w", v.base, err)
	}
	defer v.f.release()
	pos, end, err := batchRange(v, f, offset, maxBytes, maxOffset, minOneBatch)
	if err != nil || end == pos {
		return nil, err
	}
	buf := make([]byte, end-pos)
	if k, err := f.ReadAt(buf, pos); k < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
	}
	return buf, nil
}

// views copies every segment's view and the log start offset under the
// read lock.
func (l *Log) views() ([]segView, int64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return nil, 0, ErrClosed
	}
	vs := make([]segView, len(l.mu.segments))
	for i, s := range l.mu.segments {
		vs[i] = s.view()
	}
	return vs, l.mu.logStart, nil
}

// OffsetForTimestamp finds the first record at or after the log start
// offset whose timestamp is >= ts, as ListOffsets with a timestamp does
// (Kafka's fetchOffsetByTimestamp). ok is false if there is none (the caller
// answers with the log end offset) or the log is closed.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	vs, start, err := l.views()
	if err != nil {
		return -1, -1, false
	}
	for _, v := range vs {
		if v.maxTs < ts || v.size == 0 {
			continue
		}
		// Every record up to timeFloorOffset is older than ts.
		from := max(start, timeFloorOffset(v.times, ts)+1)
		pos, h, found, err := findBatch(v, from)
		hit := false
		for found && err == nil {
			if h.MaxTimestamp >= ts {
				if offset, timestamp, hit, err = firstRecordAtOrAfter(v, pos, h, ts, from); err != nil || hit {
					break
				}
			}
			pos += int64(h.TotalSize())
			if pos >= v.size {
				break
			}
			h, err = headerAt(v.f, pos, v.size)
		}
		if err != nil {
			l.logger.Error("timestamp lookup", "segment", v.base, "err", err)
			return -1, -1, false
		}
		if hit {
			return offset, timestamp, true
		}
	}
	return -1, -1, false
}

// readBatchAt reads the whole batch whose header h is at pos and decodes it.
func readBatchAt(v segView, pos int64, h records.Header) ([]records.Record, error) {
	b := make([]byte, h.TotalSize())
	if _, err := v.f.ReadAt(b, pos); err != nil {
		return nil, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
	}
	_, recs, err := records.DecodeRecords(b)
	if err != nil {
		return nil, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
	}
	return recs, nil
}

// firstRecordAtOrAfter returns the first record of the batch (header h at
// pos) with offset >= minOffset and timestamp >= ts; hit is false if none.
func firstRecordAtOrAfter(v segView, pos int64, h records.Header, ts, minOffset int64) (offset, timestamp int64, hit bool, err error) {
	recs, err := readBatchAt(v, pos, h)
	if err != nil {
		return -1, -1, false, err
	}
	for _, r := range recs {
		off, rts := h.BaseOffset+int64(r.OffsetDelta), recordTimestamp(h, r)
		if off >= minOffset && rts >= ts {
			return off, rts, true, nil
		}
	}
	return -1, -1, false, nil
}

// recordTimestamp is a record's timestamp: the batch's max timestamp under
// LogAppendTime, else first timestamp plus the record's delta.
func recordTimestamp(h records.Header, r records.Record) int64 {
	if h.LogAppendTime() {
		return h.MaxTimestamp
	}
	return h.FirstTimestamp + r.TimestampDelta
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the first record carrying it, as ListOffsets with MAX_TIMESTAMP (-3)
// answers since KAFKA-16310; (-1, -1) if the log has no timestamps.
func (l *Log) MaxTimestamp() (offset int64, timestamp int64) {
	vs, _, err := l.views()
	if err != nil {
		return -1, -1
	}
	best := -1
	for i, v := range vs {
		if v.maxTs >= 0 && (best < 0 || v.maxTs > vs[best].maxTs) {
			best = i
		}
	}
	if best < 0 {
		return -1, -1
	}
	v := vs[best]
	pos, h, found, err := findBatch(v, v.maxTsOffset)
	if err == nil && found && h.LastOffset() == v.maxTsOffset {
		var hit bool
		if offset, _, hit, err = firstRecordAtOrAfter(v, pos, h, v.maxTs, h.BaseOffset); err == nil && hit {
			return offset, v.maxTs
		}
	}
	if err != nil {
		l.logger.Error("max timestamp lookup", "segment", v.base, "err", err)
	}
	return v.maxTsOffset, v.maxTs
}
