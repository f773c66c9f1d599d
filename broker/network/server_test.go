package network

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startServer serves h on one PLAINTEXT listener on a loopback port.
func startServer(t *testing.T, h Handler) *Server {
	t.Helper()
	s := NewServer(Config{
		Listeners:             []config.Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", SecurityProtocol: "PLAINTEXT"}},
		SocketRequestMaxBytes: 1 << 20,
		Handler:               h,
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// frame encodes req with correlation id corr and client id "c" as a size-prefixed frame.
func frame(req kmsg.Request, corr int32) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, uint32(corr))
	body = append(body, 0, 1, 'c')
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestPipelinedResponsesInOrder sends many requests at once; the answers
// come back in request order and each handler call sees the request's context.
func TestPipelinedResponsesInOrder(t *testing.T) {
	var mu sync.Mutex
	var seen []RequestContext
	s := startServer(t, HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
		mu.Lock()
		seen = append(seen, *rc)
		mu.Unlock()
		return req.Body.(*kmsg.MetadataRequest).ResponseKind()
	}))
	nc, err := net.Dial("tcp", s.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	const n = 100
	var out []byte
	for i := int32(1); i <= n; i++ {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 1
		out = append(out, frame(md, i)...)
	}
	if _, err := nc.Write(out); err != nil {
		t.Fatal(err)
	}
	for i := int32(1); i <= n; i++ {
		in, err := protocol.ReadFrame(nc, 1<<20, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if got := int32(binary.BigEndian.Uint32(in)); got != i {
			t.Fatalf("response %d has correlation id %d", i, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("handler saw %d requests, want %d", len(seen), n)
	}
	rc := seen[0]
	if rc.Listener.Name != "PLAINTEXT" || rc.Principal != AnonymousPrincipal || rc.RemoteAddr != nc.LocalAddr().String() ||
		rc.Header.ClientID != "c" || rc.Header.APIKey != int16(kmsg.Metadata) {
		t.Fatalf("request context %+v", rc)
	}
}

// TestCloseConnAndUnsupportedVersion: a handler that sets CloseConn ends
// the connection after its answer, and an unsupported version of an API
// other than ApiVersions ends it without one, before the handler runs.
func TestCloseConnAndUnsupportedVersion(t *testing.T) {
	s := startServer(t, HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
		if req.Body == nil {
			t.Errorf("handler called for an unsupported version of %d", rc.Header.APIKey)
			return nil
		}
		rc.CloseConn = true
		return req.Body.(*kmsg.MetadataRequest).ResponseKind()
	}))
	dial := func() net.Conn {
		nc, err := net.Dial("tcp", s.Addrs()[0].String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		return nc
	}
	nc := dial()
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 1
	if _, err := nc.Write(append(frame(md, 1), frame(md, 2)...)); err != nil {
		t.Fatal(err)
	}
	if in, err := protocol.ReadFrame(nc, 1<<20, nil); err != nil || binary.BigEndian.Uint32(in) != 1 {
		t.Fatalf("first answer: %v", err)
	}
	if _, err := protocol.ReadFrame(nc, 1<<20, nil); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseConn: %v, want EOF", err)
	}

	nc = dial()
	md.Version = 99
	if _, err := nc.Write(frame(md, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.ReadFrame(nc, 1<<20, nil); !errors.Is(err, io.EOF) {
		t.Fatalf("unsupported version: %v, want EOF", err)
	}
}
