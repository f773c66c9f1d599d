package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Sizes of index file entries, as in Kafka.
const (
	offsetIndexEntrySize = 8  // int32 relative offset, int32 file position
	timeIndexEntrySize   = 12 // int64 timestamp, int32 relative offset
)

// indexEntry maps the last offset of a batch to the batch's file position.
type indexEntry struct {
	offset int64 // absolute
	pos    int32
}

// timeEntry records that every batch up to and including the one ending at
// offset has max timestamp <= ts (the segment's largest timestamp so far).
type timeEntry struct {
	ts     int64
	offset int64 // absolute; last offset of the batch that raised the max
}

// encodeOffsetEntries appends the on-disk form of es to dst.
func encodeOffsetEntries(dst []byte, base int64, es []indexEntry) []byte {
	for _, e := range es {
		dst = binary.BigEndian.AppendUint32(dst, uint32(int32(e.offset-base)))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.pos))
	}
	return dst
}

// encodeTimeEntries appends the on-disk form of es to dst.
func encodeTimeEntries(dst []byte, base int64, es []timeEntry) []byte {
	for _, e := range es {
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.ts))
		dst = binary.BigEndian.AppendUint32(dst, uint32(int32(e.offset-base)))
	}
	return dst
}

// decodeOffsetIndex parses an offset index and checks that it is consistent
// with a segment of logSize bytes: entry size, offsets and positions strictly
// increasing, positions inside the file.
func decodeOffsetIndex(b []byte, base int64, logSize int64) ([]indexEntry, error) {
	if len(b)%offsetIndexEntrySize != 0 {
		return nil, fmt.Errorf("offset index size %d not a multiple of %d", len(b), offsetIndexEntrySize)
	}
	es := make([]indexEntry, 0, len(b)/offsetIndexEntrySize)
	for i := 0; i < len(b); i += offsetIndexEntrySize {
		rel := int32(binary.BigEndian.Uint32(b[i:]))
		pos := int32(binary.BigEndian.Uint32(b[i+4:]))
		e := indexEntry{offset: base + int64(rel), pos: pos}
		if rel < 0 || pos < 0 || int64(pos) >= logSize {
			return nil, fmt.Errorf("offset index entry %d (%d at %d) outside segment of %d bytes", len(es), e.offset, pos, logSize)
		}
		if n := len(es); n > 0 && (e.offset <= es[n-1].offset || e.pos <= es[n-1].pos) {
			return nil, fmt.Errorf("offset index entry %d (%d at %d) not after (%d at %d)", n, e.offset, e.pos, es[n-1].offset, es[n-1].pos)
		}
		es = append(es, e)
	}
	return es, nil
}

// decodeTimeIndex parses a time index and checks entry size, timestamps
// strictly increasing, offsets non-decreasing and in [base, next).
func decodeTimeIndex(b []byte, base, next int64) ([]timeEntry, error) {
	if len(b)%timeIndexEntrySize != 0 {
		return nil, fmt.Errorf("time index size %d not a multiple of %d", len(b), timeIndexEntrySize)
	}
	es := make([]timeEntry, 0, len(b)/timeIndexEntrySize)
	for i := 0; i < len(b); i += timeIndexEntrySize {
		ts := int64(binary.BigEndian.Uint64(b[i:]))
		rel := int32(binary.BigEndian.Uint32(b[i+8:]))
		e := timeEntry{ts: ts, offset: base + int64(rel)}
		if rel < 0 || e.offset >= next {
			return nil, fmt.Errorf("time index entry %d offset %d outside [%d, %d)", len(es), e.offset, base, next)
		}
		if n := len(es); n > 0 && (e.ts <= es[n-1].ts || e.offset < es[n-1].offset) {
			return nil, fmt.Errorf("time index entry %d (%d@%d) not after (%d@%d)", n, e.ts, e.offset, es[n-1].ts, es[n-1].offset)
		}
		es = append(es, e)
	}
	return es, nil
}

// floorPosition returns the file position of the last indexed batch whose
// last offset is <= target, or 0 if there is none. Scanning from there
// reaches the batch holding target.
func floorPosition(es []indexEntry, target int64) int64 {
	i := sort.Search(len(es), func(i int) bool { return es[i].offset > target })
	if i == 0 {
		return 0
	}
	return int64(es[i-1].pos)
}

// timeFloorOffset returns the offset of the last time entry with timestamp
// strictly below ts, or -1 if none: every record up to that offset has a
// timestamp < ts, so a search for the first record >= ts may start after it.
func timeFloorOffset(es []timeEntry, ts int64) int64 {
	i := sort.Search(len(es), func(i int) bool { return es[i].ts >= ts })
	if i == 0 {
		return -1
	}
	return es[i-1].offset
}
