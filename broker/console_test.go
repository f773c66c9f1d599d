package broker

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
)

// TestConsoleWiring: the console answers at / once the Kafka listeners are
// open (an error page before), showing this broker through its own
// listener; http.console.enable=false leaves / unserved.
func TestConsoleWiring(t *testing.T) {
	open := func(props map[string]string) (*Broker, func(string) (int, string)) {
		t.Helper()
		props["listeners"], props["log.dirs"], props["http.listeners"] = "PLAINTEXT://127.0.0.1:0", t.TempDir(), "http://127.0.0.1:0"
		cfg, _, err := config.ParseConfig(props)
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		return b, func(path string) (int, string) {
			t.Helper()
			resp, err := hc.Get("http://" + b.HTTPAddrs()[0].String() + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
	}
	b, get := open(map[string]string{})
	if code, body := get("/"); code != http.StatusBadGateway || !strings.Contains(body, errNotReady.Error()) {
		t.Errorf("/ before Start: %d, want 502 saying why:\n%s", code, body)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	port := b.Addrs()[0].String()[strings.LastIndex(b.Addrs()[0].String(), ":")+1:]
	if code, body := get("/"); code != http.StatusOK || !strings.Contains(body, "<td>"+port+"</td>") {
		t.Errorf("/ after Start: %d, want the brokers table with port %s:\n%s", code, port, body)
	}

	b, get = open(map[string]string{"http.console.enable": "false"})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/"); code != http.StatusNotFound {
		t.Errorf("/ with http.console.enable=false: %d, want 404", code)
	}
}
