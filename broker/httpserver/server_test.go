package httpserver

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
)

func start(t *testing.T, cfg Config) (*Server, func(path string) (int, string)) {
	t.Helper()
	cfg.Listeners = []config.HTTPListener{{Host: "127.0.0.1", Port: 0}}
	s := New(cfg)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return s, func(path string) (int, string) {
		t.Helper()
		resp, err := hc.Get("http://" + s.Addrs()[0].String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	var ready atomic.Bool
	_, get := start(t, Config{Ready: func() error {
		if !ready.Load() {
			return errors.New("logs loading")
		}
		return nil
	}})
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "logs loading") {
		t.Errorf("/readyz before ready: %d %q, want 503 with the reason", code, body)
	}
	ready.Store(true)
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once ready: %d", code)
	}
	if code, _ := get("/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics without a handler: %d, want 404", code)
	}
}

func TestPprofOnlyWhenEnabled(t *testing.T) {
	_, off := start(t, Config{})
	if code, _ := off("/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof disabled: %d, want 404", code)
	}
	_, on := start(t, Config{Pprof: true, Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m 1\n") })})
	if code, body := on("/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof enabled: %d", code)
	}
	if code, body := on("/metrics"); code != http.StatusOK || body != "m 1\n" {
		t.Errorf("/metrics: %d %q", code, body)
	}
}

// TestStartFailsOnBusyPort: a listener that cannot bind is an error naming
// it, and Close still releases the listeners bound before it.
func TestStartFailsOnBusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := int32(busy.Addr().(*net.TCPAddr).Port)
	s := New(Config{Listeners: []config.HTTPListener{{Host: "127.0.0.1", Port: 0}, {Host: "127.0.0.1", Port: port}}})
	err = s.Start()
	if err == nil || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("Start on a busy port: %v", err)
	}
	first := s.Addrs()[0].String()
	s.Close()
	s.Close() // idempotent
	ln, err := net.Listen("tcp", first)
	if err != nil {
		t.Fatalf("the first listener was not released by Close: %v", err)
	}
	ln.Close()
}

// TestConsoleAtEveryOtherPath: the console handler gets / and any path the
// others do not serve; /metrics and /healthz stay theirs.
func TestConsoleAtEveryOtherPath(t *testing.T) {
	text := func(s string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, s) })
	}
	_, get := start(t, Config{Metrics: text("metrics"), Console: text("console")})
	for path, want := range map[string]string{"/": "console", "/topics/x": "console", "/metrics": "metrics", "/healthz": "ok\n"} {
		if code, body := get(path); code != http.StatusOK || body != want {
			t.Errorf("%s: %d %q, want %q", path, code, body, want)
		}
	}
}
