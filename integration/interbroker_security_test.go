package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
	z := StartZooKeeper(t)
	secure := secureInterBrokerProps(t)
	bs := StartClusterFunc(t, z, 3, func(b *BrokerProc) map[string]string {
		props := secure(b, "broker-secret")
		props["min.insync.replicas"], props["default.replication.factor"] = "3", "3"
		return props
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

// TestInterBrokerWrongPassword: a broker whose inter-broker password is
// wrong cannot log in to the others, and says so in one WARN line per
// distinct error, naming Kafka's error and not the password. If it won the
// controller election, its requests to the other broker are refused; else
// it cannot follow, and leaves the ISR of the partitions the other leads.
func TestInterBrokerWrongPassword(t *testing.T) {
	z := StartZooKeeper(t)
	secure := secureInterBrokerProps(t)
	bs := StartClusterFunc(t, z, 2, func(b *BrokerProc) map[string]string {
		if b.ID == 2 {
			return secure(b, "wrong-secret")
		}
		return secure(b, "broker-secret")
	})
	bad := bs[1]
	// Broker 1 learns of a controller only from broker 1 as controller
	// (broker 2's requests are refused).
	controllerIs1 := false
	waitFor(t, 60*time.Second, "a controller", func() (bool, error) {
		if strings.Contains(bad.Log(), "controller cannot authenticate") {
			return true, nil
		}
		dc, err := describeCluster(bs[0].Addr())
		if err != nil {
			return false, err
		}
		controllerIs1 = dc.ControllerID == 1
		return controllerIs1, fmt.Errorf("controller %d", dc.ControllerID)
	})
	if controllerIs1 {
		waitClusterFormed(t, bs[:1], 2) // broker 1's cache lists both
		createTopic(t, bs[0].Addr(), "refused", 2, 2, false)
		waitFor(t, 60*time.Second, "broker 2 to report the refused login", func() (bool, error) {
			return strings.Contains(bad.Log(), "replica fetcher cannot authenticate"), nil
		})
		// Created with both in the ISR, broker 2 leaves it once it has
		// not fetched for replica.lag.time.max.ms.
		waitFor(t, 60*time.Second, "broker 2 out of the ISR of the partitions broker 1 leads", func() (bool, error) {
			ps, err := partitionsOf(bs[0].Addr(), "refused")
			if err != nil {
				return false, err
			}
			led := 0
			for _, p := range ps {
				if p.Leader == 1 {
					led++
					if slices.Contains(p.ISR, 2) {
						return false, fmt.Errorf("%+v", p)
					}
				}
			}
			return led > 0, fmt.Errorf("broker 1 leads none of %+v", ps)
		})
	}
	log := bad.Log()
	if strings.Contains(log, "wrong-secret") || strings.Contains(log, "broker-secret") {
		t.Errorf("broker 2 logged an inter-broker password")
	}
	if n := strings.Count(log, "cannot authenticate"); n == 0 || !strings.Contains(log, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("%d WARN lines, or none naming Kafka's error:\n%s", n, log)
	}
}

// secureInterBrokerProps returns, for each broker, the properties of a
// SASL_SSL inter-broker listener INTERNAL (SASL PLAIN, user "broker",
// certificates of a CA made here, host names verified) beside a PLAINTEXT
// client listener EXTERNAL on b.Port. password is the broker's own login.
func secureInterBrokerProps(t *testing.T) func(b *BrokerProc, password string) map[string]string {
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
	return func(b *BrokerProc, password string) map[string]string {
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
				`username="broker" password="` + password + `" user_broker="broker-secret";`,
			"ssl.keystore.type":       "PEM",
			"ssl.keystore.location":   keystore,
			"ssl.truststore.type":     "PEM",
			"ssl.truststore.location": truststore,
		}
	}
}
