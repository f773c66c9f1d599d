package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"testing"

	"github.com/kbroker/kbroker/broker/network/tlstest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDynamicListenerKeystore switches a running SSL listener to another
// keystore file with listener.name.ssl.ssl.keystore.location, as
// kafka-configs --entity-type brokers --entity-name 0 --alter does: the next
// handshake presents the new certificate; a file that does not load is
// refused and the listener keeps its certificate.
func TestDynamicListenerKeystore(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlstest.NewCA("dyn-ca")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, cn := range []string{"first", "second"} {
		leaf, err := ca.Server(cn)
		if err != nil {
			t.Fatal(err)
		}
		if files[cn], err = tlstest.WriteFile(dir, cn+".pem", leaf.KeystorePEM()); err != nil {
			t.Fatal(err)
		}
	}
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
		"ssl.keystore.type":              "PEM",
		"ssl.truststore.type":            "PEM",
		"ssl.keystore.location":          files["first"],
	})
	ctx := testCtx(t)
	adm, _ := newAdmin(t, b)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	served := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", b.Addrs()[1].String(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("serving %q before the change", cn)
	}
	key := "listener.name.ssl.ssl.keystore.location"
	if err := alterBroker(ctx, adm, 0, kadm.AlterConfig{Name: key, Value: strp(files["second"])}); err != nil {
		t.Fatal(err)
	}
	if cn := served(); cn != "second" {
		t.Fatalf("serving %q after the change", cn)
	}
	err = alterBroker(ctx, adm, 0, kadm.AlterConfig{Name: key, Value: strp(dir + "/missing.pem")})
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("a missing keystore: %v", err)
	}
	if cn := served(); cn != "second" {
		t.Fatalf("serving %q after a refused change", cn)
	}
	if c, _ := brokerConfig(t, ctx, adm, 0, key); c.MaybeValue() != files["second"] {
		t.Fatalf("%s described as %+v", key, c)
	}
}
