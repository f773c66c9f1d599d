package restproxy_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network/tlstest"
)

// TestBasicAuthActsAsTheUser: with rest.proxy.authentication=basic every
// call needs a SASL user's login and acts as that user: the authorizer
// decides with the user's principal, and ACLs created through v3 let a
// user produce; PLAIN and SCRAM users both work.
func TestBasicAuthActsAsTheUser(t *testing.T) {
	e := start(t, map[string]string{
		"listeners":                  "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms":    "PLAIN,SCRAM-SHA-256",
		"sasl.jaas.config":           `org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="carol-plain";`,
		"sasl.scram.bootstrap.users": "SCRAM-SHA-256=[name=admin,password=admin-secret];SCRAM-SHA-256=[name=alice,password=alice-secret];SCRAM-SHA-256=[name=bob,password=bob-secret]",
		"authorizer.class.name":      "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                "User:admin",
		"rest.proxy.authentication":  "basic",
		"auto.create.topics.enable":  "false",
	})
	as := func(user, password string) { e.user, e.password = user, password }

	as("", "")
	r := e.do("GET", "/topics", "", "")
	wantError(t, "no login", r, 401, 40101)
	if r.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without a Basic challenge")
	}
	as("alice", "wrong")
	wantError(t, "wrong password", e.do("GET", "/topics", "", ""), 401, 40101)

	rec := `{"records":[{"value":"` + b64("x") + `"}]}`
	as("admin", "admin-secret")
	c := "/v3/clusters/" + e.clusterID()
	e.must(http.StatusCreated, nil, "POST", c+"/topics", "application/json", `{"topic_name":"secret","partitions_count":1}`)
	as("alice", "alice-secret")
	wantError(t, "alice without an ACL", e.do("POST", "/topics/secret", ctBinary, rec), 403, 40301)
	as("admin", "admin-secret")
	for _, op := range []string{"WRITE", "DESCRIBE"} {
		e.must(http.StatusCreated, nil, "POST", c+"/acls", "application/json",
			`{"resource_type":"TOPIC","resource_name":"secret","pattern_type":"LITERAL","principal":"User:alice","host":"*","operation":"`+op+`","permission":"ALLOW"}`)
	}
	var acls v3List[struct {
		Principal string `json:"principal"`
		Operation string `json:"operation"`
	}]
	e.must(http.StatusOK, &acls, "GET", c+"/acls?resource_type=TOPIC&principal=User:alice", "", "")
	if acls.Kind != "KafkaAclList" || len(acls.Data) != 2 {
		t.Errorf("ACLs: %+v", acls)
	}

	as("alice", "alice-secret")
	var pr produceReply
	e.must(http.StatusOK, &pr, "POST", "/topics/secret", ctBinary, rec)
	if len(pr.Offsets) != 1 || pr.Offsets[0].ErrorCode != nil {
		t.Errorf("alice with WRITE: %+v", pr)
	}
	as("bob", "bob-secret")
	wantError(t, "bob", e.do("POST", "/topics/secret", ctBinary, rec), 403, 40301)
	as("carol", "carol-plain") // a PLAIN user
	var brokers struct {
		Brokers []int32 `json:"brokers"`
	}
	e.must(http.StatusOK, &brokers, "GET", "/brokers", "", "")
	if len(brokers.Brokers) != 1 {
		t.Errorf("carol's /brokers: %+v", brokers)
	}

	as("admin", "admin-secret")
	q := url.Values{"resource_type": {"TOPIC"}, "resource_name": {"secret"}, "principal": {"User:alice"}}
	var deleted struct {
		Data []struct {
			Operation string `json:"operation"`
		} `json:"data"`
	}
	e.must(http.StatusOK, &deleted, "DELETE", c+"/acls?"+q.Encode(), "", "")
	if len(deleted.Data) != 2 {
		t.Errorf("deleted ACLs: %+v", deleted)
	}
	as("alice", "alice-secret")
	e.eventually("alice's WRITE gone", func() bool { return e.do("POST", "/topics/secret", ctBinary, rec).status == 403 })
}

// TestPortInUse: a rest.proxy.listeners port that is taken fails start-up
// with a message naming the key.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cfg, _, err := config.ParseConfig(map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(), "http.listeners": "", "schema.registry.listeners": "",
		"rest.proxy.listeners": "http://" + ln.Addr().String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := broker.New(cfg)
	if err == nil {
		b.Close()
		t.Fatal("New succeeded on a taken port")
	}
	if !strings.Contains(err.Error(), "rest.proxy.listeners") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("error %q does not name the key and the cause", err)
	}
}

// TestHTTPS: an https:// entry of rest.proxy.listeners serves TLS with
// listener.name.rest.ssl.*, and the same API.
func TestHTTPS(t *testing.T) {
	ca, err := tlstest.NewCA("rest-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Server("kbroker-rest")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := tlstest.WriteFile(t.TempDir(), "rest.pem", leaf.KeystorePEM())
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, map[string]string{
		"rest.proxy.listeners":                     "https://127.0.0.1:0",
		"ssl.keystore.type":                        "PEM",
		"ssl.truststore.type":                      "PEM",
		"listener.name.rest.ssl.keystore.location": ks,
	})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	e.hc = &http.Client{Transport: tr}
	e.base = strings.Replace(e.base, "http://", "https://", 1)
	var ref instanceRef
	e.must(http.StatusOK, &ref, "POST", "/consumers/tls-g", ctV2, `{"name":"c"}`)
	if ref.BaseURI != e.base+"/consumers/tls-g/instances/c" {
		t.Errorf("base_uri over TLS: %q", ref.BaseURI)
	}
	plain := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := plain.Get(strings.Replace(e.base, "https://", "http://", 1) + "/topics"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP to the https listener answered 200: %s", body)
		}
	}
}
