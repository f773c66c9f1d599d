package compat

// kafka-clients (4.4.0 and 3.9.2) over kbroker's TLS listeners
// (startTLSBroker, tls_test.go) with the PEM stores of KIP-651: SSL, mTLS
// on the listener that requires a client certificate, SASL_SSL with
// SCRAM-SHA-512; a client certificate of another CA must fail with an SSL
// authentication error.

import (
	"fmt"
	"strings"
	"testing"
)

// javaTLSProps are the client properties for proto trusting caFile, with
// keystore (key + chain, PEM) when set.
func javaTLSProps(proto, caFile, keystore string) []string {
	props := []string{"security.protocol=" + proto, "ssl.truststore.type=PEM", "ssl.truststore.location=" + caFile}
	if keystore != "" {
		props = append(props, "ssl.keystore.type=PEM", "ssl.keystore.location="+keystore)
	}
	return props
}

func TestTLSJava(t *testing.T) {
	for _, mod := range []string{javaMod44, javaMod39} {
		t.Run(mod, func(t *testing.T) {
			b := startTLSBroker(t)
			roundTrip := func(t *testing.T, addr, name string, props []string) {
				c := &javaClient{jvm: startJVM(t, mod, props...), protocol: "classic"}
				c.setAddr(addr)
				topic := "java-" + name
				c.createTopic(t, topic, 2, 1)
				keys := matrixKeys("tls", name, 20)
				produced := map[string]expectedRec{}
				addProduced(t, c, produced, c.produce(t, topic, "none", true, keys), keys, "none")
				got := c.consume(t, topic, topic+"-group", "", len(keys))
				checkConsumed(t, got, produced, keys, nil)
			}
			t.Run("ssl", func(t *testing.T) { roundTrip(t, b.ssl, "ssl", javaTLSProps("SSL", b.caFile, "")) })
			t.Run("mtls", func(t *testing.T) { roundTrip(t, b.mtls, "mtls", javaTLSProps("SSL", b.caFile, b.clientKeystore)) })
			t.Run("sasl_ssl-scram", func(t *testing.T) {
				props := append(javaTLSProps("SASL_SSL", b.caFile, ""), "sasl.mechanism=SCRAM-SHA-512",
					fmt.Sprintf(`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, saslUser, saslScramPass))
				roundTrip(t, b.saslSSL, "sasl-ssl", props)
			})
			t.Run("foreign-certificate", func(t *testing.T) {
				c := &javaClient{jvm: startJVM(t, mod, javaTLSProps("SSL", b.caFile, b.foreignKeystore)...), protocol: "classic"}
				_, javaErr := c.jvm.try(t, "", "create", b.mtls, "java-tls-denied", "1")
				if !strings.Contains(javaErr, "SslAuthenticationException") {
					t.Fatalf("create with a certificate of another CA: want an SslAuthenticationException, got %q", javaErr)
				}
			})
			b.Alive()
		})
	}
}
