package httpserver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network/tlstest"
)

// TestBasicAuthPaths: with Auth, the probes answer without a login; the
// metrics, pprof, the console and unknown paths answer 401 with the Basic
// challenge until a valid login; a wrong login is logged with the user but
// never the password, and answered after the failure delay.
func TestBasicAuthPaths(t *testing.T) {
	var logs syncBuffer
	text := func(s string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, s) })
	}
	const delay = 150 * time.Millisecond
	s := New(Config{
		Listeners: []config.HTTPListener{{Host: "127.0.0.1", Port: 0}},
		Pprof:     true,
		Metrics:   text("metrics"),
		Console:   text("console"),
		Auth: &BasicAuth{Check: func(user, password string) bool {
			return user == "alice" && password == "alice-secret"
		}, FailureDelay: delay},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	base := "http://" + s.Addrs()[0].String()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path, user, password string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if resp, _ := get(p, "", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("%s without a login: %d, want 200", p, resp.StatusCode)
		}
	}
	for _, p := range []string{"/metrics", "/debug/pprof/", "/", "/topics/x", "/nothing-here", "//healthz"} {
		resp, _ := get(p, "", "")
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="kbroker"` {
			t.Errorf("%s without a login: %d %q, want 401 with the Basic challenge", p, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	for p, want := range map[string]string{"/metrics": "metrics", "/": "console", "/topics/x": "console"} {
		if resp, body := get(p, "alice", "alice-secret"); resp.StatusCode != http.StatusOK || body != want {
			t.Errorf("%s with a login: %d %q, want 200 %q", p, resp.StatusCode, body, want)
		}
	}
	if resp, body := get("/debug/pprof/", "alice", "alice-secret"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof with a login: %d", resp.StatusCode)
	}
	start := time.Now()
	if resp, _ := get("/metrics", "alice", "wrong-pass-xyz"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong password: %d, want 401", resp.StatusCode)
	}
	if d := time.Since(start); d < delay {
		t.Errorf("a wrong password was answered after %v, before the failure delay %v", d, delay)
	}
	if l := logs.String(); !strings.Contains(l, "http authentication failed") || !strings.Contains(l, "user=alice") || strings.Contains(l, "wrong-pass-xyz") || strings.Contains(l, "alice-secret") {
		t.Errorf("log of a failed login:\n%s", l)
	}
}

// TestHTTPSListener: an https:// listener serves the TLS configuration it is
// handed (the broker's is network.ServerTLSConfig, tested in broker/), a
// client certificate requirement included; one without a configuration
// does not start.
func TestHTTPSListener(t *testing.T) {
	ca, err := tlstest.NewCA("http-ca")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Server("kbroker-http")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client(pkix.Name{CommonName: "prometheus"})
	if err != nil {
		t.Fatal(err)
	}
	serverCert, err := server.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	conf := &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	s := New(Config{Listeners: []config.HTTPListener{{Host: "127.0.0.1", Port: 0, TLS: true}}, TLS: conf})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	url := "https://" + s.Addrs()[0].String() + "/healthz"
	cert, err := client.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	get := func(tc *tls.Config) (*http.Response, error) {
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tc}}
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	resp, err := get(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.PeerCertificates[0].Subject.CommonName != "kbroker-http" {
		t.Fatalf("https with a client certificate: %d, TLS %v", resp.StatusCode, resp.TLS != nil)
	}
	if _, err := get(&tls.Config{RootCAs: pool}); err == nil {
		t.Error("https without a client certificate succeeded under ssl.client.auth=required")
	}
	// Go's server answers plain HTTP on a TLS port with a 400.
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if r, err := plain.Get("http://" + s.Addrs()[0].String() + "/healthz"); err == nil {
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			t.Error("plain http served on the https listener")
		}
	}
	bad := New(Config{Listeners: []config.HTTPListener{{Host: "127.0.0.1", Port: 0, TLS: true}}})
	if err := bad.Start(); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("an https listener without TLS configuration started: %v", err)
	}
	bad.Close()
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWarnExposed: a listener beyond loopback is logged when it has no
// login, or a login over plain http; loopback and https with a login are
// not.
func TestWarnExposed(t *testing.T) {
	public := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 9644}
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9644}
	auth := &BasicAuth{Check: func(string, string) bool { return false }}
	for _, c := range []struct {
		auth *BasicAuth
		tls  bool
		addr net.Addr
		want string
	}{
		{nil, false, loop, ""},
		{nil, true, public, "http.authentication=none"},
		{auth, false, public, "clear text"},
		{auth, true, public, ""},
	} {
		var logs syncBuffer
		s := New(Config{Auth: c.auth, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		s.warnExposed(config.HTTPListener{Host: "10.0.0.1", Port: 9644, TLS: c.tls}, c.addr)
		if got := logs.String(); c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("auth %v, tls %v, %v: logged %q, want %q", c.auth != nil, c.tls, c.addr, got, c.want)
		}
	}
}
