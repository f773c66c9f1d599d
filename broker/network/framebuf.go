package network

import (
	"math/bits"
	"sync"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce frames are the large ones (a batch of up to max.message.bytes,
// often 1 MiB) and arrive back to back, so their buffers are recycled:
// allocating and zeroing one per request was a tenth of the broker's CPU
// under a produce load, and the garbage paced the collector. Only Produce
// frames: their decoded request references the frame (the records) only
// until the records are appended, which happens before the answer, while
// other requests may hand frame bytes to state that outlives them (group
// member metadata, for one).
//
// Buffers come in power-of-two classes from 64 KiB to 16 MiB; smaller and
// larger frames are allocated as before.
const (
	minPooledFrame = 16 // log2 64 KiB
	maxPooledFrame = 24 // log2 16 MiB
)

var frameBufs [maxPooledFrame + 1]sync.Pool

// frameClass is the class of a frame of n bytes, or -1 if it is not pooled.
func frameClass(n int) int {
	if n <= 0 {
		return -1
	}
	c := bits.Len(uint(n - 1))
	if c < minPooledFrame || c > maxPooledFrame {
		return -1
	}
	return c
}

// frameBuf returns a buffer with capacity for n bytes: a recycled one when
// n is in a pooled class, else nil (ReadFrameBody allocates).
func frameBuf(n int) []byte {
	c := frameClass(n)
	if c < 0 {
		return nil
	}
	if b, ok := frameBufs[c].Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 1<<c)
}

// recycleFrame takes back the buffer of a request once it is answered, if
// the request is a Produce (see above) and the buffer one of the pool's
// classes; others are left to the collector. It reports whether it took it.
func recycleFrame(req protocol.Request, buf []byte) bool {
	if buf == nil || req.Header.APIKey != int16(kmsg.Produce) {
		return false
	}
	c := frameClass(cap(buf))
	if c < 0 || cap(buf) != 1<<c {
		return false
	}
	b := buf[:0]
	frameBufs[c].Put(&b)
	return true
}
