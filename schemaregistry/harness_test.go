package schemaregistry_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/broker/config"
)

// registryBroker is a real in-process broker serving the registry on a
// free port, over the log dir dir (a restart reuses it).
type registryBroker struct {
	t   testing.TB
	b   *broker.Broker
	url string
	hc  *http.Client
}

func startRegistry(t testing.TB, dir string, extra ...string) *registryBroker {
	t.Helper()
	props := map[string]string{
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                         dir,
		"http.listeners":                   "",
		"schema.registry.listeners":        "http://127.0.0.1:0",
		"rest.proxy.listeners":             "",
		"offsets.topic.num.partitions":     "1",
		"group.initial.rebalance.delay.ms": "0",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		props[extra[i]] = extra[i+1]
	}
	cfg, _, err := config.ParseConfig(props)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		cfg.Logger = slog.Default()
	}
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	rb := &registryBroker{t: t, b: b, url: "http://" + b.SchemaRegistryAddrs()[0].String(),
		hc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	t.Cleanup(rb.close)
	return rb
}

func (rb *registryBroker) close() {
	rb.hc.CloseIdleConnections()
	rb.b.Close()
}

// response is an HTTP answer of the registry.
type response struct {
	status int
	ct     string
	body   string
}

// json decodes the body into v.
func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// errorCode is the error_code of an error answer.
func (r response) errorCode(t testing.TB) int {
	t.Helper()
	var e struct {
		Code    int    `json:"error_code"`
		Message string `json:"message"`
	}
	r.json(t, &e)
	if e.Message == "" {
		t.Errorf("error without a message: %s", r.body)
	}
	return e.Code
}

// do sends a request with Confluent's content type (headers may override:
// "Header: value" pairs).
func (rb *registryBroker) do(method, path, body string, headers ...string) response {
	rb.t.Helper()
	req, err := http.NewRequest(method, rb.url+path, strings.NewReader(body))
	if err != nil {
		rb.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := rb.hc.Do(req)
	if err != nil {
		rb.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		rb.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

// header is one header of the answer to a request.
func (rb *registryBroker) header(method, path, body, name string) string {
	rb.t.Helper()
	req, err := http.NewRequest(method, rb.url+path, strings.NewReader(body))
	if err != nil {
		rb.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := rb.hc.Do(req)
	if err != nil {
		rb.t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.Header.Get(name)
}

// expect checks status and exact body.
func (rb *registryBroker) expect(method, path, body string, status int, want string) {
	rb.t.Helper()
	r := rb.do(method, path, body)
	if r.status != status || r.body != want {
		rb.t.Errorf("%s %s %s:\n got %d %s\nwant %d %s", method, path, body, r.status, r.body, status, want)
	}
}

// expectError checks an error answer's status and error_code.
func (rb *registryBroker) expectError(method, path, body string, status, code int) response {
	rb.t.Helper()
	r := rb.do(method, path, body)
	if r.status != status {
		rb.t.Errorf("%s %s %s: status %d, want %d: %s", method, path, body, r.status, status, r.body)
		return r
	}
	if got := r.errorCode(rb.t); got != code {
		rb.t.Errorf("%s %s %s: error_code %d, want %d: %s", method, path, body, got, code, r.body)
	}
	return r
}

// schemaBody is a registration body for schema of typ ("" is AVRO).
func schemaBody(schema, typ string, refs ...string) string {
	m := map[string]any{"schema": schema}
	if typ != "" {
		m["schemaType"] = typ
	}
	if len(refs) > 0 {
		var rs []map[string]any
		for i := 0; i+2 < len(refs)+1; i += 3 {
			var v int
			json.Unmarshal([]byte(refs[i+2]), &v)
			rs = append(rs, map[string]any{"name": refs[i], "subject": refs[i+1], "version": v})
		}
		m["references"] = rs
	}
	b, _ := json.Marshal(m)
	return string(b)
}
