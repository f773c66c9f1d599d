package consumer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// This file holds the primitive encoding of Kafka's generated message
// classes, as far as the __consumer_offsets records of KIP-848 groups need
// it: record keys are non-flexible (int16-length strings), record values are
// flexible (unsigned-varint lengths plus one, trailing tagged fields).

// ErrCorruptRecord is wrapped by the errors Replay returns for a record it
// cannot decode.
var ErrCorruptRecord = errors.New("corrupt __consumer_offsets record")

// writer appends Kafka primitives to a byte slice.
type writer struct{ b []byte }

func (w *writer) int8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *writer) int16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *writer) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) uuid(v [16]byte) {
	w.b = append(w.b, v[:]...)
}
func (w *writer) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

// str writes a non-flexible string (int16 length).
func (w *writer) str(s string) {
	w.int16(int16(len(s)))
	w.b = append(w.b, s...)
}

// cstr writes a compact (flexible) string.
func (w *writer) cstr(s string) {
	w.uvarint(uint64(len(s)) + 1)
	w.b = append(w.b, s...)
}

// cnstr writes a compact nullable string.
func (w *writer) cnstr(s *string) {
	if s == nil {
		w.uvarint(0)
		return
	}
	w.cstr(*s)
}

// carray writes a compact array length.
func (w *writer) carray(n int) { w.uvarint(uint64(n) + 1) }

// noTags writes an empty tagged-field section.
func (w *writer) noTags() { w.uvarint(0) }

// reader decodes Kafka primitives. The first failure sticks; later reads
// return zero values, so decoders check err once at the end. A reader never
// panics on short or hostile input.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: truncated or invalid %s", ErrCorruptRecord, what)
	}
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(what)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) int8() int8 {
	v := r.take(1, "int8")
	if v == nil {
		return 0
	}
	return int8(v[0])
}

func (r *reader) int16() int16 {
	v := r.take(2, "int16")
	if v == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(v))
}

func (r *reader) int32() int32 {
	v := r.take(4, "int32")
	if v == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(v))
}

func (r *reader) uuid() (id [16]byte) {
	copy(id[:], r.take(16, "uuid"))
	return id
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string {
	n := r.int16()
	if n < 0 {
		r.fail("string length")
		return ""
	}
	return string(r.take(int(n), "string"))
}

// clen reads a compact length; -1 means null.
func (r *reader) clen(what string) int {
	v := r.uvarint()
	if r.err != nil {
		return -1
	}
	if v > math.MaxInt32 || (v > 0 && v-1 > uint64(len(r.b))) {
		r.fail(what)
		return -1
	}
	return int(v) - 1
}

func (r *reader) cstr() string {
	n := r.clen("string length")
	if n < 0 {
		r.fail("string")
		return ""
	}
	return string(r.take(n, "string"))
}

func (r *reader) cnstr() *string {
	n := r.clen("string length")
	if n < 0 || r.err != nil {
		return nil
	}
	s := string(r.take(n, "string"))
	return &s
}

// carray reads a compact array length; null arrays read as empty. Each
// element takes at least minSize bytes, which bounds the allocation a
// hostile length can cause.
func (r *reader) carray(minSize int) int {
	n := r.clen("array length")
	if n < 0 {
		return 0
	}
	if minSize > 0 && n > len(r.b)/minSize {
		r.fail("array length")
		return 0
	}
	return n
}

// skipTags skips a tagged-field section.
func (r *reader) skipTags() {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint() // tag
		size := r.uvarint()
		if size > uint64(len(r.b)) {
			r.fail("tagged field")
			return
		}
		r.take(int(size), "tagged field")
	}
}

// done reports the sticky error, or an error if bytes remain.
func (r *reader) done(what string) error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", what, r.err)
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %s has %d trailing bytes", ErrCorruptRecord, what, len(r.b))
	}
	return nil
}
