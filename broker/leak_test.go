package broker

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCloseLeavesNoGoroutines: every goroutine the broker starts (accept
// loops, connections, flusher, log tasks, coordinator timers) is stopped by
// Close.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"log.retention.check.interval.ms": "10",
		"log.cleaner.backoff.ms":          "10",
		"log.flush.interval.ms":           "10",
		"http.listeners":                  "http://127.0.0.1:0",
		"schema.registry.listeners":       "http://127.0.0.1:0", // the registry's reader and client stop too
		"rest.proxy.listeners":            "http://127.0.0.1:0",
		"http.pprof.enable":               "true",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()[0].String()), kgo.DefaultProduceTopic("leak"),
		kgo.AllowAutoTopicCreation(), kgo.TransactionalID("leak-tx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	// The HTTP listener's goroutines are the broker's too: serve a scrape
	// and a profile index, then Close must stop them.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/debug/pprof/"} {
		resp, err := hc.Get("http://" + b.HTTPAddrs()[0].String() + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
	}
	// The Schema Registry's reader and Kafka client: a registration makes
	// sure it connected, wrote and read _schemas before Close.
	resp, err := hc.Post("http://"+b.SchemaRegistryAddrs()[0].String()+"/subjects/leak/versions", "application/json", strings.NewReader(`{"schema":"\"string\""}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("registering a schema: %s", resp.Status)
	}
	// The REST proxy's Kafka clients and a consumer instance (a group
	// member with its own client) are stopped by Close too.
	rp := "http://" + b.RestProxyAddrs()[0].String()
	for _, call := range []struct{ path, ct, body string }{
		{"/topics/leak", "application/vnd.kafka.binary.v2+json", `{"records":[{"value":"dg=="}]}`},
		{"/consumers/leak-g", "application/vnd.kafka.v2+json", `{"name":"c"}`},
		{"/consumers/leak-g/instances/c/subscription", "application/vnd.kafka.v2+json", `{"topics":["leak"]}`},
	} {
		resp, err := hc.Post(rp+call.path, call.ct, strings.NewReader(call.body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %s", call.path, resp.Status)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronising
	}
}
