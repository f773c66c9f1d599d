package network

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn serves one client connection. A reader goroutine decodes frames into
// a bounded queue; serve handles them one at a time and writes responses, so
// responses leave in request order even when the client pipelines.
type conn struct {
	s    *Server
	nc   net.Conn
	addr string
	// listener is the listener the connection came in on.
	listener config.Listener
	// principal is who the client is: "User:<name>" after SASL
	// authentication (sasl_conn.go), AnonymousPrincipal otherwise.
	principal string
}

// queued is one decoded request, or the error that ended the read loop.
type queued struct {
	req protocol.Request
	err error
}

// maxPipelined bounds how many decoded requests wait per connection.
const maxPipelined = 32

func newConn(s *Server, nc net.Conn, l config.Listener) *conn {
	return &conn{s: s, nc: nc, addr: nc.RemoteAddr().String(), listener: l, principal: AnonymousPrincipal}
}

// stopReading makes the read loop end at the next frame boundary; requests
// already read are still answered.
func (c *conn) stopReading() {
	_ = c.nc.SetReadDeadline(time.Now())
}

// ShutdownWriteGrace bounds how long answers to in-flight requests may take
// to reach a client at shutdown, so a client that stopped reading cannot hold
// the broker up.
var ShutdownWriteGrace = 5 * time.Second

// stopForShutdown stops reading and gives pending writes ShutdownWriteGrace.
func (c *conn) stopForShutdown() {
	c.stopReading()
	_ = c.nc.SetWriteDeadline(time.Now().Add(ShutdownWriteGrace))
}

func (c *conn) serve() {
	defer c.nc.Close()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	w := bufio.NewWriterSize(c.nc, 64<<10)
	if c.listener.SecurityProtocol == config.ProtoSASLPlaintext && !c.authenticate(r, w) {
		return
	}
	q := make(chan queued, maxPipelined)
	done := make(chan struct{})
	go c.readLoop(r, q, done)
	defer func() {
		close(done)
		// Unblock and drain the reader so it exits.
		_ = c.nc.SetReadDeadline(time.Now())
		for range q {
		}
	}()

	var buf []byte
	for item := range q {
		if item.err != nil {
			c.logReadError(item.err)
			_ = w.Flush()
			return
		}
		if item.req.Body == nil && item.req.Header.APIKey != int16(kmsg.ApiVersions) {
			// Kafka closes the connection on an unsupported version of any API
			// but ApiVersions, which is answered so the client can retry lower.
			c.s.log.Warn("closing connection: unsupported api version", "client", c.addr,
				"api", kmsg.NameForKey(item.req.Header.APIKey), "version", item.req.Header.APIVersion)
			_ = w.Flush()
			return
		}
		ctx := &RequestContext{Header: item.req.Header, Listener: c.listener, Principal: c.principal, RemoteAddr: c.addr}
		resp := c.s.cfg.Handler.Handle(ctx, item.req)
		if resp != nil {
			buf = protocol.AppendResponse(buf[:0], item.req.Header.CorrelationID, resp)
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
		if ctx.CloseConn {
			_ = w.Flush()
			return
		}
		if len(q) == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
	_ = w.Flush()
}

func (c *conn) readLoop(r *bufio.Reader, q chan<- queued, done <-chan struct{}) {
	defer close(q)
	for {
		frame, err := protocol.ReadFrame(r, c.s.cfg.SocketRequestMaxBytes, nil)
		var item queued
		if err != nil {
			item.err = err
		} else {
			item.req, item.err = protocol.ParseRequest(frame)
		}
		select {
		case q <- item:
		case <-done:
			return
		}
		if item.err != nil {
			return
		}
	}
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
		return // peer closed or shutdown: nothing to say
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.s.log.Warn("closing connection: truncated frame", "client", c.addr, "err", err)
	default:
		c.s.log.Warn("closing connection: bad request", "client", c.addr, "err", err)
	}
}
