package compat

// TLS listeners with certificates made at run time (broker/network/tlstest):
// franz-go, kcat (librdkafka), sarama and the Java client (tls_java_test.go) over SSL, over mTLS (a
// named listener with ssl.client.auth=required), and over SASL_SSL with
// SCRAM; a client certificate of another CA, or none where one is
// required, is refused.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/kbroker/kbroker/broker/network/tlstest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// tlsBroker is a broker with an SSL listener (client certificates
// requested), an MTLS listener (SSL, certificates required), a SASL_SSL
// listener, and the harness's PLAINTEXT one; and the PEM files clients use.
type tlsBroker struct {
	*brokerProc
	ssl, mtls, saslSSL string
	// caFile is the CA clients trust; clientCert/clientKey are a client
	// certificate of that CA, foreignCert/foreignKey one of another CA.
	caFile                  string
	clientCert, clientKey   string
	foreignCert, foreignKey string
	// clientKeystore and foreignKeystore are key + chain in one file
	// (Java's PEM keystore).
	clientKeystore, foreignKeystore string
	ca                              *tlstest.CA
	client, foreign                 tlstest.Leaf
}

func startTLSBroker(t testing.TB) *tlsBroker {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("kbroker did not build: %v", buildErr)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ca, err := tlstest.NewCA("kbroker-test-ca")
	must(err)
	other, err := tlstest.NewCA("other-ca")
	must(err)
	srv, err := ca.Server("kbroker")
	must(err)
	client, err := ca.Client(pkix.Name{CommonName: "tls-client", Organization: []string{"kbroker"}})
	must(err)
	foreign, err := other.Client(pkix.Name{CommonName: "tls-client", Organization: []string{"kbroker"}})
	must(err)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p, err := tlstest.WriteFile(dir, name, b)
		must(err)
		return p
	}
	b := &tlsBroker{
		ca: ca, client: client, foreign: foreign,
		caFile:          write("ca.pem", ca.PEM),
		clientCert:      write("client.crt", client.CertPEM),
		clientKey:       write("client.key", client.KeyPEM),
		foreignCert:     write("foreign.crt", foreign.CertPEM),
		foreignKey:      write("foreign.key", foreign.KeyPEM),
		clientKeystore:  write("client-keystore.pem", client.KeystorePEM()),
		foreignKeystore: write("foreign-keystore.pem", foreign.KeystorePEM()),
	}
	keystore := write("broker.pem", srv.KeystorePEM())
	p := &brokerProc{t: t, dataDir: t.TempDir(), port: freePort(t)}
	addr := func() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))) }
	b.ssl, b.mtls, b.saslSSL = addr(), addr(), addr()
	p.overrides = []string{
		// PLAINTEXT last: the broker binds listeners in order, so once the
		// harness sees it accept, the TLS ones are bound too.
		fmt.Sprintf("listeners=SSL://%s,MTLS://%s,SASL_SSL://%s,PLAINTEXT://%s", b.ssl, b.mtls, b.saslSSL, p.Addr()),
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + keystore,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + b.caFile,
		"ssl.client.auth=requested",
		"listener.name.mtls.ssl.client.auth=required",
		fmt.Sprintf("sasl.scram.bootstrap.users=SCRAM-SHA-256=[name=%s,password=%s],SCRAM-SHA-512=[name=%[1]s,password=%[2]s]", saslUser, saslScramPass),
	}
	t.Cleanup(p.cleanup)
	p.start()
	b.brokerProc = p
	return b
}

// tlsConf trusts the test CA and presents cert, if any, whatever CAs the
// broker names (as librdkafka and Java do), so a foreign certificate reaches
// the broker's verification.
func (b *tlsBroker) tlsConf(cert *tlstest.Leaf) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(b.ca.Cert)
	c := &tls.Config{RootCAs: pool}
	if cert != nil {
		tc, err := cert.TLSCertificate()
		if err != nil {
			b.t.Fatal(err)
		}
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc, nil }
	}
	return c
}

// franzRoundTrip creates topic through addr, produces n records and reads
// them back, all with opts.
func franzRoundTrip(t *testing.T, addr, topic string, n int, opts ...kgo.Opt) {
	t.Helper()
	cl := newKgo(t, addr, append([]kgo.Opt{kgo.MetadataMinAge(10 * time.Millisecond)}, opts...)...)
	createTopic(t, kadm.NewClient(cl), topic, 2, nil)
	ctx := testCtx(t)
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("m%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce over %s: %v", addr, err)
		}
	}
	got := consumeN(t, addr, topic, 2, n, opts...)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	if len(seen) != n {
		t.Fatalf("consumed %d distinct records, want %d", len(seen), n)
	}
}

// franzRefused checks that a client with opts cannot reach addr.
func franzRefused(t *testing.T, addr, what string, opts ...kgo.Opt) {
	t.Helper()
	cl := newKgo(t, addr, append([]kgo.Opt{kgo.RequestRetries(0), kgo.RetryTimeout(0)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := cl.Ping(ctx); err == nil {
		t.Fatalf("%s: the broker accepted the client", what)
	} else if ctx.Err() != nil {
		t.Fatalf("%s: the broker neither accepted nor refused the client before the deadline", what)
	}
}

func TestTLSFranz(t *testing.T) {
	b := startTLSBroker(t)
	t.Run("ssl", func(t *testing.T) {
		franzRoundTrip(t, b.ssl, "tls-franz", 30, kgo.DialTLSConfig(b.tlsConf(nil)))
	})
	t.Run("mtls", func(t *testing.T) {
		franzRoundTrip(t, b.mtls, "mtls-franz", 30, kgo.DialTLSConfig(b.tlsConf(&b.client)))
		franzRoundTrip(t, b.ssl, "mtls-franz-requested", 30, kgo.DialTLSConfig(b.tlsConf(&b.client)))
	})
	t.Run("refused", func(t *testing.T) {
		franzRefused(t, b.mtls, "no client certificate on a required listener", kgo.DialTLSConfig(b.tlsConf(nil)))
		franzRefused(t, b.mtls, "a client certificate of another CA", kgo.DialTLSConfig(b.tlsConf(&b.foreign)))
		franzRefused(t, b.ssl, "a client certificate of another CA (requested)", kgo.DialTLSConfig(b.tlsConf(&b.foreign)))
		untrusting := &tls.Config{RootCAs: x509.NewCertPool()}
		franzRefused(t, b.ssl, "a client that does not trust the broker's CA", kgo.DialTLSConfig(untrusting))
	})
	t.Run("sasl_ssl-scram", func(t *testing.T) {
		auth := scram.Auth{User: saslUser, Pass: saslScramPass}
		franzRoundTrip(t, b.saslSSL, "sasl-ssl-franz-256", 30, kgo.DialTLSConfig(b.tlsConf(nil)), kgo.SASL(auth.AsSha256Mechanism()))
		franzRoundTrip(t, b.saslSSL, "sasl-ssl-franz-512", 30, kgo.DialTLSConfig(b.tlsConf(nil)), kgo.SASL(auth.AsSha512Mechanism()))
		wrong := scram.Auth{User: saslUser, Pass: "wrong"}
		franzRefused(t, b.saslSSL, "a wrong SCRAM password", kgo.DialTLSConfig(b.tlsConf(nil)), kgo.SASL(wrong.AsSha256Mechanism()))
	})
	b.Alive()
}

// kcatTLSArgs are kcat's options for the test CA, with a client
// certificate when cert and key are set.
func kcatTLSArgs(proto, ca, cert, key string) []string {
	args := []string{"-X", "security.protocol=" + proto, "-X", "ssl.ca.location=" + ca, "-X", "broker.address.family=v4"}
	if cert != "" {
		args = append(args, "-X", "ssl.certificate.location="+cert, "-X", "ssl.key.location="+key)
	}
	return args
}

// kcatRoundTrip produces n messages through addr and consumes them back.
func kcatRoundTrip(t *testing.T, plainAddr, addr, topic string, n int, sec []string) {
	t.Helper()
	createTopic(t, newAdmin(t, plainAddr), topic, 2, nil)
	var in strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "m%d\n", i)
	}
	runKcat(t, in.String(), append([]string{"-P", "-b", addr, "-t", topic, "-X", "acks=all"}, sec...)...)
	out := runKcat(t, "", append([]string{"-C", "-b", addr, "-t", topic, "-o", "beginning", "-c", strconv.Itoa(n), "-e", "-q", "-f", "%s\n"}, sec...)...)
	got := map[string]bool{}
	for _, l := range strings.Fields(out) {
		got[l] = true
	}
	for i := 0; i < n; i++ {
		if !got[fmt.Sprintf("m%d", i)] {
			t.Fatalf("message m%d not consumed; got:\n%s", i, out)
		}
	}
	md := runKcat(t, "", append([]string{"-L", "-b", addr}, sec...)...)
	if want := "at " + addr; !strings.Contains(md, want) {
		t.Fatalf("metadata does not advertise the listener (%q):\n%s", want, md)
	}
}

// kcatRefused runs kcat -L with sec against addr and expects a failure.
func kcatRefused(t *testing.T, addr, what string, sec []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), append([]string{"-L", "-b", addr, "-m", "5"}, sec...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("%s: kcat -L: %v (ctx %v)\n%s", what, err, ctx.Err(), out.String())
	}
}

func TestTLSKcat(t *testing.T) {
	kcatPath(t)
	b := startTLSBroker(t)
	t.Run("ssl", func(t *testing.T) {
		kcatRoundTrip(t, b.Addr(), b.ssl, "tls-kcat", 50, kcatTLSArgs("ssl", b.caFile, "", ""))
	})
	t.Run("mtls", func(t *testing.T) {
		kcatRoundTrip(t, b.Addr(), b.mtls, "mtls-kcat", 50, kcatTLSArgs("ssl", b.caFile, b.clientCert, b.clientKey))
	})
	t.Run("refused", func(t *testing.T) {
		kcatRefused(t, b.mtls, "no client certificate", kcatTLSArgs("ssl", b.caFile, "", ""))
		kcatRefused(t, b.mtls, "a client certificate of another CA", kcatTLSArgs("ssl", b.caFile, b.foreignCert, b.foreignKey))
		kcatRefused(t, b.ssl, "a client certificate of another CA (requested)", kcatTLSArgs("ssl", b.caFile, b.foreignCert, b.foreignKey))
	})
	t.Run("sasl_ssl-scram", func(t *testing.T) {
		sec := append(kcatTLSArgs("sasl_ssl", b.caFile, "", ""),
			"-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username="+saslUser, "-X", "sasl.password="+saslScramPass)
		kcatRoundTrip(t, b.Addr(), b.saslSSL, "sasl-ssl-kcat", 50, sec)
		bad := append(kcatTLSArgs("sasl_ssl", b.caFile, "", ""),
			"-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username="+saslUser, "-X", "sasl.password=wrong")
		kcatRefused(t, b.saslSSL, "a wrong SCRAM password", bad)
	})
	b.Alive()
}

// saramaRoundTrip produces n messages to partition 0 of topic through addr
// with cfg and reads them back.
func saramaRoundTrip(t *testing.T, addr, topic string, cfg *sarama.Config) {
	t.Helper()
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	defer prod.Close()
	const n = 10
	for i := 0; i < n; i++ {
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	cons, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("consume partition: %v", err)
	}
	defer pc.Close()
	ctx := testCtx(t)
	for i := 0; i < n; i++ {
		select {
		case m := <-pc.Messages():
			if string(m.Value) != fmt.Sprintf("v%d", i) || m.Offset != int64(i) {
				t.Fatalf("message %d: offset %d value %q", i, m.Offset, m.Value)
			}
		case err := <-pc.Errors():
			t.Fatalf("consume: %v", err)
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d", i, n)
		}
	}
}

func TestTLSSarama(t *testing.T) {
	b := startTLSBroker(t)
	adm := newAdmin(t, b.Addr())
	tlsCfg := func(cfg *sarama.Config, cert *tlstest.Leaf) *sarama.Config {
		cfg.Net.TLS.Enable = true
		cfg.Net.TLS.Config = b.tlsConf(cert)
		return cfg
	}
	t.Run("mtls", func(t *testing.T) {
		createTopic(t, adm, "mtls-sarama", 1, nil)
		saramaRoundTrip(t, b.mtls, "mtls-sarama", tlsCfg(saramaConfig(sarama.V3_0_0_0, sarama.CompressionNone, false), &b.client))
		bad := tlsCfg(saramaConfig(sarama.V3_0_0_0, sarama.CompressionNone, false), &b.foreign)
		bad.Metadata.Retry.Max = 0
		if cl, err := sarama.NewClient([]string{b.mtls}, bad); err == nil {
			cl.Close()
			t.Fatal("a client certificate of another CA was accepted")
		}
	})
	t.Run("sasl_ssl-scram", func(t *testing.T) {
		createTopic(t, adm, "sasl-ssl-sarama", 1, nil)
		saramaRoundTrip(t, b.saslSSL, "sasl-ssl-sarama", tlsCfg(saramaSASLConfig(sarama.SASLTypeSCRAMSHA512, saslScramPass, sarama.SASLHandshakeV1), nil))
	})
	b.Alive()
}

// TestTLSStartErrors: a TLS listener kbroker cannot serve stops start-up
// with a message naming the property.
func TestTLSStartErrors(t *testing.T) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	for _, tc := range []struct {
		overrides []string
		want      string
	}{
		{[]string{"listeners=SSL://" + addr, "ssl.keystore.location=/nonexistent.jks"}, "config ssl.keystore.type: store type JKS is not supported by kbroker"},
		{[]string{"listeners=SSL://" + addr, "ssl.keystore.type=PKCS12", "ssl.truststore.type=PEM", "ssl.keystore.location=/k.p12"}, "store type PKCS12 is not supported"},
		{[]string{"listeners=SSL://" + addr, "ssl.keystore.type=PEM", "ssl.truststore.type=PEM", "ssl.keystore.location=" + t.TempDir() + "/missing.pem"}, "ssl.keystore.location"},
	} {
		code, out := runBrokerToExit(t, t.TempDir(), tc.overrides...)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want an error with %q:\n%s", tc.overrides, code, tc.want, out)
		}
	}
}
