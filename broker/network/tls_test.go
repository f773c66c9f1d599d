package network

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network/tlstest"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tlsFixture is a CA, a server keystore file and a truststore file.
type tlsFixture struct {
	ca              *tlstest.CA
	keystore, trust string
}

func newTLSFixture(t *testing.T) tlsFixture {
	t.Helper()
	ca, err := tlstest.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server("broker")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ks, err := tlstest.WriteFile(dir, "keystore.pem", srv.KeystorePEM())
	if err != nil {
		t.Fatal(err)
	}
	ts, err := tlstest.WriteFile(dir, "truststore.pem", ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	return tlsFixture{ca: ca, keystore: ks, trust: ts}
}

// startTLSServer serves h on one SSL listener with tc, recording the
// principal of every request in principals.
func startTLSServer(t *testing.T, tc *config.TLSConfig) (*Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var principals []string
	s := NewServer(Config{
		Listeners:             []config.Listener{{Name: "SSL", Host: "127.0.0.1", SecurityProtocol: config.ProtoSSL, TLS: tc}},
		SocketRequestMaxBytes: 1 << 20,
		Handler: HandlerFunc(func(rc *RequestContext, req protocol.Request) kmsg.Response {
			mu.Lock()
			principals = append(principals, rc.Principal)
			mu.Unlock()
			return req.Body.(*kmsg.MetadataRequest).ResponseKind()
		}),
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), principals...)
	}
}

func (f tlsFixture) config(clientAuth string) *config.TLSConfig {
	return &config.TLSConfig{KeystoreLocation: f.keystore, TruststoreLocation: f.trust, ClientAuth: clientAuth,
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
}

// clientConf trusts ca and presents cert (if any) whatever CAs the server
// names, as OpenSSL clients do (Go's own client would send none).
func clientConf(ca *tlstest.CA, cert *tlstest.Leaf) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	c := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if cert != nil {
		tc, err := cert.TLSCertificate()
		if err != nil {
			panic(err)
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc, nil }
	}
	return c
}

// roundTrips sends n pipelined Metadata requests and checks the answers
// come back in order; it returns the first error met.
func roundTrips(addr string, conf *tls.Config, n int) error {
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	var out []byte
	for i := 0; i < n; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 4
		out = append(out, frame(req, int32(i))...)
	}
	if _, err := nc.Write(out); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		var hdr [8]byte
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			return err
		}
		size := int(hdr[0])<<24 | int(hdr[1])<<16 | int(hdr[2])<<8 | int(hdr[3])
		corr := int32(hdr[4])<<24 | int32(hdr[5])<<16 | int32(hdr[6])<<8 | int32(hdr[7])
		if corr != int32(i) {
			return &orderError{want: i, got: corr}
		}
		if _, err := io.CopyN(io.Discard, nc, int64(size-4)); err != nil {
			return err
		}
	}
	return nil
}

type orderError struct {
	want int
	got  int32
}

func (e *orderError) Error() string { return "response out of order" }

func TestTLSListenerPrincipals(t *testing.T) {
	f := newTLSFixture(t)
	client, err := f.ca.Client(pkix.Name{CommonName: "client", OrganizationalUnit: []string{"eng"}, Organization: []string{"kbroker"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlstest.NewCA("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.Client(pkix.Name{CommonName: "client"})
	if err != nil {
		t.Fatal(err)
	}
	const want = "User:CN=client,OU=eng,O=kbroker"

	t.Run("required", func(t *testing.T) {
		s, principals := startTLSServer(t, f.config(config.ClientAuthRequired))
		addr := s.Addrs()[0].String()
		if err := roundTrips(addr, clientConf(f.ca, &client), 20); err != nil {
			t.Fatalf("mTLS client: %v", err)
		}
		for _, p := range principals() {
			if p != want {
				t.Fatalf("principal %q, want %q", p, want)
			}
		}
		if len(principals()) != 20 {
			t.Fatalf("%d requests handled, want 20", len(principals()))
		}
		if err := roundTrips(addr, clientConf(f.ca, &foreign), 1); err == nil {
			t.Fatal("a client certificate of another CA was accepted")
		}
		if err := roundTrips(addr, clientConf(f.ca, nil), 1); err == nil {
			t.Fatal("a client without a certificate was accepted with ssl.client.auth=required")
		}
		if n := len(principals()); n != 20 {
			t.Fatalf("refused clients reached the handler: %d requests", n)
		}
	})
	t.Run("requested", func(t *testing.T) {
		s, principals := startTLSServer(t, f.config(config.ClientAuthRequested))
		addr := s.Addrs()[0].String()
		if err := roundTrips(addr, clientConf(f.ca, nil), 1); err != nil {
			t.Fatalf("client without a certificate: %v", err)
		}
		if err := roundTrips(addr, clientConf(f.ca, &client), 1); err != nil {
			t.Fatalf("client with a certificate: %v", err)
		}
		if err := roundTrips(addr, clientConf(f.ca, &foreign), 1); err == nil {
			t.Fatal("a client certificate of another CA was accepted")
		}
		if got := principals(); len(got) != 2 || got[0] != AnonymousPrincipal || got[1] != want {
			t.Fatalf("principals %q, want [%s %s]", got, AnonymousPrincipal, want)
		}
	})
	t.Run("none", func(t *testing.T) {
		s, principals := startTLSServer(t, f.config(config.ClientAuthNone))
		if err := roundTrips(s.Addrs()[0].String(), clientConf(f.ca, &client), 1); err != nil {
			t.Fatal(err)
		}
		if got := principals(); len(got) != 1 || got[0] != AnonymousPrincipal {
			t.Fatalf("principals %q, want ANONYMOUS (no client auth asked)", got)
		}
	})
	t.Run("mapping-rules", func(t *testing.T) {
		tc := f.config(config.ClientAuthRequired)
		tc.PrincipalMappingRules = "RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/U,DEFAULT"
		s, principals := startTLSServer(t, tc)
		if err := roundTrips(s.Addrs()[0].String(), clientConf(f.ca, &client), 1); err != nil {
			t.Fatal(err)
		}
		if got := principals(); len(got) != 1 || got[0] != "User:CLIENT@ENG" {
			t.Fatalf("principals %q, want User:CLIENT@ENG", got)
		}
	})
	t.Run("protocols", func(t *testing.T) {
		tc := f.config(config.ClientAuthNone)
		tc.MinVersion = tls.VersionTLS13
		s, _ := startTLSServer(t, tc)
		conf := clientConf(f.ca, nil)
		conf.MaxVersion = tls.VersionTLS12
		if err := roundTrips(s.Addrs()[0].String(), conf, 1); err == nil {
			t.Fatal("a TLS 1.2 client was accepted with only TLSv1.3 enabled")
		}
		conf.MaxVersion = tls.VersionTLS13
		if err := roundTrips(s.Addrs()[0].String(), conf, 1); err != nil {
			t.Fatal(err)
		}
	})
}

// TestTLSReload replaces the keystore file of a running listener: the next
// handshake presents the new certificate.
func TestTLSReload(t *testing.T) {
	f := newTLSFixture(t)
	s, _ := startTLSServer(t, f.config(config.ClientAuthNone))
	addr := s.Addrs()[0].String()
	serverCN := func() string {
		nc, err := tls.Dial("tcp", addr, clientConf(f.ca, nil))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		return nc.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := serverCN(); cn != "broker" {
		t.Fatalf("server certificate CN %q, want broker", cn)
	}
	renewed, err := f.ca.Server("broker-renewed")
	if err != nil {
		t.Fatal(err)
	}
	// A keystore that does not load keeps the old certificate.
	if err := os.WriteFile(f.keystore, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := serverCN(); cn != "broker" {
		t.Fatalf("after a bad keystore: CN %q, want the old broker", cn)
	}
	if err := os.WriteFile(f.keystore, renewed.KeystorePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file's mtime may equal the old one at coarse resolution; move it.
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(f.keystore, future, future); err != nil {
		t.Fatal(err)
	}
	if cn := serverCN(); cn != "broker-renewed" {
		t.Fatalf("after reload: CN %q, want broker-renewed", cn)
	}
}

func TestTLSStartErrors(t *testing.T) {
	f := newTLSFixture(t)
	for name, tc := range map[string]*config.TLSConfig{
		"missing keystore": {KeystoreLocation: f.keystore + ".missing"},
		"not a keystore":   {KeystoreLocation: f.trust},
		"bad truststore":   {KeystoreLocation: f.keystore, TruststoreLocation: f.keystore + ".missing"},
		"bad rules":        {KeystoreLocation: f.keystore, PrincipalMappingRules: "RULE:x"},
	} {
		t.Run(name, func(t *testing.T) {
			s := NewServer(Config{Listeners: []config.Listener{{Name: "SSL", Host: "127.0.0.1", SecurityProtocol: config.ProtoSSL, TLS: tc}}})
			defer s.Close()
			err := s.Start()
			if err == nil || !strings.Contains(err.Error(), "listener SSL") {
				t.Fatalf("Start: %v, want an error naming the listener", err)
			}
			if len(s.Addrs()) != 0 {
				t.Fatal("a listener was bound despite the error")
			}
		})
	}
}

// TestDistinguishedName: the expected strings are what Java's
// X500Principal.getName() printed for the same certificates (checked with
// the JDK once; Kafka's default principal is that string).
func TestDistinguishedName(t *testing.T) {
	ca, err := tlstest.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{CommonName: "alice"}, "CN=alice"},
		{pkix.Name{CommonName: "a,b+c", Organization: []string{"Org"}, Country: []string{"US"}}, `CN=a\,b\+c,O=Org,C=US`},
		{pkix.Name{CommonName: " lead#=", Locality: []string{"Paris"}}, `CN=\ lead\#\=,L=Paris`},
		{pkix.Name{CommonName: `q"\<>;`, OrganizationalUnit: []string{"u1", "u2"}}, `CN=q\"\\\<\>\;,OU=u1+OU=u2`},
		{pkix.Name{CommonName: "x", SerialNumber: "123", ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "a@b.c"}}},
			"1.2.840.113549.1.9.1=#0c056140622e63,2.5.4.5=#1303313233,CN=x"},
		{pkix.Name{CommonName: "x", ExtraNames: []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "example"}}}, "DC=example,CN=x"},
	} {
		leaf, err := ca.Client(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := distinguishedName(leaf.Cert); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPrincipalMappingRules(t *testing.T) {
	const dn = "CN=kafka-client,OU=ServiceUsers,O=Org,C=US"
	for _, tc := range []struct {
		rules, dn, want string
		fail            bool
	}{
		{"", dn, dn, false},
		{"DEFAULT", dn, dn, false},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", dn, "kafka-client", false},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U, DEFAULT", dn, "KAFKA-CLIENT", false},
		{"RULE:^CN=(.*?),OU=Admins.*$/$1/L,DEFAULT", dn, dn, false},
		{"RULE:^CN=(.*?),OU=Admins.*$/$1/", dn, "", true},
		{"RULE:^CN=([^,]*),OU=(.*?),.*$/$1.$2/L", dn, "kafka-client.serviceusers", false},
		{"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,\nDEFAULT", "CN=Kafka.Client,O=x", "kafka.client", false},
		{`RULE:^CN=(.*)$/user\/$1/`, "CN=a", "user/a", false},
		{"RULE:^CN=(.*)$/$1x/", "CN=a", "ax", false},
	} {
		m, err := parsePrincipalRules(tc.rules)
		if err != nil {
			t.Fatalf("%q: %v", tc.rules, err)
		}
		got, err := m.name(tc.dn)
		if (err != nil) != tc.fail || got != tc.want {
			t.Errorf("rules %q on %q: %q, %v; want %q (fail %v)", tc.rules, tc.dn, got, err, tc.want, tc.fail)
		}
	}
	for _, bad := range []string{"RULE:abc", "NOPE", "RULE:(/x/"} {
		if _, err := parsePrincipalRules(bad); err == nil {
			t.Errorf("rules %q parsed", bad)
		}
	}
}

// TestTLSInlinePEM serves a keystore and truststore given inline, folded
// onto one line as a properties file with continuations delivers them.
func TestTLSInlinePEM(t *testing.T) {
	ca, err := tlstest.NewCA("inline-ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server("inline")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client(pkix.Name{CommonName: "inline-client"})
	if err != nil {
		t.Fatal(err)
	}
	fold := func(b []byte) string { return strings.Join(strings.Fields(string(b)), " ") }
	tc := &config.TLSConfig{KeystoreCertificateChain: fold(srv.CertPEM), KeystoreKey: fold(srv.KeyPEM),
		TruststoreCertificates: fold(ca.PEM), ClientAuth: config.ClientAuthRequired,
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
	s, principals := startTLSServer(t, tc)
	if err := roundTrips(s.Addrs()[0].String(), clientConf(ca, &client), 3); err != nil {
		t.Fatal(err)
	}
	if got := principals(); len(got) != 3 || got[0] != "User:CN=inline-client" {
		t.Fatalf("principals %q", got)
	}
}

// TestTLSIdle: connections.max.idle.ms closes a TLS connection that never
// starts its handshake and one idle after a request, as on PLAINTEXT.
func TestTLSIdle(t *testing.T) {
	f := newTLSFixture(t)
	lim := unlimited()
	lim.ConnectionsMaxIdleMs = 200
	s := NewServer(Config{
		Listeners:             []config.Listener{{Name: "SSL", Host: "127.0.0.1", SecurityProtocol: config.ProtoSSL, TLS: f.config(config.ClientAuthNone)}},
		SocketRequestMaxBytes: 1 << 20,
		Handler:               metadataHandler(),
		Limits:                &lim,
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	start := time.Now()
	expectClosed(t, dial(t, s)) // no ClientHello
	nc, err := tls.Dial("tcp", s.Addrs()[0].String(), clientConf(f.ca, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := roundTrip(nc, 7); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, nc)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("idle TLS connections closed after %v, want about 2 × 200ms", d)
	}
}
