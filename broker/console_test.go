package broker

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestConsoleWiring: the console answers at / once the Kafka listeners are
// open (an error page before), showing this broker through its own
// listener; http.console.enable=false leaves / unserved.
func TestConsoleWiring(t *testing.T) {
	b, get := openConsoleBroker(t, map[string]string{})
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

	b, get = openConsoleBroker(t, map[string]string{"http.console.enable": "false"})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("/"); code != http.StatusNotFound {
		t.Errorf("/ with http.console.enable=false: %d, want 404", code)
	}
}

// TestConsoleCurlLine: with the REST proxy on, a topic's page shows the
// curl line that produces to it through the proxy; without, none.
func TestConsoleCurlLine(t *testing.T) {
	for _, proxy := range []bool{true, false} {
		props := map[string]string{"auto.create.topics.enable": "true"}
		if proxy {
			props["rest.proxy.listeners"] = "http://127.0.0.1:0"
		}
		b, get := openConsoleBroker(t, props)
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := kadm.NewClient(newClient(t, b)).CreateTopic(testCtx(t), 1, 1, nil, "curled"); err != nil {
			t.Fatal(err)
		}
		code, body := get("/topics/curled")
		body = html.UnescapeString(body)
		want := "curl -X POST -H 'Content-Type: application/vnd.kafka.json.v2+json'"
		if proxy {
			want += ` -d '{"records":[{"key":"k","value":{"hello":"world"}}]}' http://` + b.RestProxyAddrs()[0].String() + "/topics/curled"
		}
		if code != http.StatusOK || strings.Contains(body, want) != proxy || strings.Contains(body, "produce-curl") != proxy {
			t.Errorf("proxy %v: %d, curl line %q shown: %v\n%s", proxy, code, want, strings.Contains(body, want), body)
		}
	}
}

// TestConsoleSASL: on a broker with only a SASL_PLAINTEXT listener the
// console logs in with http.console.sasl.* (PLAIN or SCRAM); without
// credentials, or with a wrong password, its pages say why they are empty.
func TestConsoleSASL(t *testing.T) {
	props := func(extra ...string) map[string]string {
		p := map[string]string{
			"listeners":                  "SASL_PLAINTEXT://127.0.0.1:0",
			"sasl.jaas.config":           `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-plain";`,
			"sasl.scram.bootstrap.users": "SCRAM-SHA-512=[name=console,password=console-secret]",
		}
		for i := 0; i+1 < len(extra); i += 2 {
			p[extra[i]] = extra[i+1]
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		code  int
		want  string
	}{
		{"plain", props("http.console.sasl.mechanism", "PLAIN", "http.console.sasl.username", "alice", "http.console.sasl.password", "alice-plain"), 200, `id="brokers"`},
		{"scram", props("http.console.sasl.mechanism", "SCRAM-SHA-512", "http.console.sasl.username", "console", "http.console.sasl.password", "console-secret"), 200, `id="brokers"`},
		{"no credentials", props(), http.StatusBadGateway, "needs a PLAINTEXT listener"},
		{"wrong password", props("http.console.sasl.mechanism", "PLAIN", "http.console.sasl.username", "alice", "http.console.sasl.password", "nope"), http.StatusBadGateway, `class="error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, get := openConsoleBroker(t, tc.props)
			if err := b.Start(); err != nil {
				t.Fatal(err)
			}
			if code, body := get("/"); code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("/: %d, want %d with %q:\n%s", code, tc.code, tc.want, body)
			}
		})
	}
}

// openConsoleBroker creates (not starts) a broker with an HTTP listener
// and returns it with a GET of its HTTP server.
func openConsoleBroker(t *testing.T, props map[string]string) (*Broker, func(string) (int, string)) {
	t.Helper()
	if props["listeners"] == "" {
		props["listeners"] = "PLAINTEXT://127.0.0.1:0"
	}
	props["log.dirs"], props["http.listeners"] = t.TempDir(), "http://127.0.0.1:0"
	if _, ok := props["schema.registry.listeners"]; !ok {
		props["schema.registry.listeners"] = ""
	}
	if _, ok := props["rest.proxy.listeners"]; !ok {
		props["rest.proxy.listeners"] = ""
	}
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

// TestConsoleSchemas: with the Schema Registry on, the Schemas page lists
// its subjects, a subject's page shows a version, a diff between two and
// the answer of the compatibility test box, and the message browser shows
// a record that carries a schema id decoded, with its id.
func TestConsoleSchemas(t *testing.T) {
	b, get := openConsoleBroker(t, map[string]string{"schema.registry.listeners": "http://127.0.0.1:0"})
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	reg, err := sr.NewClient(sr.URLs("http://" + b.SchemaRegistryAddrs()[0].String()))
	if err != nil {
		t.Fatal(err)
	}
	v1 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}`
	v2 := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}`
	var id2 int
	for _, s := range []string{v1, v2} {
		ss, err := reg.CreateSchema(ctx, "users-value", sr.Schema{Schema: s})
		if err != nil {
			t.Fatal(err)
		}
		id2 = ss.ID
	}
	code, body := get("/schemas")
	if code != http.StatusOK || !strings.Contains(body, `href="/schemas/users-value"`) || !strings.Contains(body, "<td>2</td>") || !strings.Contains(body, "BACKWARD (global)") {
		t.Errorf("/schemas: %d\n%s", code, body)
	}
	code, body = get("/schemas/users-value?version=2&diff=1")
	body = html.UnescapeString(body)
	if code != http.StatusOK || !strings.Contains(body, `"name": "age"`) || !strings.Contains(body, "--- version 1") ||
		!strings.Contains(body, "+++ version 2") || !strings.Contains(body, `+    {`) {
		t.Errorf("version 2 with a diff from 1: %d\n%s", code, body)
	}

	// The test box: a type change of name is not compatible.
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatalf("no CSRF token on the page:\n%s", body)
	}
	form := url.Values{"csrf": {csrf[1]}, "type": {"AVRO"}, "schema": {`{"type":"record","name":"User","fields":[{"name":"name","type":"int"}]}`}}
	resp, err := http.PostForm("http://"+b.HTTPAddrs()[0].String()+"/schemas/users-value/test", form)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if page := html.UnescapeString(string(data)); !strings.Contains(page, "Not compatible:") || !strings.Contains(page, "name") {
		t.Errorf("an incompatible schema tested: %d\n%s", resp.StatusCode, page)
	}
	form.Set("schema", v2)
	resp, err = http.PostForm("http://"+b.HTTPAddrs()[0].String()+"/schemas/users-value/test", form)
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(data), "Compatible with the latest version") {
		t.Errorf("a compatible schema tested: %d\n%s", resp.StatusCode, data)
	}
	form.Set("csrf", "wrong")
	if resp, err := http.PostForm("http://"+b.HTTPAddrs()[0].String()+"/schemas/users-value/test", form); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a wrong CSRF token: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// A record in the registry's wire format, decoded in the browser.
	var serde sr.Serde
	serde.Register(id2, map[string]any{}, sr.EncodeFn(func(v any) ([]byte, error) { return avro.Marshal(avro.MustParse(v2), v) }))
	val, err := serde.Encode(map[string]any{"name": "ann", "age": 41})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(newClient(t, b)).CreateTopic(ctx, 1, 1, nil, "users"); err != nil {
		t.Fatal(err)
	}
	if err := newClient(t, b).ProduceSync(ctx, &kgo.Record{Topic: "users", Value: val}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, body = get("/messages?topic=users&partition=0&offset=0")
	body = html.UnescapeString(body)
	if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf("schema %d", id2)) || !strings.Contains(body, `"name": "ann"`) || !strings.Contains(body, `"age": 41`) {
		t.Errorf("the browser decoding a record with schema id %d: %d\n%s", id2, code, body)
	}
}
