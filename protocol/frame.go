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
// max bytes for the body, whatever the peer declares. buf is reused when large enough.
func ReadFrame(r io.Reader, max int32, buf []byte) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < minRequestSize {
		return nil, fmt.Errorf("%w: %d", ErrBadFrameSize, n)
	}
	if n > max {
		return nil, fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, n, max)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading %d-byte frame: %w", n, err)
	}
	return buf, nil
}
