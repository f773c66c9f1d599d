package kconn

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testServer answers ApiVersions v0 over real TCP and counts the
// connections it accepted. hold, when set, makes it read requests without
// answering; closeAfter > 0 closes each connection after that many answers.
type testServer struct {
	ln         net.Listener
	closeAfter int
	hold       bool

	mu       sync.Mutex
	accepted int
	conns    []net.Conn
	wg       sync.WaitGroup
}

func newTestServer(t *testing.T, closeAfter int, hold bool) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{ln: ln, closeAfter: closeAfter, hold: hold}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.accepted++
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *testServer) serve(c net.Conn) {
	defer c.Close()
	for answered := 0; ; answered++ {
		if s.closeAfter > 0 && answered == s.closeAfter {
			return
		}
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, body); err != nil || len(body) < 8 {
			return
		}
		if s.hold {
			continue
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		out := binary.BigEndian.AppendUint32(nil, 0)
		out = append(out, body[4:8]...) // correlation id
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (s *testServer) addr() string { return s.ln.Addr().String() }

func (s *testServer) acceptedConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

func apiVersions() kmsg.Request {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	return req
}

func mustTrip(t *testing.T, p *Pool, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.RoundTrip(ctx, addr, apiVersions()); err != nil {
		t.Fatalf("round trip to %s: %v", addr, err)
	}
}

// TestPoolOneConnectionPerDestination: sequential and concurrent requests
// to a destination share one connection; another destination gets its own.
func TestPoolOneConnectionPerDestination(t *testing.T) {
	a, b := newTestServer(t, 0, false), newTestServer(t, 0, false)
	p := NewPool(Options{ClientID: "test"})
	defer p.Close()
	for range 5 {
		mustTrip(t, p, a.addr())
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(2)
		go func() { defer wg.Done(); mustTrip(t, p, a.addr()) }()
		go func() { defer wg.Done(); mustTrip(t, p, b.addr()) }()
	}
	wg.Wait()
	if n, m := a.acceptedConns(), b.acceptedConns(); n != 1 || m != 1 {
		t.Fatalf("servers accepted %d and %d connections, want 1 each", n, m)
	}
	if n := p.Conns(); n != 2 {
		t.Fatalf("pool holds %d connections, want 2", n)
	}
}

// TestPoolRedialsAfterFailure: a connection the peer closed fails the
// round trip on it; the next request dials a new one.
func TestPoolRedialsAfterFailure(t *testing.T) {
	s := newTestServer(t, 1, false)
	p := NewPool(Options{ClientID: "test"})
	defer p.Close()
	mustTrip(t, p, s.addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.RoundTrip(ctx, s.addr(), apiVersions()); err == nil {
		t.Fatal("a round trip on a connection the server closed succeeded")
	}
	mustTrip(t, p, s.addr())
	if n := s.acceptedConns(); n != 2 {
		t.Fatalf("server accepted %d connections, want 2 (one redial)", n)
	}
}

// TestPoolContextAndClose: a round trip whose context ends returns at once
// and gives up its connection; Close fails the round trip in flight and
// every later one.
func TestPoolContextAndClose(t *testing.T) {
	s := newTestServer(t, 0, true)
	p := NewPool(Options{ClientID: "test"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.RoundTrip(ctx, s.addr(), apiVersions())
		done <- err
	}()
	waitConns(t, s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled round trip: %v, want context.Canceled", err)
	}
	go func() {
		_, err := p.RoundTrip(context.Background(), s.addr(), apiVersions())
		done <- err
	}()
	waitConns(t, s, 2) // the canceled trip's connection was given up
	p.Close()
	if err := <-done; !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("round trip in flight at Close: %v, want ErrPoolClosed", err)
	}
	if _, err := p.RoundTrip(context.Background(), s.addr(), apiVersions()); !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("round trip after Close: %v, want ErrPoolClosed", err)
	}
}

// waitConns waits until s has accepted n connections.
func waitConns(t *testing.T, s *testServer, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.acceptedConns() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("server accepted %d connections, want %d", s.acceptedConns(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
