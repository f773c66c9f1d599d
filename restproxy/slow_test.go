package restproxy

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSlowClient: a client that stops sending its body mid-way is answered
// 408 once RequestTimeout passes, and the proxy serves the next call.
func TestSlowClient(t *testing.T) {
	p := New(Config{
		Bootstrap:      func() (string, error) { return "", errors.New("no broker in this test") },
		RequestTimeout: 200 * time.Millisecond,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	defer p.Close()
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// 100 bytes announced, 10 sent.
	_, err = io.WriteString(conn, "POST /topics/t HTTP/1.1\r\nHost: x\r\nContent-Type: application/vnd.kafka.binary.v2+json\r\nContent-Length: 100\r\n\r\n{\"records\"")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), `"error_code":408`) {
		t.Errorf("stalled body: %d %s, want 408", resp.StatusCode, body)
	}

	// The proxy still answers (here: no broker behind it, 50003).
	r, err := srv.Client().Get(srv.URL + "/topics") // closed with srv
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), "no broker in this test") {
		t.Errorf("next call: %d %s", r.StatusCode, b)
	}
}
