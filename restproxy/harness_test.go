package restproxy_test

// The tests run a real broker in process (broker.New) with the proxy on a
// free loopback port, and talk to it over real HTTP.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	ctV2     = "application/vnd.kafka.v2+json"
	ctBinary = "application/vnd.kafka.binary.v2+json"
	ctJSON   = "application/vnd.kafka.json.v2+json"
)

// env is a started broker with its proxy.
type env struct {
	t    testing.TB
	b    *broker.Broker
	base string // http://host:port of the proxy
	hc   *http.Client
	ctx  context.Context
	// user and password log the HTTP calls in (rest.proxy.authentication=basic).
	user, password string
}

// start starts a broker with the proxy and props over the defaults.
func start(t testing.TB, props map[string]string) *env {
	t.Helper()
	p := map[string]string{
		"listeners":                        "PLAINTEXT://127.0.0.1:0",
		"log.dirs":                         t.TempDir(),
		"http.listeners":                   "",
		"schema.registry.listeners":        "",
		"rest.proxy.listeners":             "http://127.0.0.1:0",
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "1",
	}
	for k, v := range props {
		p[k] = v
	}
	cfg, _, err := config.ParseConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &env{t: t, b: b, base: "http://" + b.RestProxyAddrs()[0].String(), hc: &http.Client{Transport: tr}, ctx: ctx}
}

// kafka is a native client of the broker's first listener.
func (e *env) kafka(opts ...kgo.Opt) *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(e.b.Addrs()[0].String())}, opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic with partitions through a native client.
func (e *env) createTopic(topic string, partitions int32) {
	e.t.Helper()
	resp, err := kadm.NewClient(e.kafka()).CreateTopic(e.ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		e.t.Fatalf("creating %s: %v", topic, err)
	}
}

// reply is an HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) String() string { return string(r.body) }

// errorCode is the error_code of a Confluent error body, 0 when none.
func (r reply) errorCode() int {
	var eb struct {
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	if json.Unmarshal(r.body, &eb) != nil || eb.Message == "" {
		return 0
	}
	return eb.ErrorCode
}

// do sends method path with body of contentType ("" : none) and headers
// given as name, value pairs.
func (e *env) do(method, path, contentType, body string, headers ...string) reply {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if e.user != "" {
		req.SetBasicAuth(e.user, e.password)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading the reply: %v", method, path, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// must is do that fails the test unless the status is want, and decodes
// the body into out (when not nil).
func (e *env) must(want int, out any, method, path, contentType, body string, headers ...string) reply {
	e.t.Helper()
	r := e.do(method, path, contentType, body, headers...)
	if r.status != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, r.status, r.body, want)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, r.body)
		}
	}
	return r
}

// wantError fails the test unless r is Confluent's error status/code.
func wantError(t *testing.T, what string, r reply, status, code int) {
	t.Helper()
	if r.status != status || r.errorCode() != code {
		t.Errorf("%s: %d %s, want %d with error_code %d", what, r.status, r.body, status, code)
	}
}

// eventually polls cond until it holds, failing the test at the deadline.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-e.ctx.Done():
			e.t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// jsonBody marshals v.
func jsonBody(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}

// kafkaCommitted is group's committed offset of topic's partition, read by
// a native client (-1: none).
func (e *env) kafkaCommitted(group, topic string, partition int32) int64 {
	e.t.Helper()
	offs, err := kadm.NewClient(e.kafka()).FetchOffsets(e.ctx, group)
	if err != nil {
		e.t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, partition); ok && o.Err == nil {
		return o.At
	}
	return -1
}
