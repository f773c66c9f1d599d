package broker

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker/network/tlstest"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestHTTPSBasicAuth starts a broker whose HTTP listener is https:// with
// listener.name.http.ssl.* and http.authentication=basic: the probes answer
// without a login, over TLS with the configured certificate; /metrics and
// the console ask for a login and accept a PLAIN user of the SASL listener,
// a SCRAM user of sasl.scram.bootstrap.users and a SCRAM user a client
// created with AlterUserScramCredentials, each with its own password only.
func TestHTTPSBasicAuth(t *testing.T) {
	ca, err := tlstest.NewCA("http-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Server("kbroker-http")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := tlstest.WriteFile(t.TempDir(), "http.pem", leaf.KeystorePEM())
	if err != nil {
		t.Fatal(err)
	}
	o := saslOverrides() // PLAIN alice/alice-plain, SCRAM-SHA-256 alice/alice-secret
	o["http.listeners"] = "https://127.0.0.1:0"
	o["rest.proxy.listeners"] = ""
	o["http.authentication"] = "basic"
	o["ssl.keystore.type"], o["ssl.truststore.type"] = "PEM", "PEM"
	o["listener.name.http.ssl.keystore.location"] = ks
	b := startTestBroker(t, t.TempDir(), o)

	ctx := testCtx(t)
	adm, _ := newAdmin(t, b)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + b.HTTPAddrs()[0].String()
	get := func(path, user, password string) *http.Response {
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
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp
	}

	for _, p := range []string{"/healthz", "/readyz"} {
		resp := get(p, "", "")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s without a login: %d, want 200", p, resp.StatusCode)
		}
		if resp.TLS == nil || resp.TLS.PeerCertificates[0].Subject.CommonName != "kbroker-http" {
			t.Errorf("%s: not served with the configured certificate", p)
		}
	}
	for _, p := range []string{"/metrics", "/"} {
		if resp := get(p, "", ""); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Basic realm="kbroker"` {
			t.Errorf("%s without a login: %d %q, want 401 with the Basic challenge", p, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	for _, c := range []struct {
		what, user, password string
		want                 int
	}{
		{"PLAIN user", "alice", "alice-plain", http.StatusOK},
		{"bootstrap SCRAM-SHA-256 user", "alice", "alice-secret", http.StatusOK},
		{"SCRAM-SHA-512 user made by a client", "bob", "bob-secret", http.StatusOK},
		{"wrong password", "alice", "alice-wrong", http.StatusUnauthorized},
		{"another user's password", "bob", "alice-secret", http.StatusUnauthorized},
		{"unknown user", "mallory", "bob-secret", http.StatusUnauthorized},
	} {
		if resp := get("/metrics", c.user, c.password); resp.StatusCode != c.want {
			t.Errorf("/metrics as %s: %d, want %d", c.what, resp.StatusCode, c.want)
		}
	}
	// The scrape is the real one.
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.SetBasicAuth("bob", "bob-secret")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "kafka_server_replicamanager_partitioncount") {
		t.Errorf("/metrics with a login does not hold the broker's metrics:\n%.500s", body)
	}
	if resp := get("/", "alice", "alice-plain"); resp.StatusCode != http.StatusOK {
		t.Errorf("the console with a login: %d, want 200", resp.StatusCode)
	}
}
