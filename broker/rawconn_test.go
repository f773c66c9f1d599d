package broker

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testConn speaks the wire protocol at exact versions, which a client
// library would negotiate away.
type testConn struct {
	nc   net.Conn
	corr int32
}

func rawConn(t *testing.T, b *Broker) *testConn {
	t.Helper()
	nc, err := net.Dial("tcp", b.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &testConn{nc: nc}
}

// roundTrip sends req at its Version and decodes the answer into resp.
func (c *testConn) roundTrip(req kmsg.Request, resp kmsg.Response) error {
	c.corr++
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(c.corr))
	body = binary.BigEndian.AppendUint16(body, 0xffff) // null client id
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	_ = c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(append(frame, body...)); err != nil {
		return err
	}
	in, err := protocol.ReadFrame(c.nc, 100<<20, nil)
	if err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(in)); got != c.corr {
		return fmt.Errorf("correlation id %d, want %d", got, c.corr)
	}
	in = in[4:]
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		in = in[1:] // empty tagged fields of response header v1
	}
	return resp.ReadFrom(in)
}
