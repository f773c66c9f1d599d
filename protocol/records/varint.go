package records

import (
	"errors"
	"fmt"
)

// Kafka encodes record fields as zig-zag varints: int32 values ("varint") in
// at most 5 bytes and int64 values ("varlong") in at most 10. Decoding here is
// strict: an encoding longer than that, or one whose last byte carries bits
// beyond the type's width, is an overflow error rather than silently truncated.

var (
	errVarintTruncated = errors.New("varint truncated")
	errVarintOverflow  = errors.New("varint overflows")
)

// readUvarint decodes an unsigned varint of at most maxBytes bytes whose last
// byte may be at most lastMax.
func readUvarint(b []byte, maxBytes int, lastMax byte) (uint64, int, error) {
	var x uint64
	var shift uint
	for i := 0; i < len(b); i++ {
		if i == maxBytes {
			return 0, 0, errVarintOverflow
		}
		c := b[i]
		if c < 0x80 {
			if i == maxBytes-1 && c > lastMax {
				return 0, 0, errVarintOverflow
			}
			return x | uint64(c)<<shift, i + 1, nil
		}
		x |= uint64(c&0x7f) << shift
		shift += 7
	}
	return 0, 0, errVarintTruncated
}

// readVarint decodes a zig-zag int32 varint, returning it and its length.
func readVarint(b []byte) (int32, int, error) {
	ux, n, err := readUvarint(b, 5, 0x0f)
	if err != nil {
		return 0, 0, err
	}
	u := uint32(ux)
	return int32(u>>1) ^ -int32(u&1), n, nil
}

// readVarlong decodes a zig-zag int64 varint, returning it and its length.
func readVarlong(b []byte) (int64, int, error) {
	ux, n, err := readUvarint(b, 10, 0x01)
	if err != nil {
		return 0, 0, err
	}
	return int64(ux>>1) ^ -int64(ux&1), n, nil
}

// readNullableBytes decodes a varint length (-1 for null) and that many bytes,
// returning them (aliasing b; nil for null) and the total length consumed.
func readNullableBytes(b []byte) ([]byte, int, error) {
	l, n, err := readVarint(b)
	if err != nil {
		return nil, 0, err
	}
	switch {
	case l == -1:
		return nil, n, nil
	case l < -1:
		return nil, 0, fmt.Errorf("negative length %d", l)
	case int(l) > len(b)-n:
		return nil, 0, fmt.Errorf("length %d exceeds the %d bytes left", l, len(b)-n)
	}
	return b[n : n+int(l) : n+int(l)], n + int(l), nil
}

// appendUvarint appends x as an unsigned varint.
func appendUvarint(dst []byte, x uint64) []byte {
	for x >= 0x80 {
		dst = append(dst, byte(x)|0x80)
		x >>= 7
	}
	return append(dst, byte(x))
}

// appendVarint appends v as a zig-zag varint.
func appendVarint(dst []byte, v int32) []byte {
	return appendUvarint(dst, uint64(uint32(v<<1)^uint32(v>>31)))
}

// appendVarlong appends v as a zig-zag varlong.
func appendVarlong(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// uvarintSize is the encoded length of x as an unsigned varint.
func uvarintSize(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// varintSize is the encoded length of v as a zig-zag varint.
func varintSize(v int32) int { return uvarintSize(uint64(uint32(v<<1) ^ uint32(v>>31))) }

// varlongSize is the encoded length of v as a zig-zag varlong.
func varlongSize(v int64) int { return uvarintSize(uint64(v<<1) ^ uint64(v>>63)) }
