package schemaregistry

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestWriterListener: the writer's URL is the first http:// entry of its
// schema.registry.listeners with a fixed port (or https:// one when this
// registry has client TLS), a wildcard host replaced by its Kafka host.
func TestWriterListener(t *testing.T) {
	for _, tc := range []struct {
		value, want string
		https       bool
	}{
		{value: "http://127.0.0.1:8081", want: "http://127.0.0.1:8081"},
		{value: "https://127.0.0.1:8443", want: ""},
		{value: "https://127.0.0.1:8443", want: "https://127.0.0.1:8443", https: true},
		{value: "https://0.0.0.0:8443,http://127.0.0.1:8081", want: "https://broker-2.example:8443", https: true},
		{value: "https://0.0.0.0:8443,http://127.0.0.1:8081", want: "http://127.0.0.1:8081"},
		{value: "http://0.0.0.0:8081", want: "http://broker-2.example:8081"},
		{value: "http://:8081", want: "http://broker-2.example:8081"},
		{value: "http://[::]:8081", want: "http://broker-2.example:8081"},
		{value: "http://127.0.0.1:0, http://10.0.0.2:8082", want: "http://10.0.0.2:8082"},
		{value: "http://127.0.0.1:0", want: ""},
		{value: "", want: ""},
	} {
		v := tc.value
		rcs := kadm.ResourceConfigs{{Name: "2", Configs: []kadm.Config{{Key: "log.dirs", Value: &v}, {Key: "schema.registry.listeners", Value: &v}}}}
		if got := writerListener(rcs, 2, "broker-2.example", tc.https); got != tc.want {
			t.Errorf("%q (https %v): %q, want %q", tc.value, tc.https, got, tc.want)
		}
	}
	if got := writerListener(nil, 2, "h", true); got != "" {
		t.Errorf("no configs: %q", got)
	}
}

// TestForwardFailureIs50003: a writer that cannot be reached is
// Confluent's 50003.
func TestForwardFailureIs50003(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	r := New(Config{})
	defer r.Close()
	req := httptest.NewRequest("POST", "/subjects/s/versions", strings.NewReader(`{}`))
	_, _, err = r.forward(nil, req, dead, []byte(`{}`))
	var e *Error
	if !errors.As(err, &e) || e.Code != 50003 || e.Status != 500 || !strings.Contains(e.Message, "forwarding") {
		t.Errorf("forward to a dead writer: %v", err)
	}
}

// TestUnreachableBrokerIs50002: while the registry cannot load _schemas
// (no broker to reach) requests wait at most Timeout and get 50002; Close
// stops its retries.
func TestUnreachableBrokerIs50002(t *testing.T) {
	r := New(Config{
		Bootstrap: func() (Endpoint, error) { return Endpoint{}, errors.New("no listener yet") },
		Timeout:   100 * time.Millisecond,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	r.Start()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	for _, path := range []string{"/subjects", "/schemas/ids/1"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 || !strings.Contains(string(b), `"error_code":50002`) {
			t.Errorf("GET %s while loading: %d %s", path, resp.StatusCode, b)
		}
	}
	resp, err := srv.Client().Post(srv.URL+"/subjects/s/versions", "application/json", strings.NewReader(`{"schema":"\"int\""}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(b), `"error_code":50002`) {
		t.Errorf("POST while loading: %d %s", resp.StatusCode, b)
	}
	if r.Ready() == nil {
		t.Error("Ready while _schemas cannot be loaded")
	}
	r.Close() // returns: the retry loop is stopped
}
