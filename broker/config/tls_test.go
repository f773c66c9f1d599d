package config

import (
	"crypto/tls"
	"strings"
	"testing"
)

func TestTLSListeners(t *testing.T) {
	cfg, unknown, err := ParseConfig(map[string]string{
		"listeners":                                    "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9093,SECURE://127.0.0.1:9094",
		"listener.security.protocol.map":               "INTERNAL:PLAINTEXT,EXTERNAL:SSL,SECURE:SASL_SSL",
		"inter.broker.listener.name":                   "INTERNAL",
		"ssl.keystore.type":                            "PEM",
		"ssl.truststore.type":                          "PEM",
		"ssl.keystore.location":                        "/etc/kbroker/broker.pem",
		"ssl.truststore.location":                      "/etc/kbroker/ca.pem",
		"ssl.client.auth":                              "required",
		"ssl.enabled.protocols":                        "TLSv1.3",
		"listener.name.external.ssl.keystore.location": "/etc/kbroker/external.pem",
		"listener.name.external.ssl.cipher.suites":     "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_AES_128_GCM_SHA256",
		"ssl.principal.mapping.rules":                  "RULE:^CN=(.*?),.*$/$1/,DEFAULT",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 0 {
		t.Fatalf("ssl properties reported unknown: %v", unknown)
	}
	in, ext, sec := cfg.Listeners[0], cfg.Listeners[1], cfg.Listeners[2]
	if in.TLS != nil || ext.TLS == nil || sec.TLS == nil {
		t.Fatalf("TLS configs: %v %v %v", in.TLS, ext.TLS, sec.TLS)
	}
	if ext.TLS.KeystoreLocation != "/etc/kbroker/external.pem" || sec.TLS.KeystoreLocation != "/etc/kbroker/broker.pem" {
		t.Fatalf("listener override not applied: %q %q", ext.TLS.KeystoreLocation, sec.TLS.KeystoreLocation)
	}
	if ext.TLS.ClientAuth != ClientAuthRequired {
		t.Fatalf("SSL listener client auth %q", ext.TLS.ClientAuth)
	}
	// KIP-684: an unprefixed ssl.client.auth does not apply to SASL_SSL.
	if sec.TLS.ClientAuth != ClientAuthNone {
		t.Fatalf("SASL_SSL listener client auth %q, want none", sec.TLS.ClientAuth)
	}
	if ext.TLS.MinVersion != tls.VersionTLS13 || ext.TLS.MaxVersion != tls.VersionTLS13 {
		t.Fatalf("versions %x..%x", ext.TLS.MinVersion, ext.TLS.MaxVersion)
	}
	if len(ext.TLS.CipherSuites) != 1 || ext.TLS.CipherSuites[0] != tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 || sec.TLS.CipherSuites != nil {
		t.Fatalf("cipher suites %v / %v", ext.TLS.CipherSuites, sec.TLS.CipherSuites)
	}
	if !sec.IsSASL() || ext.IsSASL() {
		t.Fatal("IsSASL")
	}
	for _, k := range PropertyNames() {
		if strings.HasPrefix(k, "ssl.") {
			t.Fatalf("%s is in the props table (DescribeConfigs would show secrets)", k)
		}
	}
}

func TestTLSConfigErrors(t *testing.T) {
	base := func(kv ...string) map[string]string {
		p := map[string]string{"listeners": "SSL://127.0.0.1:9093", "ssl.keystore.type": "PEM", "ssl.truststore.type": "PEM", "ssl.keystore.location": "/k.pem"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(p, kv[i])
			} else {
				p[kv[i]] = kv[i+1]
			}
		}
		return p
	}
	for _, tc := range []struct {
		p    map[string]string
		want string
	}{
		{base("ssl.keystore.type", ""), "store type JKS is not supported"},
		{base("ssl.keystore.type", "PKCS12"), "store type PKCS12 is not supported"},
		{base("listener.name.ssl.ssl.truststore.type", "JKS"), "listener.name.ssl.ssl.truststore.type: store type JKS"},
		{base("ssl.keystore.location", ""), "ssl.keystore.location (or ssl.keystore.certificate.chain with ssl.keystore.key) is required"},
		{base("ssl.keystore.key", "x"), "both set"},
		{base("ssl.keystore.location", "", "ssl.keystore.key", "x"), "must be set together"},
		{base("ssl.client.auth", "always"), "not none, requested or required"},
		{base("ssl.client.auth", "required"), "needs ssl.truststore.location"},
		{base("ssl.enabled.protocols", "TLSv1.1"), "TLSv1.1"},
		{base("ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_SHA"), "unknown or insecure"},
		{base("ssl.key.password", "secret"), "encrypted private keys"},
	} {
		_, _, err := ParseConfig(tc.p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.p, err, tc.want)
		}
	}
	if _, _, err := ParseConfig(base("ssl.keystore.location", "", "ssl.keystore.certificate.chain", "c", "ssl.keystore.key", "k")); err != nil {
		t.Errorf("inline keystore: %v", err)
	}
}

// TestInterBrokerClient: the inter-broker listener's security protocol,
// ssl.* settings and SASL credentials become this broker's client side.
func TestInterBrokerClient(t *testing.T) {
	p := map[string]string{
		"zookeeper.connect":              "127.0.0.1:2181",
		"listeners":                      "INTERNAL://127.0.0.1:9092,EXTERNAL://127.0.0.1:9093",
		"listener.security.protocol.map": "INTERNAL:SASL_SSL,EXTERNAL:PLAINTEXT",
		"inter.broker.listener.name":     "INTERNAL",
		"ssl.keystore.type":              "PEM",
		"ssl.truststore.type":            "PEM",
		"ssl.keystore.location":          "/k.pem",
		"ssl.truststore.location":        "/ca.pem",
	}
	if _, _, err := ParseConfig(p); err == nil || !strings.Contains(err.Error(), "GSSAPI") {
		t.Fatalf("SASL_SSL inter-broker listener without a mechanism (Kafka's default GSSAPI): %v", err)
	}
	p["sasl.mechanism.inter.broker.protocol"] = "SCRAM-SHA-256"
	if _, _, err := ParseConfig(p); err == nil || !strings.Contains(err.Error(), "username and password") {
		t.Fatalf("no JAAS config for the inter-broker mechanism: %v", err)
	}
	p["listener.name.internal.scram-sha-256.sasl.jaas.config"] = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="s3cret";`
	cfg, _, err := ParseConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	ib := cfg.InterBroker
	if ib.Listener.Name != "INTERNAL" || ib.Listener.TLS == nil || !ib.Listener.TLS.EndpointIdentification ||
		ib.Mechanism != MechScramSHA256 || ib.Username != "broker" || ib.Password != "s3cret" {
		t.Fatalf("inter-broker client %+v", ib)
	}
	p["ssl.endpoint.identification.algorithm"] = ""
	if cfg, _, err = ParseConfig(p); err != nil || cfg.InterBroker.Listener.TLS.EndpointIdentification {
		t.Fatalf("ssl.endpoint.identification.algorithm empty: %v %+v", err, cfg.InterBroker.Listener.TLS)
	}
	p["listener.name.internal.sasl.enabled.mechanisms"] = "PLAIN"
	if _, _, err := ParseConfig(p); err == nil || !strings.Contains(err.Error(), "not enabled on the inter-broker listener") {
		t.Fatalf("mechanism not enabled on the listener: %v", err)
	}
}
