package records

import (
	"fmt"
)

// Record is one record of a v2 batch. Its offset is the batch's base offset
// plus OffsetDelta; its timestamp is the batch's first timestamp plus
// TimestampDelta (unless the batch uses LogAppendTime, when every record's
// timestamp is the batch's max timestamp).
//
// Key and Value are nil for Kafka's null and non-nil (possibly empty)
// otherwise. Records returned by DecodeRecords alias the batch (uncompressed)
// or the decompressed buffer; they must not be modified in place.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte
	Headers        []RecordHeader
}

// RecordHeader is one record header. Kafka forbids a null header key, so Key
// is a string; Value is nil for null.
type RecordHeader struct {
	Key   string
	Value []byte
}

// minRecordSize is the smallest encoding of a record: a one-byte length and a
// body of attributes, timestamp delta, offset delta, key length, value length
// and header count of one byte each.
const minRecordSize = 7

// formatError is a malformed records section, before the caller decides
// whether it is corruption (data at rest) or an invalid record (a produce).
type formatError string

func (e formatError) Error() string { return string(e) }

// rawRecord is one record as it sits in the records section: its slices alias
// the section, and its headers are left encoded.
type rawRecord struct {
	attributes     int8
	timestampDelta int64
	offsetDelta    int32
	key, value     []byte
	headerCount    int
	headers        []byte // headerCount encoded headers, already checked
}

// recordReader walks a records section one record at a time without allocating.
type recordReader struct {
	b   []byte
	off int
}

// remaining is the number of unread bytes.
func (r *recordReader) remaining() int { return len(r.b) - r.off }

// next decodes the record at the read position into rec and advances past it.
// Errors are formatError values.
func (r *recordReader) next(rec *rawRecord) error {
	length, n, err := readVarint(r.b[r.off:])
	if err != nil {
		return formatError("record length: " + err.Error())
	}
	r.off += n
	if length < 0 {
		return formatError(fmt.Sprintf("negative record length %d", length))
	}
	if int(length) > r.remaining() {
		return formatError(fmt.Sprintf("record length %d exceeds the %d bytes left in the batch", length, r.remaining()))
	}
	body := r.b[r.off : r.off+int(length)]
	r.off += int(length)
	return parseBody(body, rec)
}

// parseBody decodes a record body (everything after its length) that must be
// consumed exactly.
func parseBody(b []byte, rec *rawRecord) error {
	if len(b) < 1 {
		return formatError("record body empty")
	}
	rec.attributes = int8(b[0])
	p := 1
	ts, n, err := readVarlong(b[p:])
	if err != nil {
		return formatError("record timestamp delta: " + err.Error())
	}
	rec.timestampDelta = ts
	p += n
	od, n, err := readVarint(b[p:])
	if err != nil {
		return formatError("record offset delta: " + err.Error())
	}
	rec.offsetDelta = od
	p += n
	if rec.key, n, err = readNullableBytes(b[p:]); err != nil {
		return formatError("record key: " + err.Error())
	}
	p += n
	if rec.value, n, err = readNullableBytes(b[p:]); err != nil {
		return formatError("record value: " + err.Error())
	}
	p += n
	count, n, err := readVarint(b[p:])
	if err != nil {
		return formatError("record header count: " + err.Error())
	}
	p += n
	if count < 0 {
		return formatError(fmt.Sprintf("negative record header count %d", count))
	}
	// Each header takes at least two bytes; a larger count cannot be honest.
	if int(count) > (len(b)-p)/2 {
		return formatError(fmt.Sprintf("record header count %d exceeds the %d bytes left in the record", count, len(b)-p))
	}
	start := p
	for i := 0; i < int(count); i++ {
		klen, n, err := readVarint(b[p:])
		if err != nil {
			return formatError("header key length: " + err.Error())
		}
		p += n
		if klen < 0 {
			return formatError(fmt.Sprintf("negative header key length %d", klen))
		}
		if int(klen) > len(b)-p {
			return formatError(fmt.Sprintf("header key length %d exceeds the %d bytes left in the record", klen, len(b)-p))
		}
		p += int(klen)
		_, n, err = readNullableBytes(b[p:])
		if err != nil {
			return formatError("header value: " + err.Error())
		}
		p += n
	}
	rec.headerCount = int(count)
	rec.headers = b[start:p]
	if p != len(b) {
		return formatError(fmt.Sprintf("record length says %d bytes, its fields take %d", len(b), p))
	}
	return nil
}

// decodeHeaders expands a rawRecord's checked, encoded headers.
func decodeHeaders(b []byte, count int) []RecordHeader {
	if count == 0 {
		return nil
	}
	hs := make([]RecordHeader, count)
	p := 0
	for i := range hs {
		// The encoding was checked by parseBody; errors cannot occur here.
		klen, n, _ := readVarint(b[p:])
		p += n
		hs[i].Key = string(b[p : p+int(klen)])
		p += int(klen)
		v, n, _ := readNullableBytes(b[p:])
		hs[i].Value = v
		p += n
	}
	return hs
}

// DecodeRecords checks the batch at the start of b (trailing bytes are
// ignored), decompresses its records and decodes exactly NumRecords of them.
//
// Every inconsistency is a *CorruptError: a bad CRC or length, a bad codec or
// compressed stream, a record count that does not match the records section,
// malformed varints or lengths, or offset deltas that are negative, not
// strictly increasing or beyond LastOffsetDelta. A batch from a compacted log
// may hold fewer records than LastOffsetDelta+1 (even none); that is valid.
func DecodeRecords(b []byte) (Header, []Record, error) {
	h, err := Check(b)
	if err != nil {
		return h, nil, err
	}
	data, err := Decompress(h.Compression(), b[HeaderSize:h.TotalSize()])
	if err != nil {
		return h, nil, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	n := int(h.NumRecords)
	if most := len(data) / minRecordSize; n > most {
		return h, nil, corrupt("batch at offset %d claims %d records in %d bytes", h.BaseOffset, n, len(data))
	}
	recs := make([]Record, 0, n)
	r := recordReader{b: data}
	var raw rawRecord
	last := int32(-1)
	for i := 0; i < n; i++ {
		if r.remaining() == 0 {
			return h, nil, corrupt("batch at offset %d: %d records decoded, header claims %d", h.BaseOffset, i, n)
		}
		if err := r.next(&raw); err != nil {
			return h, nil, corrupt("batch at offset %d, record %d: %v", h.BaseOffset, i, err)
		}
		if raw.offsetDelta <= last {
			return h, nil, corrupt("batch at offset %d, record %d: offset delta %d not above %d", h.BaseOffset, i, raw.offsetDelta, last)
		}
		if raw.offsetDelta > h.LastOffsetDelta {
			return h, nil, corrupt("batch at offset %d, record %d: offset delta %d beyond last offset delta %d", h.BaseOffset, i, raw.offsetDelta, h.LastOffsetDelta)
		}
		last = raw.offsetDelta
		recs = append(recs, Record{
			Attributes:     raw.attributes,
			TimestampDelta: raw.timestampDelta,
			OffsetDelta:    raw.offsetDelta,
			Key:            raw.key,
			Value:          raw.value,
			Headers:        decodeHeaders(raw.headers, raw.headerCount),
		})
	}
	if r.remaining() != 0 {
		return h, nil, corrupt("batch at offset %d: %d bytes after the last of %d records", h.BaseOffset, r.remaining(), n)
	}
	return h, recs, nil
}
