// Package network serves Kafka connections: listeners, connections, framing
// and the frame size limit, TLS on SSL and SASL_SSL listeners (tls.go),
// SASL authentication before the first request,
// and request queueing with responses in request order. It knows no API: a
// Handler answers each decoded request, given a RequestContext.
package network

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network/sasl"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Handler answers requests. A nil response means none is sent (acks=0).
// Handle is called from one goroutine per connection, so it must be safe
// for concurrent use across connections.
type Handler interface {
	Handle(rc *RequestContext, req protocol.Request) kmsg.Response
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(rc *RequestContext, req protocol.Request) kmsg.Response

// Handle calls f.
func (f HandlerFunc) Handle(rc *RequestContext, req protocol.Request) kmsg.Response {
	return f(rc, req)
}

// RequestContext is what a handler knows about a request beyond its body:
// a small value, not the connection.
type RequestContext struct {
	// Header is the request header: API key and version, correlation id, client id.
	Header protocol.RequestHeader
	// Listener is the listener the connection came in on.
	Listener config.Listener
	// Principal is who the client is: "User:<name>" after SASL
	// authentication, AnonymousPrincipal otherwise.
	Principal string
	// RemoteAddr is the client's host:port.
	RemoteAddr string
	// CloseConn is set by a handler that cannot answer: the connection is
	// closed after this request, as Kafka does on an unanswerable request.
	CloseConn bool
	// Size is the request's frame size in bytes (the produce quota counts it).
	Size int32
	// ThrottleMs, set by a handler (the quota handler), throttles the
	// client: the connection is muted that long after the response is
	// written (KIP-219), or the response waits that long first when its
	// version predates KIP-219 (throttle.go).
	ThrottleMs int32
}

// Config is what the server needs from the broker.
type Config struct {
	Listeners []config.Listener
	// SocketRequestMaxBytes is socket.request.max.bytes: a larger frame closes the connection.
	SocketRequestMaxBytes int32
	Logger                *slog.Logger
	Handler               Handler
	// NewAuthenticator starts the SASL exchange of a new connection on a
	// SASL_PLAINTEXT or SASL_SSL listener.
	NewAuthenticator func(l config.Listener) *sasl.Authenticator
	// Limits are queued.max.request.bytes, the connection limits and
	// connections.max.idle.ms (limits.go); nil means none.
	Limits *config.NetworkLimits
}

// Server owns the listeners and connections. Start it with Start, stop it
// with Close.
type Server struct {
	cfg Config
	log *slog.Logger
	// closing is closed when Close starts: accept loops return quietly.
	closing chan struct{}

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[*conn]struct{}
	wg        sync.WaitGroup // accept loops and connections
	closeOnce sync.Once
	// perIP counts the open connections of each remote address (limits.go).
	perIP map[string]int32
	// tls are the TLS listeners' configurations by listener name, for
	// ReconfigureTLS (tls_reconfigure.go).
	tls map[string]*tlsSource

	// pool is queued.max.request.bytes for request frames, shared by every
	// connection; decodePool bounds as much again for decoded requests
	// (decode_budget.go).
	pool       *protocol.MemoryPool
	decodePool *protocol.MemoryPool
	// limits are the connection limits and the idle timeout (limits.go).
	limits connLimits
	// panics counts handler panics recovered (HandlerPanics).
	panics atomic.Int64
	// logs rate-limits and deduplicates the log lines hostile clients can
	// cause (rejected connections, unsupported APIs).
	logs edgeLogs
}

// NewServer returns a server that has not bound its listeners yet.
func NewServer(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), conns: map[*conn]struct{}{}, perIP: map[string]int32{}}
	s.limits = newConnLimits(cfg.Limits)
	s.pool = protocol.NewMemoryPool(s.limits.queuedMaxBytes)
	s.decodePool = protocol.NewMemoryPool(s.limits.queuedMaxBytes)
	s.logs.now = time.Now
	return s
}

// HandlerPanics is the number of handler panics recovered since start (each
// answered with an error or a closed connection): a counter for metrics.
func (s *Server) HandlerPanics() int64 { return s.panics.Load() }

// QueuedRequestBytes is the bytes of request frames read and not yet
// answered, the part of queued.max.request.bytes in use.
func (s *Server) QueuedRequestBytes() int64 { return s.pool.Used() }

// DecodedRequestBytes is the memory held by decoded requests not yet
// answered (and, while a frame is decoded, its reservation).
func (s *Server) DecodedRequestBytes() int64 { return s.decodePool.Used() }

// ConnectionCounts returns the open connections of each listener, by
// listener name (every configured listener, with 0 when it has none).
func (s *Server) ConnectionCounts() map[string]int {
	out := make(map[string]int, len(s.cfg.Listeners))
	for _, l := range s.cfg.Listeners {
		out[l.Name] += 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		out[c.listener.Name]++
	}
	return out
}

// Start binds every listener and serves connections until Close. It returns
// once the listeners accept connections; on an error the listeners already
// bound stay open until Close.
func (s *Server) Start() error {
	// Every TLS listener's certificates load before any listener binds, so
	// a bad keystore stops start-up with nothing served.
	srcs := make([]*tlsSource, len(s.cfg.Listeners))
	for i, l := range s.cfg.Listeners {
		if l.SecurityProtocol != config.ProtoSSL && l.SecurityProtocol != config.ProtoSASLSSL {
			continue
		}
		if l.TLS == nil {
			return fmt.Errorf("listener %s: security protocol %s without a TLS configuration", l.Name, l.SecurityProtocol)
		}
		src, err := newTLSSource(l, s.log)
		if err != nil {
			return err
		}
		srcs[i] = src
		s.mu.Lock()
		if s.tls == nil {
			s.tls = map[string]*tlsSource{}
		}
		s.tls[l.Name] = src
		s.mu.Unlock()
	}
	for i, l := range s.cfg.Listeners {
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			return fmt.Errorf("listening on %s: %w", l, err)
		}
		s.mu.Lock()
		s.listeners = append(s.listeners, ln)
		s.mu.Unlock()
		s.log.Info("listening", "listener", l.String(), "addr", ln.Addr().String())
		s.wg.Add(1)
		go s.acceptLoop(ln, l, srcs[i])
	}
	return nil
}

// Addrs returns the bound listener addresses (useful with port 0).
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []net.Addr
	for _, ln := range s.listeners {
		out = append(out, ln.Addr())
	}
	return out
}

// Principals returns the principals of the open connections on listeners
// of the given security protocol.
func (s *Server) Principals(securityProtocol string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for c := range s.conns {
		if c.listener.SecurityProtocol == securityProtocol {
			out = append(out, c.principal)
		}
	}
	return out
}

// acceptLoop accepts connections of listener l; src is its TLS
// configuration (nil on PLAINTEXT and SASL_PLAINTEXT). The TLS handshake
// runs in the connection's goroutine, never here.
func (s *Server) acceptLoop(ln net.Listener, l config.Listener, src *tlsSource) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-s.closing:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.log.Error("accept failed; listener stopped", "addr", ln.Addr().String(), "err", err)
			return
		}
		if src != nil {
			nc = tls.Server(nc, src.serverConfig())
		}
		c := newConn(s, nc, l)
		c.tls = src
		ip := hostOf(c.addr)
		s.mu.Lock()
		select {
		case <-s.closing:
			s.mu.Unlock()
			nc.Close()
			return
		default:
		}
		if reason := s.admitLocked(ip); reason != "" {
			s.mu.Unlock()
			nc.Close()
			s.logs.rejected(s.log, ip, reason)
			continue
		}
		s.conns[c] = struct{}{}
		s.perIP[ip]++
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			if s.perIP[ip]--; s.perIP[ip] <= 0 {
				delete(s.perIP, ip)
			}
			s.mu.Unlock()
		}()
	}
}

// Close stops the listeners, makes every connection stop reading at the
// next frame, and waits until each has answered its requests already read
// (bounded by ShutdownWriteGrace for clients that stopped reading). It is
// safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.mu.Lock()
		for _, ln := range s.listeners {
			ln.Close()
		}
		for c := range s.conns {
			c.stopForShutdown()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
}
