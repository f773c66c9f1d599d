package compat

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKafkaJSSchemaRegistry: kafkajs with @kafkajs/confluent-schema-registry
// (avsc, protobufjs and ajv as serializers) registers Avro, Protobuf and
// JSON schemas in kbroker's registry, produces and consumes through
// kbroker and decodes what it wrote; the registry refuses an incompatible
// schema with Confluent's answer. Across implementations: kbroker's REST
// Proxy reads the JavaScript serializers' Avro and JSON records as JSON,
// and the JavaScript deserializers read records kbroker's REST Proxy
// wrote. (The library's Protobuf serializer writes no message indexes,
// unlike Confluent's serializers, so kbroker, like Confluent's
// deserializer, cannot read its Protobuf records; its deserializer skips
// leading zero bytes and so reads Confluent's [0] index.)
func TestKafkaJSSchemaRegistry(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (%v): run scripts/test.sh", err)
	}
	dir := filepath.Join(compatDir(t), "js")
	script := filepath.Join(dir, "kafkajs_schema_registry.js")
	b, registry, proxy := startRegistryBroker(t)

	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(node, append([]string{script, b.Addr(), registry}, args...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("node %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr)
		}
		return out
	}
	var res struct {
		IDs          map[string]int               `json:"ids"`
		Decoded      map[string][]json.RawMessage `json:"decoded"`
		Incompatible string                       `json:"incompatible"`
	}
	if err := json.Unmarshal(run("sr"), &res); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"avro":     {`{"id":"a1","note":null,"qty":2}`, `{"id":"a2","note":"rush","qty":5}`},
		"protobuf": {`{"id":"p1","qty":3,"tags":["x"]}`, `{"id":"p2","qty":7}`},
		"json":     {`{"id":"j1","qty":1}`, `{"id":"j2","qty":9}`},
	}
	for name, vals := range want {
		if res.IDs[name] <= 0 {
			t.Errorf("%s: no schema id in %+v", name, res.IDs)
		}
		if got := compactAll(t, res.Decoded[name]); strings.Join(got, " ") != strings.Join(vals, " ") {
			t.Errorf("%s decoded by kafkajs: %v, want %v", name, got, vals)
		}
	}
	if !strings.Contains(res.Incompatible, "incompatible") {
		t.Errorf("an incompatible Avro schema: %q, want the registry's refusal", res.Incompatible)
	}

	// kbroker's REST Proxy reads the JavaScript serializers' records.
	proxyWant := map[string]struct{ format, topic string }{
		"avro": {"avro", "sr-avro"},
		"json": {"jsonschema", "sr-json"},
	}
	proxyVals := map[string][]string{
		"avro": {`{"id":"a1","note":null,"qty":2}`, `{"id":"a2","note":{"string":"rush"},"qty":5}`},
		"json": {`{"id":"j1","qty":1}`, `{"id":"j2","qty":9}`},
	}
	for name, p := range proxyWant {
		got := readThroughProxy(t, proxy, p.format, p.topic, 2)
		if strings.Join(got, " ") != strings.Join(proxyVals[name], " ") {
			t.Errorf("%s read by kbroker's REST Proxy: %v, want %v", name, got, proxyVals[name])
		}
	}

	// The JavaScript deserializers read records kbroker's REST Proxy wrote.
	for _, c := range []struct{ format, topic, record, want string }{
		{"avro", "sr-avro", `{"id":"r1","qty":4,"note":{"string":"from http"}}`, `{"id":"r1","note":"from http","qty":4}`},
		{"protobuf", "sr-protobuf", `{"id":"r2","qty":6,"tags":["h"]}`, `{"id":"r2","qty":6,"tags":["h"]}`},
		{"jsonschema", "sr-json", `{"id":"r3","qty":8}`, `{"id":"r3","qty":8}`},
	} {
		name := strings.TrimSuffix(strings.TrimPrefix(c.topic, "sr-"), "schema")
		body := fmt.Sprintf(`{"value_schema_id":%d,"records":[{"value":%s}]}`, res.IDs[name], c.record)
		resp, err := http.Post(proxy+"/topics/"+c.topic, "application/vnd.kafka."+c.format+".v2+json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("REST Proxy %s produce: %d %s", c.format, resp.StatusCode, b)
		}
		var all []json.RawMessage
		if err := json.Unmarshal(run("read", c.topic, "3"), &all); err != nil {
			t.Fatal(err)
		}
		if got := compactAll(t, all); len(got) != 3 || got[2] != c.want {
			t.Errorf("kafkajs reading the REST Proxy's %s record: %v, want %s last", c.format, got, c.want)
		}
	}
}

// startRegistryBroker starts kbroker with its Schema Registry and REST
// Proxy on fresh ports and waits until the registry is ready; it returns
// the broker and the two base URLs.
func startRegistryBroker(t *testing.T) (b *brokerProc, registry, proxy string) {
	t.Helper()
	regPort, proxyPort := freePort(t), freePort(t)
	b = startBroker(t, t.TempDir(),
		fmt.Sprintf("schema.registry.listeners=http://127.0.0.1:%d", regPort),
		fmt.Sprintf("rest.proxy.listeners=http://127.0.0.1:%d", proxyPort),
		"group.initial.rebalance.delay.ms=0")
	registry = fmt.Sprintf("http://127.0.0.1:%d", regPort)
	proxy = fmt.Sprintf("http://127.0.0.1:%d", proxyPort)
	waitHTTP(t, registry+"/readyz")
	return b, registry, proxy
}

// compactAll is each JSON value without insignificant whitespace.
func compactAll(t *testing.T, vals []json.RawMessage) []string {
	t.Helper()
	out := make([]string, len(vals))
	for i, v := range vals {
		var m any
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(m) // sorted keys: compare as sets of fields
		out[i] = string(b)
	}
	return out
}

// waitHTTP waits until url answers 200.
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within 60 s (last: %v)", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readThroughProxy reads the first n values of topic as format through a
// REST Proxy consumer instance.
func readThroughProxy(t *testing.T, proxy, format, topic string, n int) []string {
	t.Helper()
	group := "proxy-" + topic
	do := func(method, path, ct, body string, out any) {
		t.Helper()
		req, err := http.NewRequest(method, proxy+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set("Accept", "application/vnd.kafka."+format+".v2+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		if out != nil {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				t.Fatal(err)
			}
		}
	}
	const ctV2 = "application/vnd.kafka.v2+json"
	do("POST", "/consumers/"+group, ctV2, fmt.Sprintf(`{"name":"c","format":%q,"auto.offset.reset":"earliest"}`, format), nil)
	inst := "/consumers/" + group + "/instances/c"
	defer do("DELETE", inst, ctV2, "", nil)
	do("POST", inst+"/subscription", ctV2, fmt.Sprintf(`{"topics":[%q]}`, topic), nil)
	var vals []json.RawMessage
	deadline := time.Now().Add(60 * time.Second)
	for len(vals) < n {
		var recs []struct{ Value json.RawMessage }
		do("GET", inst+"/records?timeout=1000", "", "", &recs)
		for _, r := range recs {
			vals = append(vals, r.Value)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d records through the REST Proxy", topic, len(vals), n)
		}
	}
	return compactAll(t, vals[:n])
}
