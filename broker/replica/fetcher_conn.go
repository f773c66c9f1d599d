package replica

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxFetchResponse bounds an answer's size prefix; a larger one means a
// corrupt stream (the fetch asks for at most replica.fetch.response.max.bytes
// of records, plus the first batch whole).
const maxFetchResponse = 256 << 20

// leaderConn is a replica fetcher's connection to its leader: Kafka framing,
// one request at a time (request header v1, v2 for flexible versions).
type leaderConn struct {
	conn     net.Conn
	r        *bufio.Reader
	clientID string
	corr     int32
	// unwatch stops closing the connection when the fetcher's context ends.
	unwatch func() bool
}

// dialLeader connects to addr; the connection closes when ctx ends, which
// unblocks a request in flight.
func dialLeader(ctx context.Context, addr, clientID string) (*leaderConn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	lc := &leaderConn{conn: c, r: bufio.NewReaderSize(c, 64<<10), clientID: clientID}
	lc.unwatch = context.AfterFunc(ctx, func() { c.Close() })
	return lc, nil
}

func (lc *leaderConn) close() {
	lc.unwatch()
	lc.conn.Close()
}

// roundTrip sends req and decodes its answer, within timeout.
func (lc *leaderConn) roundTrip(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	if err := lc.conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	lc.corr++
	buf := kmsg.NewRequestFormatter(kmsg.FormatterClientID(lc.clientID)).AppendRequest(nil, req, lc.corr)
	if _, err := lc.conn.Write(buf); err != nil {
		return nil, fmt.Errorf("writing %s: %w", kmsg.NameForKey(req.Key()), err)
	}
	var size [4]byte
	if _, err := io.ReadFull(lc.r, size[:]); err != nil {
		return nil, fmt.Errorf("reading %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > maxFetchResponse {
		return nil, fmt.Errorf("%s response size %d out of range", kmsg.NameForKey(req.Key()), n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(lc.r, body); err != nil {
		return nil, fmt.Errorf("reading %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	b := kbin.Reader{Src: body}
	if got := b.Int32(); got != lc.corr {
		return nil, fmt.Errorf("%s response has correlation id %d, want %d", kmsg.NameForKey(req.Key()), got, lc.corr)
	}
	if req.IsFlexible() {
		kmsg.SkipTags(&b)
	}
	if !b.Ok() {
		return nil, fmt.Errorf("%s response header truncated", kmsg.NameForKey(req.Key()))
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(b.Src); err != nil {
		return nil, fmt.Errorf("decoding %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}
