package records

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// assemble writes a v2 batch with h's fields around a raw records section,
// filling in batchLength, magic and a valid CRC; h.Length, h.Magic and h.CRC are ignored.
func assemble(h Header, section []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(section))
	b = append(b, section...)
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(h.Attributes))
	be.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[offFirstTimestamp:], uint64(h.FirstTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offNumRecords:], uint32(h.NumRecords))
	resum(b)
	return b
}

// resum recomputes the CRC of the batch at the start of b.
func resum(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

// section encodes recs as an uncompressed records section.
func section(recs ...Record) []byte {
	var b []byte
	for i := range recs {
		b = appendRecord(b, &recs[i])
	}
	return b
}

// sampleRecords returns n records with a mix of null, empty and filled keys,
// values and headers, offset deltas 0..n-1.
func sampleRecords(n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta = int64(i * 7)
		switch i % 4 {
		case 0: // null key and value
		case 1:
			r.Key = []byte{}
			r.Value = []byte(fmt.Sprintf("value-%d", i))
		case 2:
			r.Key = []byte(fmt.Sprintf("key-%d", i))
			r.Value = bytes.Repeat([]byte{byte(i)}, 300)
			r.Headers = []RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "", Value: nil}, {Key: "h3", Value: []byte{}}}
		case 3:
			r.Key = []byte("k")
			r.Headers = []RecordHeader{{Key: "only", Value: []byte("x")}}
		}
	}
	return recs
}

// mustBuild builds a batch or fails the test.
func mustBuild(t testing.TB, spec BatchSpec, recs []Record) []byte {
	t.Helper()
	b, err := Build(spec, recs)
	if err != nil {
		t.Fatalf("Build(%+v): %v", spec, err)
	}
	return b
}

// producedSpec is a typical idempotent producer's batch header.
func producedSpec(c Codec) BatchSpec {
	return BatchSpec{
		PartitionLeaderEpoch: -1,
		FirstTimestamp:       1_700_000_000_000,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
		Codec:                c,
	}
}

// recordsEqual reports whether a and b hold the same records, distinguishing
// nil from empty keys, values and header values.
func recordsEqual(a, b []Record) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d records, want %d", len(a), len(b))
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Attributes != y.Attributes || x.TimestampDelta != y.TimestampDelta || x.OffsetDelta != y.OffsetDelta {
			return fmt.Errorf("record %d: %+v, want %+v", i, *x, *y)
		}
		if err := bytesEqual(x.Key, y.Key); err != nil {
			return fmt.Errorf("record %d key: %w", i, err)
		}
		if err := bytesEqual(x.Value, y.Value); err != nil {
			return fmt.Errorf("record %d value: %w", i, err)
		}
		if len(x.Headers) != len(y.Headers) {
			return fmt.Errorf("record %d: %d headers, want %d", i, len(x.Headers), len(y.Headers))
		}
		for j := range x.Headers {
			if x.Headers[j].Key != y.Headers[j].Key {
				return fmt.Errorf("record %d header %d key %q, want %q", i, j, x.Headers[j].Key, y.Headers[j].Key)
			}
			if err := bytesEqual(x.Headers[j].Value, y.Headers[j].Value); err != nil {
				return fmt.Errorf("record %d header %d value: %w", i, j, err)
			}
		}
	}
	return nil
}

func bytesEqual(a, b []byte) error {
	if (a == nil) != (b == nil) || !bytes.Equal(a, b) {
		return fmt.Errorf("%q (nil %v), want %q (nil %v)", a, a == nil, b, b == nil)
	}
	return nil
}
