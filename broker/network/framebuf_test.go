package network

import (
	"testing"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestFrameClass(t *testing.T) {
	for _, c := range []struct{ n, want int }{
		{0, -1}, {1, -1}, {64<<10 - 1, 16}, {64 << 10, 16}, {64<<10 + 1, 17},
		{1 << 20, 20}, {1<<20 + 100, 21}, {16 << 20, 24}, {16<<20 + 1, -1},
	} {
		if got := frameClass(c.n); got != c.want {
			t.Errorf("frameClass(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	if b := frameBuf(1000); b != nil {
		t.Errorf("a small frame got a pooled buffer of %d", cap(b))
	}
	if b := frameBuf(1<<20 + 1); len(b) != 0 || cap(b) != 2<<20 {
		t.Errorf("frameBuf(1 MiB + 1): len %d cap %d", len(b), cap(b))
	}
}

// TestRecycleOnlyProduce: only a Produce frame's buffer goes back to the
// pool; another request's may still be referenced by what it decoded into.
func TestRecycleOnlyProduce(t *testing.T) {
	req := func(k kmsg.Key) protocol.Request {
		return protocol.Request{Header: protocol.RequestHeader{APIKey: int16(k)}}
	}
	for _, c := range []struct {
		name string
		req  protocol.Request
		buf  []byte
		want bool
	}{
		{"produce", req(kmsg.Produce), make([]byte, 10, 4<<20), true},
		{"join group", req(kmsg.JoinGroup), make([]byte, 10, 4<<20), false},
		{"produce, not a pool class", req(kmsg.Produce), make([]byte, 10, 3<<20), false},
		{"produce, small", req(kmsg.Produce), make([]byte, 10, 1024), false},
		{"no buffer", req(kmsg.Produce), nil, false},
	} {
		if got := recycleFrame(c.req, c.buf); got != c.want {
			t.Errorf("%s: recycled %v, want %v", c.name, got, c.want)
		}
	}
}
