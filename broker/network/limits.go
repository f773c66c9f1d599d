package network

import (
	"fmt"
	"log/slog"
	"math"
	"net"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connLimits are the limits the server applies to connections, resolved
// from config.NetworkLimits. Zero values mean no limit.
type connLimits struct {
	queuedMaxBytes int64 // queued.max.request.bytes; ≤ 0 unbounded
	maxConns       int32 // max.connections
	maxPerIP       int32 // max.connections.per.ip
	// perIPOverrides are max.connections.per.ip.overrides by address (host
	// names resolved once at start, as Kafka resolves them).
	perIPOverrides map[string]int32
	idle           time.Duration // connections.max.idle.ms; ≤ 0 never
}

func newConnLimits(l *config.NetworkLimits) connLimits {
	if l == nil {
		return connLimits{maxConns: math.MaxInt32, maxPerIP: math.MaxInt32}
	}
	cl := connLimits{
		queuedMaxBytes: l.QueuedMaxRequestBytes,
		maxConns:       l.MaxConnections,
		maxPerIP:       l.MaxConnectionsPerIP,
		perIPOverrides: map[string]int32{},
	}
	if l.ConnectionsMaxIdleMs > 0 {
		cl.idle = time.Duration(l.ConnectionsMaxIdleMs) * time.Millisecond
	}
	for host, n := range l.MaxConnectionsPerIPOverrides {
		if ip := net.ParseIP(host); ip != nil {
			cl.perIPOverrides[ip.String()] = n
			continue
		}
		addrs, _ := net.LookupHost(host) // an unknown host overrides nothing
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip != nil {
				cl.perIPOverrides[ip.String()] = n
			}
		}
	}
	return cl
}

// admitLocked says why a new connection from ip must be refused, or "" to
// admit it. Kafka rejects a connection over max.connections.per.ip by
// closing it; over max.connections its acceptor stops accepting until a
// slot frees, which leaves clients waiting in the kernel's backlog — kbroker
// closes those too, so a client sees the refusal at once and retries.
// Requires s.mu.
func (s *Server) admitLocked(ip string) string {
	limit := s.limits.maxPerIP
	if n, ok := s.limits.perIPOverrides[ip]; ok {
		limit = n
	}
	if s.perIP[ip] >= limit {
		return fmt.Sprintf("address already has the configured maximum of %d connections (max.connections.per.ip)", limit)
	}
	if int64(len(s.conns)) >= int64(s.limits.maxConns) {
		return fmt.Sprintf("broker already has the configured maximum of %d connections (max.connections)", s.limits.maxConns)
	}
	return ""
}

// hostOf is the address part of host:port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(h); ip != nil {
			return ip.String()
		}
		return h
	}
	return addr
}

// edgeLogs keeps what hostile or broken clients can make the broker log
// bounded: rejected connections at most once per rejectLogEvery (with the
// count of those not logged), unsupported APIs once per client id, API
// and version.
type edgeLogs struct {
	now func() time.Time

	mu            sync.Mutex
	lastReject    time.Time
	rejectedQuiet int
	unsupported   map[string]struct{}
}

// rejectLogEvery is the rate of "rejected connection" log lines.
const rejectLogEvery = time.Second

// maxUnsupportedLogged bounds the (client id, API, version) triples
// remembered as logged; past it the set starts again.
const maxUnsupportedLogged = 4096

func (e *edgeLogs) rejected(log *slog.Logger, ip, reason string) {
	e.mu.Lock()
	now := e.now()
	if !e.lastReject.IsZero() && now.Sub(e.lastReject) < rejectLogEvery {
		e.rejectedQuiet++
		e.mu.Unlock()
		return
	}
	quiet := e.rejectedQuiet
	e.lastReject, e.rejectedQuiet = now, 0
	e.mu.Unlock()
	log.Warn("rejected connection", "client", ip, "reason", reason, "rejected_since_last_log", quiet)
}

// unsupportedAPI logs a request for an API key or version the broker does
// not advertise, once per client id, API and version.
func (e *edgeLogs) unsupportedAPI(log *slog.Logger, addr, clientID string, key, version int16) {
	k := fmt.Sprintf("%s\x00%d\x00%d", clientID, key, version)
	e.mu.Lock()
	if _, ok := e.unsupported[k]; ok {
		e.mu.Unlock()
		return
	}
	if e.unsupported == nil || len(e.unsupported) >= maxUnsupportedLogged {
		e.unsupported = map[string]struct{}{}
	}
	e.unsupported[k] = struct{}{}
	e.mu.Unlock()
	name := kmsg.NameForKey(key)
	if kmsg.RequestForKey(key) == nil {
		name = fmt.Sprintf("unknown(%d)", key)
	}
	log.Warn("closing connection: unsupported api or version (logged once per client id)",
		"client", addr, "client_id", clientID, "api", name, "version", version)
}
