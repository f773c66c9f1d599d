package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// TestSchemaRegistrySecureCluster: brokers with no PLAINTEXT listener
// (clients on SASL_PLAINTEXT, brokers among themselves on SASL_SSL), an
// authorizer that allows nothing without an ACL, and the registry on
// https:// with Basic logins. Each registry reads and writes _schemas as
// its broker's own principal over the inter-broker listener; a write sent
// to any broker is forwarded over https to the one writer (the leader of
// _schemas-0), which answers it, and the receiving broker reads its own
// write at once. An anonymous request gets 401 and a login without WRITE
// on Topic:_schemas gets 403 (40301).
func TestSchemaRegistrySecureCluster(t *testing.T) {
	z := StartZooKeeper(t)
	secure := secureInterBrokerProps(t)
	regPorts := map[int32]int{}
	var truststore string
	restPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	bs := StartClusterFunc(t, z, 3, func(b *BrokerProc) map[string]string {
		props := secure(b, "broker-secret")
		truststore = props["ssl.truststore.location"]
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		regPorts[b.ID] = port
		props["listener.security.protocol.map"] = "EXTERNAL:SASL_PLAINTEXT,INTERNAL:SASL_SSL"
		props["sasl.enabled.mechanisms"] = "PLAIN"
		props["listener.name.external.plain.sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
			`user_broker="broker-secret" user_alice="alice-secret" user_bob="bob-secret";`
		props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		props["allow.everyone.if.no.acl.found"] = "false"
		props["super.users"] = "User:broker"
		props["schema.registry.listeners"] = fmt.Sprintf("https://127.0.0.1:%d", port)
		props["schema.registry.authentication"] = "basic"
		if b.ID == 1 {
			// The REST proxy's schema formats use this broker's own
			// registry, which serves https:// only.
			props["rest.proxy.listeners"] = fmt.Sprintf("http://127.0.0.1:%d", restPort)
			props["rest.proxy.authentication"] = "basic"
		}
		return props
	})
	pem, err := os.ReadFile(truststore)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	t.Cleanup(hc.CloseIdleConnections)
	type answer struct {
		status int
		body   string
		writer string
	}
	call := func(b *BrokerProc, user, method, path, body string) (answer, error) {
		req, err := http.NewRequest(method, fmt.Sprintf("https://127.0.0.1:%d%s", regPorts[b.ID], path), strings.NewReader(body))
		if err != nil {
			return answer{}, err
		}
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		if user != "" {
			req.SetBasicAuth(user, user+"-secret")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return answer{}, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(data), resp.Header.Get("X-Kbroker-Schema-Writer")}, err
	}
	for _, b := range bs {
		waitFor(t, 60*time.Second, fmt.Sprintf("broker %d's registry ready", b.ID), func() (bool, error) {
			a, err := call(b, "alice", "GET", "/readyz", "")
			return a.status == 200, fmt.Errorf("%d %s %v", a.status, a.body, err)
		})
		if a, err := call(b, "", "GET", "/subjects", ""); a.status != http.StatusUnauthorized {
			t.Fatalf("broker %d: anonymous GET /subjects: %d %s %v, want 401", b.ID, a.status, a.body, err)
		}
	}

	// The brokers' own login (a super user) grants alice WRITE on _schemas.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr()), kgo.SASL(plain.Auth{User: "broker", Pass: "broker-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acl := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("_schemas").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acl); err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %v", res, err)
	}

	writers := map[string]bool{}
	for n, b := range bs {
		schema := fmt.Sprintf(`{"type":"record","name":"S%d","fields":[{"name":"f","type":"long"}]}`, n)
		body, _ := json.Marshal(map[string]string{"schema": schema})
		var got answer
		waitFor(t, 60*time.Second, fmt.Sprintf("alice registering through broker %d", b.ID), func() (bool, error) {
			a, err := call(b, "alice", "POST", fmt.Sprintf("/subjects/s%d/versions", n), string(body))
			got = a
			// 403 until this broker and the writer know the new ACL; 5xx
			// while _schemas gets its leader.
			return err == nil && a.status == 200, fmt.Errorf("%d %s %v", a.status, a.body, err)
		})
		var r struct{ ID int }
		if err := json.Unmarshal([]byte(got.body), &r); err != nil || r.ID <= 0 {
			t.Fatalf("registration answer %q: %v", got.body, err)
		}
		writers[got.writer] = true
		if a, err := call(b, "alice", "GET", "/schemas/ids/"+strconv.Itoa(r.ID), ""); a.status != 200 || !strings.Contains(a.body, fmt.Sprintf("S%d", n)) {
			t.Fatalf("broker %d does not read its own write of id %d: %d %s %v", b.ID, r.ID, a.status, a.body, err)
		}
		a, err := call(b, "bob", "POST", fmt.Sprintf("/subjects/s%d/versions", n), string(body))
		if a.status != http.StatusForbidden || !strings.Contains(a.body, `"error_code":40301`) {
			t.Fatalf("broker %d: bob's registration: %d %s %v, want 403 40301", b.ID, a.status, a.body, err)
		}
	}
	md, err := adm.Metadata(ctx, "_schemas")
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics["_schemas"].Partitions[0].Leader
	if len(writers) != 1 || !writers[strconv.Itoa(int(leader))] {
		t.Fatalf("writers named in the answers: %v, want only %d (the leader of _schemas-0)", writers, leader)
	}

	// Broker 1's REST proxy registers an Avro schema in its https-only
	// registry (as the call's login, the super user) and produces with it.
	if resp, err := adm.CreateTopics(ctx, 1, 3, nil, "orders"); err != nil || resp.Error() != nil {
		t.Fatalf("create orders: %v %v", err, resp.Error())
	}
	clusterID := md.Cluster
	record := `{"value":{"type":"AVRO","schema":"{\"type\":\"record\",\"name\":\"Order\",\"fields\":[{\"name\":\"n\",\"type\":\"int\"}]}","data":{"n":7}}}`
	var produced string
	waitFor(t, 60*time.Second, "an Avro record produced through the REST proxy", func() (bool, error) {
		req, err := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/v3/clusters/%s/topics/orders/records", restPort, clusterID), strings.NewReader(record))
		if err != nil {
			return false, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth("broker", "broker-secret")
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		produced = string(data)
		return err == nil && resp.StatusCode == 200 && strings.Contains(produced, `"error_code":200`), fmt.Errorf("%d %s %v", resp.StatusCode, data, err)
	})
	if a, err := call(bs[1], "alice", "GET", "/subjects/orders-value/versions/1", ""); a.status != 200 || !strings.Contains(a.body, "Order") {
		t.Fatalf("the proxy's schema in the registry: %d %s %v (produce answered %s)", a.status, a.body, err, produced)
	}

	for _, b := range bs {
		if log := b.Log(); strings.Contains(log, "writing here") || strings.Contains(log, "broker-secret") {
			t.Errorf("broker %d wrote instead of forwarding, or logged the inter-broker password", b.ID)
		}
	}
}
