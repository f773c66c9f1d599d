package network

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestThrottleMutes: a throttled response of a KIP-219 version is written
// at once and the connection answers nothing more until the throttle has
// passed; a response of an older version is itself held back.
func TestThrottleMutes(t *testing.T) {
	const throttle = 400 * time.Millisecond
	s := startServer(t, HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
		resp := req.Body.ResponseKind()
		if rc.Header.CorrelationID == 1 {
			rc.ThrottleMs = int32(throttle / time.Millisecond)
			resp.(kmsg.SetThrottleResponse).SetThrottle(rc.ThrottleMs)
		}
		return resp
	}))
	for _, c := range []struct {
		version    int16
		firstLate  bool // the throttled response itself waits (pre-KIP-219)
		secondLate bool // the next response waits (muted)
		name       string
	}{
		{version: 6, secondLate: true, name: "Metadata v6 (KIP-219)"},
		{version: 5, firstLate: true, secondLate: true, name: "Metadata v5"},
	} {
		nc, err := net.Dial("tcp", s.Addrs()[0].String())
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		md := kmsg.NewPtrMetadataRequest()
		md.Version = c.version
		start := time.Now()
		if _, err := nc.Write(append(frame(md, 1), frame(md, 2)...)); err != nil {
			t.Fatal(err)
		}
		var at [2]time.Duration
		for i := range at {
			in, err := protocol.ReadFrame(nc, 1<<20, nil)
			if err != nil || int32(binary.BigEndian.Uint32(in)) != int32(i+1) {
				t.Fatalf("%s: response %d: %v", c.name, i+1, err)
			}
			at[i] = time.Since(start)
		}
		nc.Close()
		if late := at[0] >= throttle; late != c.firstLate {
			t.Errorf("%s: throttled response after %v", c.name, at[0])
		}
		if late := at[1] >= throttle; late != c.secondLate {
			t.Errorf("%s: next response after %v", c.name, at[1])
		}
	}
}
