package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadFrameBodyMemoryFollowsArrivedBytes is the hostile-client case: a
// frame that declares 100 MiB and then sends 8 bytes must not cost 100 MiB.
func TestReadFrameBodyMemoryFollowsArrivedBytes(t *testing.T) {
	in := binary.BigEndian.AppendUint32(nil, 100<<20)
	in = append(in, 0, 0x12, 0, 3, 0, 0, 0, 1)
	var allocated int
	// Measure the buffer directly: the body reader must stop at one chunk.
	r := &countingReader{r: bytes.NewReader(in[4:])}
	_, err := ReadFrameBody(r, 100<<20, nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
	allocated = r.maxBuf
	if allocated > frameChunk {
		t.Fatalf("buffer grew to %d bytes for 8 bytes received (declared 100 MiB)", allocated)
	}
}

// countingReader records the largest buffer it was asked to fill.
type countingReader struct {
	r      io.Reader
	maxBuf int
}

func (c *countingReader) Read(p []byte) (int, error) {
	if cap(p) > c.maxBuf {
		c.maxBuf = cap(p)
	}
	return c.r.Read(p)
}

// TestReadFrameBodyGrows reads frames of many sizes one byte at a time and
// checks every byte arrives, whether or not the caller's buffer is reused.
func TestReadFrameBodyGrows(t *testing.T) {
	for _, n := range []int{minRequestSize, frameChunk - 1, frameChunk, frameChunk + 1, 5*frameChunk + 3, 1 << 20} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7)
		}
		for _, reuse := range []bool{false, true} {
			var buf []byte
			if reuse {
				buf = make([]byte, 0, n)
			}
			got, err := ReadFrame(iotest.HalfReader(bytes.NewReader(sized(body))), int32(n), buf)
			if err != nil {
				t.Fatalf("n=%d reuse=%v: %v", n, reuse, err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("n=%d reuse=%v: body differs", n, reuse)
			}
			if cap(got) > max(2*n, frameChunk) {
				t.Fatalf("n=%d: capacity %d", n, cap(got))
			}
		}
	}
}
