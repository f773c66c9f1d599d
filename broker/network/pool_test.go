package network

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestQueuedMaxRequestBytes: while requests read and not yet answered hold
// queued.max.request.bytes, no connection reads another request; once the
// first is answered the waiting one is read and answered, and the pool
// returns to zero.
func TestQueuedMaxRequestBytes(t *testing.T) {
	lim := unlimited()
	lim.QueuedMaxRequestBytes = 64 << 10
	release := make(chan struct{})
	var handled atomic.Int32
	s, _ := startLimited(t, HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
		handled.Add(1)
		if rc.Header.ClientID == "slow" {
			<-release
		}
		return req.Body.ResponseKind()
	}), lim)

	// A 100 KiB request: larger than the pool, admitted because it is empty.
	big := kmsg.NewPtrMetadataRequest()
	big.Version = 1
	big.Topics = bigTopics(100 << 10)
	a := dial(t, s)
	bigFrame := slowFrame(big, 1)
	if _, err := a.Write(bigFrame); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return handled.Load() == 1 })
	if got, want := s.QueuedRequestBytes(), int64(len(bigFrame)-4); got != want {
		t.Fatalf("pool holds %d bytes, want the frame's %d", got, want)
	}
	// Its decoded request: about as big (the topic names), not × decodeFactor.
	if got, size := s.DecodedRequestBytes(), int64(len(bigFrame)-4); got < size/2 || got > 2*size {
		t.Fatalf("decode pool holds %d bytes for a frame of %d", got, size)
	}

	b := dial(t, s)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	if _, err := b.Write(frame(md, 2)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // give a wrong implementation time to read it
	if n := handled.Load(); n != 1 {
		t.Fatalf("a second request was read while the pool was full (%d handled)", n)
	}
	close(release)
	for _, nc := range []interface{ Read([]byte) (int, error) }{a, b} {
		if _, err := protocol.ReadFrame(nc, 1<<20, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return s.QueuedRequestBytes() == 0 && s.DecodedRequestBytes() == 0 })
}

// TestReadAheadBoundedByBytes: a client pipelining large requests to a
// slow handler makes its connection read ahead at most readAheadBytes (plus
// one frame), not maxPipelined frames.
func TestReadAheadBoundedByBytes(t *testing.T) {
	release := make(chan struct{})
	s, _ := startLimited(t, HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
		<-release
		return req.Body.ResponseKind()
	}), unlimited())
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	md.Topics = bigTopics(1 << 20)
	f := frame(md, 1)
	nc := dial(t, s)
	go func() {
		for i := 0; i < 20; i++ {
			if _, err := nc.Write(f); err != nil {
				return
			}
		}
	}()
	waitFor(t, func() bool { return readAhead(s) >= readAheadBytes })
	time.Sleep(100 * time.Millisecond) // a wrong implementation would read on
	if got, limit := readAhead(s), int64(readAheadBytes+len(f)); got > limit {
		t.Fatalf("connection read ahead %d bytes, want at most %d", got, limit)
	}
	close(release)
	for i := 0; i < 20; i++ {
		if _, err := protocol.ReadFrame(nc, 1<<20, nil); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
	}
}

// bigTopics are Metadata request topics of about n bytes in all (a topic
// name is at most 32 KiB on the wire).
func bigTopics(n int) []kmsg.MetadataRequestTopic {
	var out []kmsg.MetadataRequestTopic
	for ; n > 0; n -= 30000 {
		name := string(make([]byte, 30000))
		out = append(out, kmsg.MetadataRequestTopic{Topic: &name})
	}
	return out
}

// readAhead is the bytes read ahead on all of s's connections.
func readAhead(s *Server) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for c := range s.conns {
		n += c.readAhead.Used()
	}
	return n
}
