package records

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// BatchSpec is the header of a batch to Build, less the fields Build derives:
// batchLength, magic (2), crc, lastOffsetDelta (the last record's
// OffsetDelta, 0 without records) and recordCount.
type BatchSpec struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	// Attributes holds the timestamp-type, transactional and control bits;
	// the codec bits must be zero (the codec comes from Codec).
	Attributes     int16
	FirstTimestamp int64
	// MaxTimestamp of 0 means: compute it as the largest record timestamp
	// (FirstTimestamp plus TimestampDelta), or FirstTimestamp without records.
	MaxTimestamp  int64
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Codec         Codec
}

// Build encodes recs into a complete v2 batch with a valid CRC-32C, compressing
// the records section with spec.Codec. Offset deltas must be non-negative and
// strictly increasing; keys, values and header keys must fit Kafka's int32
// lengths, and the batch must fit its int32 batchLength.
func Build(spec BatchSpec, recs []Record) ([]byte, error) {
	if spec.Attributes&attrCompressionMask != 0 {
		return nil, fmt.Errorf("build batch: attributes %#x carry codec bits; set Codec instead", spec.Attributes)
	}
	if spec.Codec < CodecNone || spec.Codec > CodecZstd {
		return nil, fmt.Errorf("build batch: unknown codec %d", int8(spec.Codec))
	}
	if len(recs) > math.MaxInt32 {
		return nil, fmt.Errorf("build batch: %d records exceed int32", len(recs))
	}
	size := 0
	last := int32(-1)
	maxTS := spec.FirstTimestamp
	for i := range recs {
		r := &recs[i]
		if r.OffsetDelta <= last {
			return nil, fmt.Errorf("build batch: record %d has offset delta %d, not above %d", i, r.OffsetDelta, last)
		}
		last = r.OffsetDelta
		if ts := spec.FirstTimestamp + r.TimestampDelta; i == 0 || ts > maxTS {
			maxTS = ts
		}
		body, err := recordBodySize(r)
		if err != nil {
			return nil, fmt.Errorf("build batch: record %d: %w", i, err)
		}
		size += varintSize(int32(body)) + body
		if size > math.MaxInt32 {
			return nil, fmt.Errorf("build batch: records exceed %d bytes", math.MaxInt32)
		}
	}
	if spec.MaxTimestamp != 0 {
		maxTS = spec.MaxTimestamp
	}
	lastOffsetDelta := int32(0)
	if len(recs) > 0 {
		lastOffsetDelta = last
	}

	var section []byte
	var b []byte
	if spec.Codec == CodecNone {
		b = make([]byte, HeaderSize, HeaderSize+size)
		for i := range recs {
			b = appendRecord(b, &recs[i])
		}
	} else {
		raw := make([]byte, 0, size)
		for i := range recs {
			raw = appendRecord(raw, &recs[i])
		}
		var err error
		if section, err = Compress(spec.Codec, raw); err != nil {
			return nil, fmt.Errorf("build batch: %w", err)
		}
		b = make([]byte, HeaderSize, HeaderSize+len(section))
		b = append(b, section...)
	}
	if len(b)-LogOverhead > math.MaxInt32 {
		return nil, fmt.Errorf("build batch: %d bytes exceed int32 batch length", len(b))
	}

	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(spec.BaseOffset))
	be.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(spec.PartitionLeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(spec.Attributes|int16(spec.Codec)))
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastOffsetDelta))
	be.PutUint64(b[offFirstTimestamp:], uint64(spec.FirstTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTS))
	be.PutUint64(b[offProducerID:], uint64(spec.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(spec.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(spec.BaseSequence))
	be.PutUint32(b[offNumRecords:], uint32(len(recs)))
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b, nil
}

// recordBodySize is the encoded size of r after its length prefix, or an
// error when a field does not fit Kafka's int32 lengths.
func recordBodySize(r *Record) (int, error) {
	n := 1 + varlongSize(r.TimestampDelta) + varintSize(r.OffsetDelta)
	kn, err := nullableSize(r.Key)
	if err != nil {
		return 0, fmt.Errorf("key: %w", err)
	}
	vn, err := nullableSize(r.Value)
	if err != nil {
		return 0, fmt.Errorf("value: %w", err)
	}
	n += kn + vn
	if len(r.Headers) > math.MaxInt32 {
		return 0, fmt.Errorf("%d headers exceed int32", len(r.Headers))
	}
	n += varintSize(int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		if len(h.Key) > math.MaxInt32 {
			return 0, fmt.Errorf("header %d key of %d bytes exceeds int32", i, len(h.Key))
		}
		hv, err := nullableSize(h.Value)
		if err != nil {
			return 0, fmt.Errorf("header %d value: %w", i, err)
		}
		n += varintSize(int32(len(h.Key))) + len(h.Key) + hv
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("record of %d bytes exceeds int32", n)
	}
	return n, nil
}

// nullableSize is the encoded size of b as varint-length-prefixed bytes (-1 for nil).
func nullableSize(b []byte) (int, error) {
	if b == nil {
		return 1, nil
	}
	if len(b) > math.MaxInt32 {
		return 0, fmt.Errorf("%d bytes exceed int32", len(b))
	}
	return varintSize(int32(len(b))) + len(b), nil
}

// appendRecord appends r, length prefix included. r's sizes must have been
// checked by recordBodySize.
func appendRecord(dst []byte, r *Record) []byte {
	body, _ := recordBodySize(r)
	dst = appendVarint(dst, int32(body))
	dst = append(dst, byte(r.Attributes))
	dst = appendVarlong(dst, r.TimestampDelta)
	dst = appendVarint(dst, r.OffsetDelta)
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	dst = appendVarint(dst, int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = appendVarint(dst, int32(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendNullable(dst, h.Value)
	}
	return dst
}

// appendNullable appends b with a varint length prefix, -1 for nil.
func appendNullable(dst, b []byte) []byte {
	if b == nil {
		return appendVarint(dst, -1)
	}
	dst = appendVarint(dst, int32(len(b)))
	return append(dst, b...)
}
