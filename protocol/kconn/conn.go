// Package kconn is the client side of Kafka's framing, for the requests
// brokers send each other: replica fetches, the controller's requests,
// controlled shutdown. A Conn carries one request at a time (request header
// v1, v2 for flexible versions), over TCP, TLS or either with SASL
// (SaslHandshake v1 then SaslAuthenticate, with franz-go's mechanisms).
//
// Invariant: a Conn whose round trip failed is closed; the caller dials a
// new one (a response stream that lost a frame cannot be resynchronised).
package kconn

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Options say how to connect and authenticate.
type Options struct {
	// ClientID is the client id of every request header.
	ClientID string
	// TLS, when set, wraps the connection (SSL and SASL_SSL listeners).
	// Without ServerName the host of the dialed address is verified.
	TLS *tls.Config
	// SASL, when set, authenticates the connection before it is used
	// (SASL_PLAINTEXT and SASL_SSL listeners).
	SASL sasl.Mechanism
	// DialTimeout bounds the TCP connect, TLS handshake and SASL
	// exchange together (default 10s).
	DialTimeout time.Duration
	// MaxResponse bounds a response's size prefix (default 256 MiB); a
	// larger one means a corrupt stream.
	MaxResponse uint32
}

// Conn is one client connection. Not safe for concurrent round trips.
type Conn struct {
	conn    net.Conn
	r       *bufio.Reader
	opts    Options
	corr    int32
	unwatch func() bool
}

// Dial connects to addr ("host:port"), completes TLS and SASL when opts ask
// for them, and returns the ready connection. The connection closes when
// ctx ends, which unblocks a round trip in flight.
func Dial(ctx context.Context, addr string, opts Options) (*Conn, error) {
	return dial(ctx, ctx, addr, opts)
}

// dial is Dial with the connection's lifetime apart from the dial's: ctx
// bounds connecting and authenticating, and the connection closes when
// life ends.
func dial(ctx, life context.Context, addr string, opts Options) (*Conn, error) {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	deadline := time.Now().Add(opts.DialTimeout)
	d := net.Dialer{Deadline: deadline}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	nc := raw
	if opts.TLS != nil {
		cfg := opts.TLS.Clone()
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				raw.Close()
				return nil, err
			}
			cfg.ServerName = host
		}
		tc := tls.Client(raw, cfg)
		hctx, cancel := context.WithDeadline(ctx, deadline)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			raw.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := New(nc, opts)
	c.unwatch = context.AfterFunc(life, func() { nc.Close() })
	if opts.SASL != nil {
		if err := c.authenticate(ctx, addr, time.Until(deadline)); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// New wraps a connection that is already established (and authenticated,
// if the listener wants it).
func New(conn net.Conn, opts Options) *Conn {
	if opts.MaxResponse == 0 {
		opts.MaxResponse = 256 << 20
	}
	return &Conn{conn: conn, r: bufio.NewReaderSize(conn, 64<<10), opts: opts}
}

// Close closes the connection.
func (c *Conn) Close() error {
	if c.unwatch != nil {
		c.unwatch()
	}
	return c.conn.Close()
}

// RoundTrip sends req and decodes its answer, within timeout.
func (c *Conn) RoundTrip(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	return c.roundTrip(req, timeout, nil)
}

// RoundTripReuse is RoundTrip reading the answer into *buf, which it grows
// as needed and leaves there for the caller's next call: the answer's byte
// fields (a Fetch answer's record batches) alias *buf, so they are valid
// only until buf is used again. A follower fetching in a loop allocates
// its answers once instead of once per fetch.
func (c *Conn) RoundTripReuse(req kmsg.Request, timeout time.Duration, buf *[]byte) (kmsg.Response, error) {
	return c.roundTrip(req, timeout, buf)
}

// roundTrip is RoundTrip, reading the answer into *reuse if reuse is set.
func (c *Conn) roundTrip(req kmsg.Request, timeout time.Duration, reuse *[]byte) (kmsg.Response, error) {
	name := kmsg.NameForKey(req.Key())
	if err := c.conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	c.corr++
	buf := kmsg.NewRequestFormatter(kmsg.FormatterClientID(c.opts.ClientID)).AppendRequest(nil, req, c.corr)
	if n := len(req.AppendTo(nil)); n <= len(buf) {
		// The body ends the frame; StopReplica v4 in Kafka's field order.
		protocol.StopReplicaToWire(req.Key(), req.GetVersion(), buf[len(buf)-n:])
	}
	if _, err := c.conn.Write(buf); err != nil {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.r, size[:]); err != nil {
		return nil, fmt.Errorf("reading %s response: %w", name, err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > c.opts.MaxResponse {
		return nil, fmt.Errorf("%s response size %d out of range", name, n)
	}
	var body []byte
	switch {
	case reuse == nil:
		body = make([]byte, n)
	case cap(*reuse) >= int(n):
		body = (*reuse)[:n]
	default:
		body = make([]byte, n)
		*reuse = body
	}
	if _, err := io.ReadFull(c.r, body); err != nil {
		return nil, fmt.Errorf("reading %s response: %w", name, err)
	}
	b := kbin.Reader{Src: body}
	if got := b.Int32(); got != c.corr {
		return nil, fmt.Errorf("%s response has correlation id %d, want %d", name, got, c.corr)
	}
	// The response header is v1 (tagged fields) for flexible versions,
	// except ApiVersions' (always v0, so that any client can read it).
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		kmsg.SkipTags(&b)
	}
	if !b.Ok() {
		return nil, fmt.Errorf("%s response header truncated", name)
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(b.Src); err != nil {
		return nil, fmt.Errorf("decoding %s response: %w", name, err)
	}
	return resp, nil
}

// ErrAuthentication wraps every SASL failure.
var ErrAuthentication = errors.New("SASL authentication failed")

// authenticate runs SaslHandshake v1 and the SaslAuthenticate exchange of
// opts.SASL.
func (c *Conn) authenticate(ctx context.Context, addr string, timeout time.Duration) error {
	mech := c.opts.SASL
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech.Name()
	r, err := c.RoundTrip(hs, timeout)
	if err != nil {
		return fmt.Errorf("%w with %s: %w", ErrAuthentication, addr, err)
	}
	if code := r.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("%w with %s: SaslHandshake %s: %w (the listener offers %v)", ErrAuthentication, addr, mech.Name(),
			kerr.ErrorForCode(code), r.(*kmsg.SASLHandshakeResponse).SupportedMechanisms)
	}
	host, _, _ := net.SplitHostPort(addr)
	session, msg, err := mech.Authenticate(ctx, host)
	if err != nil {
		return fmt.Errorf("%w with %s: %w", ErrAuthentication, addr, err)
	}
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.Version, auth.SASLAuthBytes = 1, msg
		r, err := c.RoundTrip(auth, timeout)
		if err != nil {
			return fmt.Errorf("%w with %s: %w", ErrAuthentication, addr, err)
		}
		ar := r.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			detail := ""
			if ar.ErrorMessage != nil {
				detail = ": " + *ar.ErrorMessage
			}
			return fmt.Errorf("%w with %s: %w%s", ErrAuthentication, addr, kerr.ErrorForCode(ar.ErrorCode), detail)
		}
		done, next, err := session.Challenge(ar.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("%w with %s: %w", ErrAuthentication, addr, err)
		}
		if done {
			return nil
		}
		msg = next
	}
}
