package compat

// kafka-clients (4.4.0 and 3.9.2) over kbroker's SASL_PLAINTEXT listener
// (startSASLBroker, sasl_test.go): SCRAM-SHA-256, SCRAM-SHA-512, PLAIN and
// OAUTHBEARER (the client's unsecured JWS login against the broker's
// unsecured validator, Kafka's development setup) through the JAAS config a
// Java user writes, producing and consuming in a group; a wrong password
// must fail with an authentication error.

import (
	"fmt"
	"strings"
	"testing"
)

// javaSASLProps are the client properties for mechanism with password pass.
func javaSASLProps(mechanism, pass string) []string {
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	switch mechanism {
	case "PLAIN":
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	case "OAUTHBEARER":
		return []string{
			"security.protocol=SASL_PLAINTEXT",
			"sasl.mechanism=OAUTHBEARER",
			fmt.Sprintf(`sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="%s";`, saslUser),
		}
	}
	return []string{
		"security.protocol=SASL_PLAINTEXT",
		"sasl.mechanism=" + mechanism,
		fmt.Sprintf(`sasl.jaas.config=%s required username="%s" password="%s";`, module, saslUser, pass),
	}
}

func TestJavaSASL(t *testing.T) {
	for _, mod := range []string{javaMod44, javaMod39} {
		t.Run(mod, func(t *testing.T) {
			b, saslAddr := startSASLBroker(t, "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER")
			adm := newAdmin(t, b.Addr())
			for _, mech := range []struct{ name, pass string }{
				{"SCRAM-SHA-256", saslScramPass}, {"SCRAM-SHA-512", saslScramPass}, {"PLAIN", saslPlainPass}, {"OAUTHBEARER", ""},
			} {
				t.Run(mech.name, func(t *testing.T) {
					c := &javaClient{jvm: startJVM(t, mod, javaSASLProps(mech.name, mech.pass)...), protocol: "classic"}
					recordCap(t, javaClientName, c.version(t), capSASL)
					c.setAddr(saslAddr)
					topic := "java-sasl-" + strings.ToLower(mech.name)
					createTopic(t, adm, topic, 2, nil)
					keys := matrixKeys("sasl", strings.ToLower(mech.name), 20)
					produced := map[string]expectedRec{}
					addProduced(t, c, produced, c.produce(t, topic, "none", true, keys), keys, "none")
					got := c.consume(t, topic, topic+"-group", "", len(keys))
					checkConsumed(t, got, produced, keys, nil)
				})
			}
			t.Run("wrong-password", func(t *testing.T) {
				c := &javaClient{jvm: startJVM(t, mod, javaSASLProps("SCRAM-SHA-256", "wrong")...), protocol: "classic"}
				recordCap(t, javaClientName, c.version(t), capSASL)
				_, javaErr := c.jvm.try(t, "", "create", saslAddr, "java-sasl-denied", "1")
				if !strings.Contains(javaErr, "SaslAuthenticationException") {
					t.Fatalf("create with a wrong password: want a SaslAuthenticationException, got %q", javaErr)
				}
			})
		})
	}
}
