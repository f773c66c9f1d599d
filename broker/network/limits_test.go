package network

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logBuf is a concurrency-safe log sink for tests that count log lines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), substr)
}

// startLimited serves h with the given limits and logs into the returned buffer.
func startLimited(t *testing.T, h Handler, lim config.NetworkLimits) (*Server, *logBuf) {
	t.Helper()
	lb := &logBuf{}
	s := NewServer(Config{
		Listeners:             []config.Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", SecurityProtocol: "PLAINTEXT"}},
		SocketRequestMaxBytes: 100 << 20,
		Handler:               h,
		Logger:                slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Limits:                &lim,
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, lb
}

func unlimited() config.NetworkLimits {
	return config.NetworkLimits{MaxConnections: 1 << 30, MaxConnectionsPerIP: 1 << 30}
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

// roundTrip sends a Metadata v1 request and reads its answer.
func roundTrip(nc net.Conn, corr int32) error {
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	if _, err := nc.Write(frame(md, corr)); err != nil {
		return err
	}
	in, err := protocol.ReadFrame(nc, 1<<20, nil)
	if err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(in)); got != corr {
		return errors.New("wrong correlation id")
	}
	return nil
}

func metadataHandler() Handler {
	return HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
		return req.Body.ResponseKind()
	})
}

// expectClosed reads from nc until the server closes it.
func expectClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(nc); err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("waiting for close: %v", err)
	}
}

// TestMaxConnectionsPerIP: the connection over max.connections.per.ip is
// closed at once with one log line, the others keep being served, and a
// slot freed by a closing connection is reused.
func TestMaxConnectionsPerIP(t *testing.T) {
	lim := unlimited()
	lim.MaxConnectionsPerIP = 2
	s, lb := startLimited(t, metadataHandler(), lim)
	a, b := dial(t, s), dial(t, s)
	if err := roundTrip(a, 1); err != nil {
		t.Fatal(err)
	}
	if err := roundTrip(b, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		expectClosed(t, dial(t, s))
	}
	if n := lb.count("rejected connection"); n != 1 {
		t.Fatalf("%d rejection log lines for 5 rejections in a burst, want 1 (rate-limited)", n)
	}
	if !strings.Contains(lb.b.String(), "max.connections.per.ip") {
		t.Fatalf("log does not name the limit: %s", lb.b.String())
	}
	if err := roundTrip(a, 2); err != nil {
		t.Fatalf("admitted connection after rejections: %v", err)
	}
	a.Close()
	waitFor(t, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.conns) == 1 })
	if err := roundTrip(dial(t, s), 1); err != nil {
		t.Fatalf("connection after a slot freed: %v", err)
	}
}

// TestMaxConnectionsAndOverride: max.connections bounds all connections;
// max.connections.per.ip.overrides raises the limit of one address above
// max.connections.per.ip.
func TestMaxConnectionsAndOverride(t *testing.T) {
	lim := unlimited()
	lim.MaxConnections = 3
	lim.MaxConnectionsPerIP = 1
	lim.MaxConnectionsPerIPOverrides = map[string]int32{"127.0.0.1": 10}
	s, _ := startLimited(t, metadataHandler(), lim)
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		nc := dial(t, s)
		if err := roundTrip(nc, 1); err != nil {
			t.Fatalf("connection %d (override allows 10 from 127.0.0.1): %v", i, err)
		}
		conns = append(conns, nc)
	}
	expectClosed(t, dial(t, s))
	for _, nc := range conns {
		if err := roundTrip(nc, 2); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIdleConnectionClosed: a connection that sends nothing for
// connections.max.idle.ms is closed; one whose request is still being
// answered after that time is not.
func TestIdleConnectionClosed(t *testing.T) {
	lim := unlimited()
	lim.ConnectionsMaxIdleMs = 200
	release := make(chan struct{})
	s, _ := startLimited(t, HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
		if rc.Header.ClientID == "slow" {
			<-release
		}
		return req.Body.ResponseKind()
	}), lim)

	idle := dial(t, s)
	start := time.Now()
	expectClosed(t, idle)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("idle connection closed after %v, before connections.max.idle.ms", d)
	}

	busy := dial(t, s)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	f := slowFrame(md, 7)
	if _, err := busy.Write(f); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond) // three idle periods with the request in flight
	close(release)
	in, err := protocol.ReadFrame(busy, 1<<20, nil)
	if err != nil {
		t.Fatalf("connection with a request in flight was closed as idle: %v", err)
	}
	if binary.BigEndian.Uint32(in) != 7 {
		t.Fatal("wrong correlation id")
	}
}

// slowFrame is frame with client id "slow".
func slowFrame(req kmsg.Request, corr int32) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = append(body, 0, 4, 's', 'l', 'o', 'w')
	body = req.AppendTo(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHandlerPanicRecovered: a handler that panics is answered with
// UNKNOWN_SERVER_ERROR where the response has an error code at that version
// (FindCoordinator), closes the connection where it has none (Metadata v1),
// is counted and logged once with the API and client id, and the server
// keeps serving other connections.
func TestHandlerPanicRecovered(t *testing.T) {
	s, lb := startLimited(t, HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
		if rc.Header.ClientID == "c" {
			panic("deliberate test panic")
		}
		return req.Body.ResponseKind()
	}), unlimited())

	nc := dial(t, s)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 1
	fc.CoordinatorKey = "g"
	if _, err := nc.Write(frame(fc, 5)); err != nil {
		t.Fatal(err)
	}
	in, err := protocol.ReadFrame(nc, 1<<20, nil)
	if err != nil {
		t.Fatalf("no answer after a panic: %v", err)
	}
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.Version = 1
	if err := resp.ReadFrom(in[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("error code %d, want UNKNOWN_SERVER_ERROR", resp.ErrorCode)
	}

	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	if _, err := nc.Write(frame(md, 6)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, nc)

	if got := s.HandlerPanics(); got != 2 {
		t.Fatalf("HandlerPanics = %d, want 2", got)
	}
	if n := lb.count("handler panicked"); n != 2 {
		t.Fatalf("%d panic log lines, want one per panic", n)
	}
	if !strings.Contains(lb.b.String(), "client_id=c") || !strings.Contains(lb.b.String(), "api=FindCoordinator") || !strings.Contains(lb.b.String(), "deliberate test panic") {
		t.Fatalf("panic log lacks api, client id or panic value: %s", lb.b.String())
	}
	other := dial(t, s)
	if _, err := other.Write(slowFrame(md, 9)); err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.ReadFrame(other, 1<<20, nil); err != nil {
		t.Fatalf("another client after panics: %v", err)
	}
}

// TestUnsupportedAPILoggedOncePerClient: requests for an unknown key or an
// unsupported version close their connection, and are logged once per
// client id, API and version with the API's name.
func TestUnsupportedAPILoggedOncePerClient(t *testing.T) {
	s, lb := startLimited(t, metadataHandler(), unlimited())
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 99
	for i := 0; i < 3; i++ {
		nc := dial(t, s)
		if _, err := nc.Write(frame(md, 1)); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, nc)
	}
	unknown := frame(md, 1)
	binary.BigEndian.PutUint16(unknown[4:], 999) // an API key nobody has
	for i := 0; i < 3; i++ {
		nc := dial(t, s)
		if _, err := nc.Write(unknown); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, nc)
	}
	waitFor(t, func() bool { return lb.count("unsupported api") == 2 })
	time.Sleep(50 * time.Millisecond) // let any extra line land
	if n := lb.count("unsupported api"); n != 2 {
		t.Fatalf("%d log lines, want 2 (one per client id, API and version)", n)
	}
	if lb.count("api=Metadata version=99") != 1 || lb.count("api=unknown(999)") != 1 || lb.count("client_id=c") != 2 {
		t.Fatalf("log lines lack the API name, version or client id: %s", lb.b.String())
	}
}
