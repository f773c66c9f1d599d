package restproxy_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kbroker/kbroker/restproxy"
)

// TestIdleUserClientClosed: a user's Kafka client that no call used for
// consumer.instance.timeout.ms is closed, and the next call makes a new
// one; a client in use is not closed.
func TestIdleUserClientClosed(t *testing.T) {
	e := start(t, nil) // its own proxy is not used here
	p := restproxy.New(restproxy.Config{
		Bootstrap:       func() (string, error) { return e.b.Addrs()[0].String(), nil },
		InstanceTimeout: 300 * time.Millisecond,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(func() { srv.Close(); p.Close() })
	get := func() {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + "/topics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /topics: %d", resp.StatusCode)
		}
	}
	get()
	if n := p.UserClients(); n != 1 {
		t.Fatalf("%d user clients after a call, want 1", n)
	}
	e.eventually("the idle client closed", func() bool { return p.UserClients() == 0 })
	get()
	if n := p.UserClients(); n != 1 {
		t.Fatalf("%d user clients after a call past the eviction, want 1", n)
	}
}
