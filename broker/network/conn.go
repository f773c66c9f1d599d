package network

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn serves one client connection. A reader goroutine decodes frames into
// a bounded queue; serve handles them one at a time and writes responses, so
// responses leave in request order even when the client pipelines.
//
// Memory: before reading a frame's body the reader reserves its declared
// size from the connection's read-ahead pool (readAheadBytes) and from the
// server's pool (queued.max.request.bytes); serve releases both once the
// response is written or the request dropped. A reader waiting on either
// pool does not read its socket, so the client's writes back up in TCP.
type conn struct {
	s    *Server
	nc   net.Conn
	addr string
	// listener is the listener the connection came in on.
	listener config.Listener
	// principal is who the client is: "User:<name>" after SASL
	// authentication (sasl_conn.go) or from the client certificate on an
	// SSL listener (tls.go), AnonymousPrincipal otherwise.
	principal string
	// tls is the listener's TLS configuration when nc is a *tls.Conn.
	tls *tlsSource
	// sess is the SASL session once authenticated (reauth.go).
	sess *saslSession

	// readAhead bounds the bytes of requests read and not yet answered on
	// this connection. Its Used() > 0 means a request is in flight, which
	// is not idleness.
	readAhead *protocol.MemoryPool
	// stopping is set before the read deadline is forced to now (shutdown
	// or the end of serve), so the reader never pushes it back.
	stopping atomic.Bool
	// stop is closed with stopping: readers waiting on a pool give up.
	stop     chan struct{}
	stopOnce sync.Once
}

// queued is one decoded request, or the error that ended the read loop.
// frame is what its frame holds in the connection's read-ahead pool and
// the server's pool, decoded what its decoded request holds in the
// server's decode pool, until answered.
type queued struct {
	req     protocol.Request
	err     error
	frame   int64
	decoded int64
	// buf is the frame's buffer, recycled after the answer when the
	// request is a Produce (framebuf.go).
	buf []byte
}

// maxPipelined bounds how many decoded requests wait per connection.
const maxPipelined = 32

// readAheadBytes bounds the bytes of requests read ahead per connection
// (non-strictly: one frame of any size is always admitted when none waits).
const readAheadBytes = 4 << 20

// errIdle ends a connection that stayed idle for connections.max.idle.ms.
var errIdle = errors.New("connection idle for connections.max.idle.ms")

func newConn(s *Server, nc net.Conn, l config.Listener) *conn {
	return &conn{s: s, nc: nc, addr: nc.RemoteAddr().String(), listener: l, principal: AnonymousPrincipal,
		readAhead: protocol.NewMemoryPool(readAheadBytes), stop: make(chan struct{})}
}

// stopReading makes the read loop end at the next frame boundary; requests
// already read are still answered.
func (c *conn) stopReading() {
	c.stopping.Store(true)
	c.stopOnce.Do(func() { close(c.stop) })
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

// release returns a request's reservations to the pools, and a Produce
// frame's buffer for reuse: it runs once the request is answered or dropped.
func (c *conn) release(item queued) {
	recycleFrame(item.req, item.buf)
	if item.frame > 0 {
		c.readAhead.Release(item.frame)
		c.s.pool.Release(item.frame)
	}
	if item.decoded > 0 {
		c.s.decodePool.Release(item.decoded)
	}
}

func (c *conn) serve() {
	defer c.nc.Close()
	if tc, ok := c.nc.(*tls.Conn); ok && !c.handshake(tc, c.tls) {
		return
	}
	r := bufio.NewReaderSize(idleReader{c}, 64<<10)
	w := bufio.NewWriterSize(c.nc, 64<<10)
	if c.listener.IsSASL() && !c.authenticate(r, w) {
		return
	}
	q := make(chan queued, maxPipelined)
	done := make(chan struct{})
	go c.readLoop(r, q, done)
	defer func() {
		close(done)
		// Unblock and drain the reader so it exits.
		c.stopReading()
		for item := range q {
			c.release(item)
		}
	}()

	var buf []byte
	for item := range q {
		if !c.answer(item, w, &buf, len(q) == 0) {
			c.release(item)
			_ = w.Flush()
			return
		}
		c.release(item)
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
	_ = w.Flush()
}

// answer handles one queued request and writes its response into w,
// flushing when flush is set. It reports whether the connection stays open.
func (c *conn) answer(item queued, w *bufio.Writer, buf *[]byte, flush bool) bool {
	if item.err != nil {
		if errors.Is(item.err, protocol.ErrUnknownAPIKey) {
			h := item.req.Header
			c.s.logs.unsupportedAPI(c.s.log, c.addr, h.ClientID, h.APIKey, h.APIVersion)
			return false
		}
		c.logReadError(item.err)
		return false
	}
	if item.req.Body == nil && item.req.Header.APIKey != int16(kmsg.ApiVersions) {
		// Kafka closes the connection on an unsupported version of any API
		// but ApiVersions, which is answered so the client can retry lower.
		h := item.req.Header
		c.s.logs.unsupportedAPI(c.s.log, c.addr, h.ClientID, h.APIKey, h.APIVersion)
		return false
	}
	if handled, open := c.saslRequest(item, w, buf); handled { // reauth.go
		return open
	}
	ctx := &RequestContext{Header: item.req.Header, Listener: c.listener, Principal: c.principal, RemoteAddr: c.addr, Size: int32(item.frame)}
	resp := c.handle(ctx, item.req)
	before, after := throttleDelays(ctx, resp)
	c.throttleWait(before)
	if spl, ok := resp.(*protocol.Spliced); ok {
		err := c.writeSpliced(w, buf, item.req.Header.CorrelationID, spl) // sendfile.go
		spl.Release()
		if err != nil {
			c.s.log.Debug("write response", "remote", c.addr, "err", err)
			return false
		}
	} else if resp != nil {
		*buf = protocol.AppendResponse((*buf)[:0], item.req.Header.CorrelationID, resp)
		if _, err := w.Write(*buf); err != nil {
			return false
		}
	}
	if ctx.CloseConn {
		return false
	}
	if after > 0 {
		if err := w.Flush(); err != nil {
			return false
		}
		c.throttleWait(after)
	}
	if flush {
		if err := w.Flush(); err != nil {
			return false
		}
	}
	return true
}

func (c *conn) readLoop(r *bufio.Reader, q chan<- queued, done <-chan struct{}) {
	defer close(q)
	for {
		item := c.readRequest(r)
		select {
		case q <- item:
		case <-done:
			c.release(item)
			return
		}
		if item.err != nil {
			return
		}
	}
}

// readRequest reads and decodes the next frame, reserving its declared size
// in the read-ahead and the server's pool first (waiting, without reading
// the socket, while they are full), then frame × decodeFactor in the decode
// pool while decoding, of which it keeps what the decoded request
// references. No holder of a decode reservation waits on a pool, so the
// wait for one cannot deadlock. On an error nothing stays reserved.
func (c *conn) readRequest(r *bufio.Reader) queued {
	if err := c.waitForFrame(r); err != nil {
		return queued{err: err}
	}
	n, err := protocol.ReadFrameSize(r, c.s.cfg.SocketRequestMaxBytes)
	if err != nil {
		return queued{err: err}
	}
	size := int64(n)
	if !c.readAhead.Reserve(size, c.stop) {
		return queued{err: net.ErrClosed}
	}
	if !c.s.pool.Reserve(size, c.stop) {
		c.readAhead.Release(size)
		return queued{err: net.ErrClosed}
	}
	item := queued{frame: size}
	frame, err := protocol.ReadFrameBody(r, n, frameBuf(int(n)))
	if err != nil {
		c.release(item)
		return queued{err: err}
	}
	decoding := size * decodeFactor
	if !c.s.decodePool.Reserve(decoding, c.stop) {
		c.release(item)
		return queued{err: net.ErrClosed}
	}
	item.req, item.err = protocol.ParseRequest(frame)
	if item.err != nil {
		c.s.decodePool.Release(decoding)
		c.release(item)
		if item.req.Header.ClientID == "" {
			item.req.Header.ClientID = clientIDOf(frame)
		}
		return queued{req: item.req, err: item.err}
	}
	item.buf = frame
	// Keep what the decoded request references; give back the rest.
	item.decoded = min(decodedBytes(item.req.Body), decoding)
	c.s.decodePool.Release(decoding - item.decoded)
	return item
}

// waitForFrame waits for the first byte of the next frame. With
// connections.max.idle.ms set it ends the connection (errIdle) when no byte
// arrives for that long while no request of this connection is in flight: a
// client waiting on a long JoinGroup or Fetch is not idle.
func (c *conn) waitForFrame(r *bufio.Reader) error {
	if c.s.limits.idle <= 0 {
		return nil
	}
	for {
		_, err := r.Peek(1)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || c.stopping.Load() {
			return err
		}
		if c.readAhead.Used() == 0 {
			return errIdle
		}
	}
}

// idleReader reads the connection with a read deadline of
// connections.max.idle.ms from each read, so a peer that stops sending in
// the middle of a frame is closed like an idle one and its reservation
// returns to the pool.
type idleReader struct{ c *conn }

func (ir idleReader) Read(p []byte) (int, error) {
	c := ir.c
	if idle := c.s.limits.idle; idle > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		if c.stopping.Load() { // stopReading ran: keep its deadline
			_ = c.nc.SetReadDeadline(time.Now())
		}
	}
	return c.nc.Read(p)
}

// clientIDOf reads the client id of a request header v1+ from a frame that
// did not decode, for the log line.
func clientIDOf(frame []byte) string {
	if len(frame) < 10 {
		return ""
	}
	n := int(int16(binary.BigEndian.Uint16(frame[8:])))
	if n <= 0 || 10+n > len(frame) {
		return ""
	}
	return string(frame[10 : 10+n])
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, errIdle):
		c.s.log.Debug("closing idle connection", "client", c.addr)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return // peer closed or shutdown: nothing to say
	case errors.Is(err, os.ErrDeadlineExceeded):
		if !c.stopping.Load() {
			c.s.log.Info("closing connection: no bytes for connections.max.idle.ms in the middle of a frame", "client", c.addr)
		}
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.s.log.Warn("closing connection: truncated frame", "client", c.addr, "err", err)
	default:
		c.s.log.Warn("closing connection: bad request", "client", c.addr, "err", err)
	}
}
