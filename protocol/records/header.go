// Package records reads, validates and builds Kafka record batches (magic v2),
// the unit in which kbroker stores and serves data.
//
// A batch on the wire and on disk is:
//
//	baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
//	crc uint32 | attributes int16 | lastOffsetDelta int32 | firstTimestamp int64 |
//	maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
//	recordCount int32 | records...
//
// The CRC-32C covers everything from attributes to the end of the batch, so the
// broker may rewrite baseOffset and partitionLeaderEpoch without recomputing it.
package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of a v2 batch header, up to and including recordCount.
const HeaderSize = 61

// LogOverhead is the part of a batch not counted by batchLength: baseOffset and batchLength.
const LogOverhead = 12

// Byte offsets of header fields.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57
)

// Attribute bits.
const (
	attrCompressionMask = 0x07
	attrTimestampType   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Codec is the compression codec in a batch's attributes.
type Codec int8

// Codecs as numbered by Kafka.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// String names the codec as Kafka's compression.type setting does.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrTruncated reports fewer bytes than a batch header or its batchLength claims.
var ErrTruncated = errors.New("record batch truncated")

// ErrUnsupportedMagic reports a batch in a message format other than v2.
var ErrUnsupportedMagic = errors.New("unsupported record batch magic")

// CorruptError reports a batch whose bytes are inconsistent: bad CRC, bad length, bad records.
type CorruptError struct{ Reason string }

// Error describes the inconsistency.
func (e *CorruptError) Error() string { return "corrupt record batch: " + e.Reason }

func corrupt(format string, args ...any) error {
	return &CorruptError{Reason: fmt.Sprintf(format, args...)}
}

// IsCorrupt reports whether err is or wraps a *CorruptError.
func IsCorrupt(err error) bool {
	var c *CorruptError
	return errors.As(err, &c)
}

// Header is the decoded fixed part of a v2 record batch.
type Header struct {
	BaseOffset           int64
	Length               int32 // bytes after the Length field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// TotalSize is the size of the whole batch in bytes, header included.
func (h Header) TotalSize() int { return int(h.Length) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset following the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the batch's codec.
func (h Header) Compression() Codec { return Codec(h.Attributes & attrCompressionMask) }

// LogAppendTime reports whether the batch's timestamps are broker-assigned.
func (h Header) LogAppendTime() bool { return h.Attributes&attrTimestampType != 0 }

// IsTransactional reports whether the batch belongs to a transaction.
func (h Header) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports whether the batch holds a control record (commit/abort marker).
func (h Header) IsControl() bool { return h.Attributes&attrControl != 0 }

// ParseHeader decodes the first HeaderSize bytes of b. It checks that the
// magic is 2 and that batchLength is plausible; it does not check the CRC or
// that b holds the whole batch.
func ParseHeader(b []byte) (Header, error) {
	h, err := parseFixed(b)
	if err != nil {
		return Header{}, err
	}
	if h.Length < HeaderSize-LogOverhead {
		return Header{}, corrupt("batch length %d below header size", h.Length)
	}
	if h.LastOffsetDelta < 0 {
		return Header{}, corrupt("negative last offset delta %d", h.LastOffsetDelta)
	}
	if h.NumRecords < 0 {
		return Header{}, corrupt("negative record count %d", h.NumRecords)
	}
	return h, nil
}

// parseFixed decodes the fixed header fields of b, checking only that b is
// long enough and that the magic is 2.
func parseFixed(b []byte) (Header, error) {
	if len(b) < offMagic+1 {
		return Header{}, ErrTruncated
	}
	if m := int8(b[offMagic]); m != 2 {
		return Header{}, fmt.Errorf("%w: %d", ErrUnsupportedMagic, m)
	}
	if len(b) < HeaderSize {
		return Header{}, ErrTruncated
	}
	return parseFields(b), nil
}

// parseFields decodes the fixed header fields of b, which holds at least
// HeaderSize bytes, checking nothing.
func parseFields(b []byte) Header {
	return Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:               int32(binary.BigEndian.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:       int64(binary.BigEndian.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[offNumRecords:])),
	}
}

// Check parses the batch at the start of b, verifies that b holds all of it
// and that its CRC matches, and returns its header. Bytes after the batch are ignored.
func Check(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if len(b) < h.TotalSize() {
		return h, ErrTruncated
	}
	if got := crc32.Checksum(b[offAttributes:h.TotalSize()], castagnoli); got != h.CRC {
		return h, corrupt("crc mismatch: header %08x, computed %08x", h.CRC, got)
	}
	return h, nil
}

// SetBaseOffset writes off into the batch header at the start of b, which
// must hold at least HeaderSize bytes (a Check-ed batch does).
func SetBaseOffset(b []byte, off int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
}

// SetPartitionLeaderEpoch writes epoch into the batch header at the start of
// b, which must hold at least HeaderSize bytes (a Check-ed batch does).
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetMaxTimestampLogAppendTime marks the batch at the start of b as using
// LogAppendTime with the given time and recomputes its CRC. b must hold the
// whole batch (a Check-ed batch does); otherwise b is left unchanged.
func SetMaxTimestampLogAppendTime(b []byte, ts int64) {
	if len(b) < HeaderSize {
		return
	}
	if size := int(int32(binary.BigEndian.Uint32(b[offLength:]))) + LogOverhead; size < HeaderSize || size > len(b) {
		return
	}
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | attrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	size := int(int32(binary.BigEndian.Uint32(b[offLength:]))) + LogOverhead
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:size], castagnoli))
}

// Split returns the first batch in b and the bytes after it, after Check-ing it.
func Split(b []byte) (batch []byte, h Header, rest []byte, err error) {
	h, err = Check(b)
	if err != nil {
		return nil, h, b, err
	}
	n := h.TotalSize()
	return b[:n], h, b[n:], nil
}
