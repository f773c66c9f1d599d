package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker/network/tlstest"
	"github.com/kbroker/kbroker/integration/history"
)

// TestSASLSSLInterBrokerListener: the brokers talk among themselves on a
// SASL_SSL listener (SASL PLAIN inside TLS, certificates of a CA the test
// makes, the peer's host name verified), clients on a PLAINTEXT one.
// Followers must fetch over it for acks=all with min.insync.replicas=3 to
// succeed, and the controller must reach every broker over it to move a
// leadership after a SIGKILL; everything acknowledged is read back.
func TestSASLSSLInterBrokerListener(t *testing.T) {
	ca, err := tlstest.NewCA("kbroker integration CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Server("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keystore := filepath.Join(dir, "broker.pem")
	truststore := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(keystore, leaf.KeystorePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truststore, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	z := StartZooKeeper(t)
	bs := StartClusterFunc(t, z, 3, func(b *BrokerProc) map[string]string {
		iport, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{
			"listeners":                            fmt.Sprintf("EXTERNAL://127.0.0.1:%d,INTERNAL://127.0.0.1:%d", b.Port, iport),
			"listener.security.protocol.map":       "EXTERNAL:PLAINTEXT,INTERNAL:SASL_SSL",
			"inter.broker.listener.name":           "INTERNAL",
			"sasl.mechanism.inter.broker.protocol": "PLAIN",
			"listener.name.internal.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="broker" password="broker-secret" user_broker="broker-secret";`,
			"ssl.keystore.type":          "PEM",
			"ssl.keystore.location":      keystore,
			"ssl.truststore.type":        "PEM",
			"ssl.truststore.location":    truststore,
			"min.insync.replicas":        "3",
			"default.replication.factor": "3",
		}
	})
	waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "secure", 3, 3, false)
	leaders := waitFullISR(t, bs, "secure", 3)
	ch := history.New()
	p := startProducer(t, bs, "secure", ch)
	p.waitAcked(t, 200, "records acknowledged by all three replicas")
	victim := byID(bs, leaders[0])
	victim.Kill()
	t.Logf("SIGKILLed broker %d (leader of secure/0)", victim.ID)
	victim.Restart()
	waitFullISR(t, bs, "secure", 3)
	p.waitAcked(t, 200, "records acknowledged after the restart")
	p.close(t)
	checkHistory(t, bs, "secure", ch, "over a SASL_SSL inter-broker listener")
	for _, b := range bs {
		if log := b.Log(); strings.Contains(log, "broker-secret") {
			t.Errorf("broker %d logged the inter-broker password", b.ID)
		}
	}
}
