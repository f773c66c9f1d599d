package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRestProxyOnThreeBrokers: every broker of a cluster serves the REST
// Proxy. Records produced through one broker's proxy to an RF 2 topic
// whose replicas leave some broker out are read by a consumer instance
// created on another; an instance lives on the broker that created it,
// so the third broker answers 40403 for it, as a REST Proxy that does not
// know it would. v3 lists the cluster's three brokers on every proxy.
func TestRestProxyOnThreeBrokers(t *testing.T) {
	z := StartZooKeeper(t)
	bs, proxyPorts := startClusterWithHTTP(t, z, 3, "rest.proxy.listeners", map[string]string{"default.replication.factor": "2"})
	do := func(b *BrokerProc, method, path, ct, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", proxyPorts[b.ID], path), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set("Accept", "application/vnd.kafka.json.v2+json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	const ctV2, ctJSON = "application/vnd.kafka.v2+json", "application/vnd.kafka.json.v2+json"

	// v3 topic creation through broker 3's proxy, RF 2 over 3 brokers.
	status, body := do(bs[2], "GET", "/v3/clusters", "", "")
	var clusters struct {
		Data []struct {
			ClusterID string `json:"cluster_id"`
		}
	}
	if status != 200 || json.Unmarshal([]byte(body), &clusters) != nil || len(clusters.Data) != 1 {
		t.Fatalf("GET /v3/clusters: %d %s", status, body)
	}
	c := "/v3/clusters/" + clusters.Data[0].ClusterID
	if status, body := do(bs[2], "POST", c+"/topics", "application/json", `{"topic_name":"web","partitions_count":3,"replication_factor":2}`); status != 201 {
		t.Fatalf("creating web: %d %s", status, body)
	}
	for _, b := range bs {
		status, body := do(b, "GET", c+"/brokers", "", "")
		var brokers struct{ Data []json.RawMessage }
		if status != 200 || json.Unmarshal([]byte(body), &brokers) != nil || len(brokers.Data) != 3 {
			t.Errorf("broker %d's proxy lists brokers: %d %s", b.ID, status, body)
		}
	}

	// Produce through broker 1, each record to its own partition.
	var records []string
	for i := range 9 {
		records = append(records, fmt.Sprintf(`{"value":{"n":%d},"partition":%d}`, i, i%3))
	}
	waitFor(t, 30*time.Second, "a produce through broker 1's proxy", func() (bool, error) {
		status, body := do(bs[0], "POST", "/topics/web", ctJSON, `{"records":[`+strings.Join(records, ",")+`]}`)
		var reply struct {
			Offsets []struct {
				ErrorCode *int `json:"error_code"`
			}
		}
		if status != 200 || json.Unmarshal([]byte(body), &reply) != nil || len(reply.Offsets) != 9 {
			return false, fmt.Errorf("%d %s", status, body)
		}
		for _, o := range reply.Offsets {
			if o.ErrorCode != nil {
				return false, fmt.Errorf("%s", body)
			}
		}
		return true, nil
	})

	// A consumer instance on broker 2 reads them all.
	if status, body := do(bs[1], "POST", "/consumers/g", ctV2, `{"name":"c","format":"json","auto.offset.reset":"earliest"}`); status != 200 {
		t.Fatalf("creating the instance: %d %s", status, body)
	}
	inst := "/consumers/g/instances/c"
	if status, body := do(bs[1], "POST", inst+"/subscription", ctV2, `{"topics":["web"]}`); status != 204 {
		t.Fatalf("subscribing: %d %s", status, body)
	}
	seen := map[string]bool{}
	waitFor(t, 60*time.Second, "9 records through broker 2's instance", func() (bool, error) {
		status, body := do(bs[1], "GET", inst+"/records?timeout=1000", "", "")
		var recs []struct{ Value json.RawMessage }
		if status != 200 || json.Unmarshal([]byte(body), &recs) != nil {
			return false, fmt.Errorf("%d %s", status, body)
		}
		for _, r := range recs {
			seen[string(r.Value)] = true
		}
		return len(seen) == 9, fmt.Errorf("%d of 9 records", len(seen))
	})
	if status, body := do(bs[1], "POST", inst+"/offsets", ctV2, ""); status != 200 && status != 204 {
		t.Errorf("committing: %d %s", status, body)
	}
	// The instance is broker 2's: broker 3 does not know it.
	status, body = do(bs[2], "GET", inst+"/records?timeout=100", "", "")
	if status != 404 || !strings.Contains(body, `"error_code":40403`) {
		t.Errorf("the instance through broker 3: %d %s, want 40403", status, body)
	}
	// The group's committed offsets are seen through any broker's v3.
	waitFor(t, 30*time.Second, "the group's lag summary through broker 3", func() (bool, error) {
		status, body := do(bs[2], "GET", c+"/consumer-groups/g/lag-summary", "", "")
		return status == 200 && strings.Contains(body, `"total_lag":0`), fmt.Errorf("%d %s", status, body)
	})
	if status, body := do(bs[1], "DELETE", inst, ctV2, ""); status != 204 {
		t.Errorf("deleting the instance: %d %s", status, body)
	}
}

// startClusterWithHTTP starts n brokers, each with its own free loopback
// port in the HTTP listener property prop (schema.registry.listeners,
// rest.proxy.listeners), plus extra, and waits until the cluster formed
// and every broker is ready; it returns the brokers and each one's port.
func startClusterWithHTTP(t *testing.T, z *ZooKeeper, n int, prop string, extra map[string]string) ([]*BrokerProc, map[int32]int) {
	t.Helper()
	ports := map[int32]int{}
	bs := StartClusterFunc(t, z, n, func(b *BrokerProc) map[string]string {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[b.ID] = port
		props := map[string]string{prop: fmt.Sprintf("http://127.0.0.1:%d", port)}
		for k, v := range extra {
			props[k] = v
		}
		return props
	})
	waitClusterFormed(t, bs, n)
	// A broker answers Kafka requests before it is ready (its controller
	// may still be starting); its HTTP services need it ready.
	for _, b := range bs {
		waitFor(t, 60*time.Second, fmt.Sprintf("broker %d ready", b.ID), func() (bool, error) {
			code, body, err := b.Readyz()
			if err != nil || code != http.StatusOK {
				return false, fmt.Errorf("/readyz: %d %s %v", code, body, err)
			}
			return true, nil
		})
	}
	return bs, ports
}
