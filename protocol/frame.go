// Package protocol owns the Kafka wire framing: 4-byte size-prefixed frames,
// request and response headers (v0–v2 with tagged fields), the table of API
// keys and versions the broker supports, and decoding request bodies into kmsg
// types. It knows nothing about storage or the broker's state.
package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ErrFrameTooLarge reports a frame whose declared size exceeds the limit
// (socket.request.max.bytes). Kafka closes the connection in this case.
var ErrFrameTooLarge = errors.New("frame exceeds socket.request.max.bytes")

// ErrBadFrameSize reports a negative or too-small declared frame size.
var ErrBadFrameSize = errors.New("invalid frame size")

// minRequestSize is the smallest possible request: key, version, correlation id, client id length.
const minRequestSize = 2 + 2 + 4 + 2

// ReadFrame reads one size-prefixed frame from r. It never allocates more than
// max bytes for the body, whatever the peer declares, and its buffer grows only
// as the bytes arrive (ReadFrameBody). buf is reused when large enough.
func ReadFrame(r io.Reader, max int32, buf []byte) ([]byte, error) {
	n, err := ReadFrameSize(r, max)
	if err != nil {
		return nil, err
	}
	return ReadFrameBody(r, n, buf)
}

// ReadFrameSize reads a frame's 4-byte size prefix and checks it against
// minRequestSize and max (socket.request.max.bytes).
func ReadFrameSize(r io.Reader, max int32) (int32, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return 0, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < minRequestSize {
		return 0, fmt.Errorf("%w: %d", ErrBadFrameSize, n)
	}
	if n > max {
		return 0, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, max)
	}
	return n, nil
}

// frameChunk is the first allocation for a frame body larger than the
// caller's buffer; the buffer then doubles as bytes arrive.
const frameChunk = 32 << 10

// ReadFrameBody reads a frame body of n bytes. Memory follows the bytes that
// actually arrive, never the declared size: a peer that declares 100 MiB and
// sends 8 bytes costs at most frameChunk. Invariant: the buffer's capacity is
// at most max(cap(buf), frameChunk, 2 × bytes received so far).
func ReadFrameBody(r io.Reader, n int32, buf []byte) ([]byte, error) {
	size := int(n)
	if cap(buf) >= size {
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, frameReadErr(size, err)
		}
		return buf, nil
	}
	buf = make([]byte, 0, min(size, frameChunk))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(size, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadAtLeast(r, buf[len(buf):cap(buf)], 1)
		buf = buf[:len(buf)+m]
		if err != nil && len(buf) < size {
			return nil, frameReadErr(size, err)
		}
	}
	return buf, nil
}

func frameReadErr(size int, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading %d-byte frame: %w", size, err)
}
