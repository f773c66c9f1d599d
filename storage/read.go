package storage

import (
	"fmt"

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
		views := make([]segView, 0, 2)
		for _, s := range l.mu.segments[i:min(i+2, len(l.mu.segments))] {
			views = append(views, s.view())
		}
		l.mu.RUnlock()

		var out []byte
		var err error
		for _, v := range views {
			if out, err = readSegment(v, max(offset, v.base), maxBytes, maxOffset, minOneBatch); err != nil || len(out) > 0 {
				break
			}
		}
		l.mu.RLock()
		stale, closed := l.mu.gen != gen, l.mu.closed
		l.mu.RUnlock()
		switch {
		case closed:
			return nil, ErrClosed
		case stale:
			continue // truncated under us: bytes read may be gone
		case err != nil:
			return nil, fmt.Errorf("read offset %d: %w", offset, err)
		}
		return out, nil
	}
}

// findBatch returns the position and header of the first batch in v whose
// last offset is >= offset, scanning headers from the sparse index's hint;
// ok is false if the segment has none.
func findBatch(v segView, offset int64) (pos int64, h records.Header, ok bool, err error) {
	pos = floorPosition(v.index, offset)
	for pos < v.size {
		h, err = headerAt(v.f, pos, v.size)
		if err != nil {
			return pos, h, false, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.TotalSize())
	}
	return pos, h, false, nil
}

// readSegment implements Read within one segment view.
func readSegment(v segView, offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	pos, h, ok, err := findBatch(v, offset)
	if err != nil || !ok || h.LastOffset() >= maxOffset {
		return nil, err
	}
	first := h.TotalSize()
	limit := int64(maxBytes)
	if first > maxBytes {
		if !minOneBatch {
			return nil, nil
		}
		limit = int64(first)
	}
	limit = min(limit, v.size-pos)
	buf := make([]byte, limit)
	if _, err := v.f.ReadAt(buf, pos); err != nil {
		return nil, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
	}
	end := 0
	for len(buf)-end >= records.HeaderSize {
		bh, err := records.ParseHeader(buf[end:])
		if err != nil {
			return nil, fmt.Errorf("segment %d position %d: %w", v.base, pos+int64(end), err)
		}
		if bh.TotalSize() > len(buf)-end || bh.LastOffset() >= maxOffset {
			break
		}
		end += bh.TotalSize()
	}
	return buf[:end:end], nil
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
// offset whose timestamp is >= ts, as ListOffsets with a timestamp does.
// ok is false if there is none (the caller answers with the log end offset).
//
// The answer is at batch granularity: offset is the first offset of the
// first batch whose max timestamp is >= ts, and timestamp is exact when that
// batch's first record qualifies or it uses LogAppendTime, else the batch's
// max timestamp.
// TODO: use records.DecodeRecords, once it exists, to return the exact record.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	vs, start, err := l.views()
	if err != nil {
		return -1, -1, false
	}
	for _, v := range vs {
		if v.maxTs < ts || v.size == 0 {
			continue
		}
		// Every record up to after is older than ts.
		from := max(start, timeFloorOffset(v.times, ts)+1)
		pos, h, found, err := findBatch(v, from)
		for found && err == nil {
			if h.MaxTimestamp >= ts {
				switch {
				case h.LogAppendTime():
					return max(h.BaseOffset, start), h.MaxTimestamp, true
				case h.FirstTimestamp >= ts:
					return max(h.BaseOffset, start), h.FirstTimestamp, true
				}
				return max(h.BaseOffset, start), h.MaxTimestamp, true
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
	}
	return -1, -1, false
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// its record, as ListOffsets with MAX_TIMESTAMP (-3); (-1, -1) if the log
// has no timestamps. The offset is exact when the batch holding the maximum
// uses LogAppendTime or has it as its first timestamp; otherwise it is the
// batch's last offset (Kafka's "shallow" offset before KAFKA-16310).
// TODO: use records.DecodeRecords to find the exact record.
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
	_, h, found, err := findBatch(v, v.maxTsOffset)
	if err != nil || !found || h.LastOffset() != v.maxTsOffset {
		return v.maxTsOffset, v.maxTs
	}
	if h.LogAppendTime() || h.FirstTimestamp == h.MaxTimestamp {
		return h.BaseOffset, v.maxTs
	}
	return v.maxTsOffset, v.maxTs
}
