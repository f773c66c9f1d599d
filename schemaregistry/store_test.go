package schemaregistry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network/tlstest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// kafkaClient is a client of the registry broker's Kafka listener.
func (rb *registryBroker) kafkaClient(opts ...kgo.Opt) *kgo.Client {
	rb.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(rb.b.Addrs()[0].String())}, opts...)...)
	if err != nil {
		rb.t.Fatal(err)
	}
	rb.t.Cleanup(cl.Close)
	return cl
}

// readSchemasTopic returns every record of _schemas up to its end.
func readSchemasTopic(t *testing.T, rb *registryBroker) []*kgo.Record {
	t.Helper()
	cl := rb.kafkaClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"_schemas": {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading _schemas: %v (read %d records)", err, len(out))
		}
		var hw int64
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			out = append(out, p.Records...)
			hw = p.HighWatermark
		})
		if len(out) > 0 && out[len(out)-1].Offset+1 >= hw {
			return out
		}
	}
}

// TestSchemasTopicRecords: what the registry writes is Confluent's key
// and value JSON in a compacted topic of one partition.
func TestSchemasTopicRecords(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	rb.expect("PUT", "/config", `{"compatibility":"FULL"}`, 200, `{"compatibility":"FULL"}`)
	rb.expect("POST", "/subjects/s/versions", schemaBody(`"string"`, ""), 200, `{"id":1}`)
	rb.expect("PUT", "/mode/s", `{"mode":"READWRITE"}`, 200, `{"mode":"READWRITE"}`)
	rb.expect("DELETE", "/subjects/s", "", 200, `[1]`)

	var got []string
	for _, r := range readSchemasTopic(t, rb) {
		if !strings.Contains(string(r.Key), `"NOOP"`) {
			got = append(got, string(r.Key)+" "+string(r.Value))
		}
	}
	want := []string{
		`{"keytype":"CONFIG","magic":0} {"compatibilityLevel":"FULL"}`,
		`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1} {"subject":"s","version":1,"id":1,"schema":"\"string\"","deleted":false}`,
		`{"keytype":"MODE","subject":"s","magic":0} {"subject":"s","mode":"READWRITE"}`,
		`{"keytype":"DELETE_SUBJECT","subject":"s","magic":0} {"subject":"s","version":1}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("_schemas records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	adm := kadm.NewClient(rb.kafkaClient())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := adm.ListTopics(ctx, "_schemas")
	if err != nil || len(td["_schemas"].Partitions) != 1 {
		t.Errorf("_schemas partitions: %v %v", td["_schemas"].Partitions, err)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "_schemas")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On("_schemas", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Configs {
		if kv.Key == "cleanup.policy" && kv.MaybeValue() != "compact" {
			t.Errorf("_schemas cleanup.policy = %q", kv.MaybeValue())
		}
	}
}

// TestRestartKeepsIDsAndVersions: a broker restarted on the same log dir
// serves the same ids and versions and continues the ids.
func TestRestartKeepsIDsAndVersions(t *testing.T) {
	dir := t.TempDir()
	rb := startRegistry(t, dir)
	rb.expect("POST", "/subjects/a/versions", schemaBody(userV1, ""), 200, `{"id":1}`)
	rb.expect("POST", "/subjects/a/versions", schemaBody(userV2, ""), 200, `{"id":2}`)
	rb.expect("POST", "/subjects/b/versions", schemaBody(`"string"`, ""), 200, `{"id":3}`)
	rb.expect("PUT", "/config/b", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`)
	rb.expect("DELETE", "/subjects/b/versions/1", "", 200, `1`)
	before := rb.do("GET", "/schemas?deleted=true", "").body
	rb.close()

	rb = startRegistry(t, dir)
	if after := rb.do("GET", "/schemas?deleted=true", "").body; after != before {
		t.Errorf("after restart:\n%s\nbefore:\n%s", after, before)
	}
	rb.expect("GET", "/config/b", "", 200, `{"compatibilityLevel":"NONE"}`)
	rb.expect("POST", "/subjects/a/versions", schemaBody(userV2, ""), 200, `{"id":2}`)
	rb.expect("POST", "/subjects/c/versions", schemaBody(`"bytes"`, ""), 200, `{"id":4}`)
	rb.expect("GET", "/subjects/b/versions", "", 404, `{"error_code":40401,"message":"Subject 'b' not found."}`)
}

// TestConcurrentRegistrations: the same schema registered at once from
// many requests, under one subject and under several, gets one id and
// one version per subject.
func TestConcurrentRegistrations(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	const n = 16
	var wg sync.WaitGroup
	results := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			subject := fmt.Sprintf("s%d", i%4)
			r := rb.do("POST", "/subjects/"+subject+"/versions", schemaBody(userV1, ""))
			results[i] = fmt.Sprintf("%d %s", r.status, r.body)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r != `200 {"id":1}` {
			t.Errorf("request %d: %s", i, r)
		}
	}
	for i := range 4 {
		rb.expect("GET", fmt.Sprintf("/subjects/s%d/versions", i), "", 200, `[1]`)
	}
}

// TestUnparsableRecordIsSkipped: a record of _schemas the registry cannot
// read is logged and skipped, at run time and at start-up; it keeps
// serving.
func TestUnparsableRecordIsSkipped(t *testing.T) {
	dir := t.TempDir()
	rb := startRegistry(t, dir)
	rb.expect("POST", "/subjects/a/versions", schemaBody(`"string"`, ""), 200, `{"id":1}`)
	cl := rb.kafkaClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, kv := range [][2]string{
		{`garbage`, `{}`},
		{`{"keytype":"SCHEMA","subject":"x","version":1,"magic":1}`, `not json`},
		{`{"keytype":"SCHEMA","subject":"x","version":1,"magic":1}`, `{"subject":"x","version":1,"id":1,"schema":"\"int\""}`}, // id 1 is another schema
	} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "_schemas", Key: []byte(kv[0]), Value: []byte(kv[1])}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rb.expect("POST", "/subjects/b/versions", schemaBody(`"int"`, ""), 200, `{"id":2}`)
	rb.expect("GET", "/subjects", "", 200, `["a","b"]`)
	rb.expect("GET", "/schemas/ids/1", "", 200, `{"schema":"\"string\""}`)
	rb.close()

	rb = startRegistry(t, dir)
	rb.expect("GET", "/subjects", "", 200, `["a","b"]`)
	rb.expect("GET", "/schemas/ids/2", "", 200, `{"schema":"\"int\""}`)
	rb.expect("POST", "/subjects/c/versions", schemaBody(`"long"`, ""), 200, `{"id":3}`)
}

// TestReadyz: the registry's listener answers /readyz once _schemas is
// loaded.
func TestReadyz(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	rb.expect("GET", "/subjects", "", 200, `[]`) // waits for the load
	if r := rb.do("GET", "/readyz", ""); r.status != 200 || r.body != "ready\n" {
		t.Errorf("/readyz once loaded: %d %q", r.status, r.body)
	}
}

// TestListenerInUse: a schema.registry.listeners port already bound fails
// start-up with a message naming the key.
func TestListenerInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg, _, err := config.ParseConfig(map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "http.listeners": "", "rest.proxy.listeners": "",
		"schema.registry.listeners": "http://" + ln.Addr().String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg)
	if err == nil {
		b.Close()
		t.Fatal("New succeeded on a port in use")
	}
	if !strings.Contains(err.Error(), "schema.registry.listeners") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("error %q does not name the key and the cause", err)
	}
	// Off: no listener, no registry.
	cfg, _, err = config.ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "http.listeners": "", "rest.proxy.listeners": "", "schema.registry.listeners": ""})
	if err != nil {
		t.Fatal(err)
	}
	b, err = broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if addrs := b.SchemaRegistryAddrs(); len(addrs) != 0 {
		t.Errorf("registry listening on %v with schema.registry.listeners empty", addrs)
	}
	if def, _, _ := config.ParseConfig(nil); len(def.SchemaRegistry.Listeners) != 1 || def.SchemaRegistry.Listeners[0].String() != "http://127.0.0.1:8081" {
		t.Errorf("default schema.registry.listeners = %v", def.SchemaRegistry.Listeners)
	}
}

// TestBasicAuth: with schema.registry.authentication=basic every request
// but the probes needs a login of one of the broker's SASL users.
func TestBasicAuth(t *testing.T) {
	rb := startRegistry(t, t.TempDir(),
		"listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms", "PLAIN",
		"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-plain";`,
		"connection.failed.authentication.delay.ms", "0",
		"schema.registry.authentication", "basic")
	if r := rb.do("GET", "/subjects", ""); r.status != 401 {
		t.Errorf("anonymous: %d %s", r.status, r.body)
	}
	if r := rb.do("GET", "/subjects", "", "Authorization: Basic "+base64.StdEncoding.EncodeToString([]byte("alice:wrong"))); r.status != 401 {
		t.Errorf("wrong password: %d %s", r.status, r.body)
	}
	login := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("alice:alice-plain"))
	if r := rb.do("POST", "/subjects/a/versions", schemaBody(`"string"`, ""), login); r.status != 200 || r.body != `{"id":1}` {
		t.Errorf("alice: %d %s", r.status, r.body)
	}
	if r := rb.do("GET", "/readyz", ""); r.status != 200 {
		t.Errorf("/readyz without a login: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs(rb.url), sr.BasicAuth("alice", "alice-plain"))
	if err != nil {
		t.Fatal(err)
	}
	if subs, err := cl.Subjects(ctx); err != nil || len(subs) != 1 || subs[0] != "a" {
		t.Errorf("franz-go sr with BasicAuth: %v %v", subs, err)
	}
}

// TestHTTPS: an https:// schema.registry.listeners entry serves TLS with
// listener.name.schema_registry.ssl.* (over ssl.*).
func TestHTTPS(t *testing.T) {
	ca, err := tlstest.NewCA("sr-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Server("kbroker-sr")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := tlstest.WriteFile(t.TempDir(), "sr.pem", leaf.KeystorePEM())
	if err != nil {
		t.Fatal(err)
	}
	rb := startRegistry(t, t.TempDir(),
		"schema.registry.listeners", "https://127.0.0.1:0",
		"ssl.keystore.type", "PEM", "ssl.truststore.type", "PEM",
		"listener.name.schema_registry.ssl.keystore.location", ks)
	plain := rb.url
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	rb.url = strings.Replace(rb.url, "http://", "https://", 1)
	rb.hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	rb.expect("POST", "/subjects/tls/versions", schemaBody(`"string"`, ""), 200, `{"id":1}`)
	rb.expect("GET", "/subjects", "", 200, `["tls"]`)
	// Plain HTTP on the TLS port is refused (Go answers 400).
	resp, err := http.Get(plain + "/subjects")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP served on the https listener")
		}
	}
	// A broken keystore stops start-up with the key named.
	cfg, _, err := config.ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "http.listeners": "", "rest.proxy.listeners": "",
		"schema.registry.listeners": "https://127.0.0.1:0", "ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM",
		"listener.name.schema_registry.ssl.keystore.location": "/does/not/exist.pem"})
	if err == nil {
		var b *broker.Broker
		if b, err = broker.New(cfg); err == nil {
			b.Close()
		}
	}
	if err == nil || !strings.Contains(err.Error(), "schema.registry.listeners") && !strings.Contains(err.Error(), "schema_registry") {
		t.Errorf("a missing keystore: %v", err)
	}
}

// TestWritesNeedWriteOnSchemasTopic: with an authorizer, a write needs
// WRITE on Topic:_schemas for the Basic user (403, 40301 otherwise, and
// nothing is written); reads need only the login.
func TestWritesNeedWriteOnSchemasTopic(t *testing.T) {
	rb := startRegistry(t, t.TempDir(),
		"listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms", "PLAIN",
		"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a-pw" user_bob="b-pw";`,
		"connection.failed.authentication.delay.ms", "0",
		"authorizer.class.name", "kafka.security.authorizer.AclAuthorizer",
		// The registry's own Kafka client dials PLAINTEXT as ANONYMOUS.
		"super.users", "User:ANONYMOUS",
		"schema.registry.authentication", "basic")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(rb.b.Addrs()[0].String()))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	acl := kadm.NewACLs().Allow("User:alice").Topics("_schemas").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := kadm.NewClient(adm).CreateACLs(ctx, acl); err != nil || res[0].Err != nil {
		t.Fatalf("creating the ACL: %v %v", err, res)
	}
	as := func(user, pw string) string {
		return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
	}
	alice, bob := as("alice", "a-pw"), as("bob", "b-pw")
	if r := rb.do("POST", "/subjects/a/versions", schemaBody(`"string"`, ""), alice); r.status != 200 || r.body != `{"id":1}` {
		t.Fatalf("alice registers: %d %s", r.status, r.body)
	}
	for _, w := range []struct{ method, path, body string }{
		{"POST", "/subjects/b/versions", schemaBody(`"int"`, "")},
		{"DELETE", "/subjects/a", ""},
		{"PUT", "/config", `{"compatibility":"NONE"}`},
		{"PUT", "/mode/a", `{"mode":"READONLY"}`},
	} {
		r := rb.do(w.method, w.path, w.body, bob)
		if r.status != 403 || !strings.Contains(r.body, `"error_code":40301`) || !strings.Contains(r.body, "User:bob is denied operation Write on Topic: _schemas") {
			t.Errorf("bob %s %s: %d %s", w.method, w.path, r.status, r.body)
		}
	}
	if r := rb.do("GET", "/subjects", "", bob); r.status != 200 || r.body != `["a"]` {
		t.Errorf("bob reads: %d %s", r.status, r.body)
	}
	if r := rb.do("POST", "/subjects/a", schemaBody(`"string"`, ""), bob); r.status != 200 {
		t.Errorf("bob looks a schema up: %d %s", r.status, r.body)
	}
	if r := rb.do("GET", "/config", "", alice); r.status != 200 || !strings.Contains(r.body, "BACKWARD") {
		t.Errorf("config after bob's refused change: %d %s", r.status, r.body)
	}
}
