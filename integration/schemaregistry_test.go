package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSchemaRegistryWriterFailover: on a 3-broker cluster every broker
// serves the Schema Registry; a registration sent to any broker goes to
// the writer (the leader of _schemas-0) and the receiving broker reads
// its own write at once. After kill -9 of the writer the two others go on
// registering with ids never handed out before, and once the killed
// broker is back every broker serves the same subjects, versions and ids.
func TestSchemaRegistryWriterFailover(t *testing.T) {
	z := StartZooKeeper(t)
	bs, regPorts := startClusterWithHTTP(t, z, 3, "schema.registry.listeners", nil)
	url := func(b *BrokerProc) string { return fmt.Sprintf("http://127.0.0.1:%d", regPorts[b.ID]) }
	call := func(b *BrokerProc, method, path, body string) (int, string, error) {
		req, err := http.NewRequest(method, url(b)+path, strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data), err
	}
	for _, b := range bs {
		waitFor(t, 60*time.Second, fmt.Sprintf("broker %d's registry ready", b.ID), func() (bool, error) {
			status, body, err := call(b, "GET", "/readyz", "")
			return status == 200, fmt.Errorf("%d %s %v", status, body, err)
		})
	}

	// Unrelated records under one subject: no compatibility rule.
	if status, reply, err := call(bs[1], "PUT", "/config", `{"compatibility":"NONE"}`); status != 200 {
		t.Fatalf("PUT /config: %d %s %v", status, reply, err)
	}

	type registered struct {
		subject, schema string
		id              int
	}
	var all []registered
	ids := map[int]string{}
	// register registers schema n through b, retrying while the writer
	// moves (a 5xx), and checks that b reads its own write at once.
	register := func(b *BrokerProc, n int) {
		t.Helper()
		subject := fmt.Sprintf("s%d", n%3)
		schema := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"f%d","type":"long"}]}`, n, n)
		body, _ := json.Marshal(map[string]string{"schema": schema})
		var id int
		waitFor(t, 60*time.Second, fmt.Sprintf("registering schema %d through broker %d", n, b.ID), func() (bool, error) {
			status, reply, err := call(b, "POST", "/subjects/"+subject+"/versions", string(body))
			if err != nil || status >= 500 {
				return false, fmt.Errorf("%d %s %v", status, reply, err)
			}
			if status != 200 {
				t.Fatalf("registering schema %d through broker %d: %d %s", n, b.ID, status, reply)
			}
			var r struct{ ID int }
			if err := json.Unmarshal([]byte(reply), &r); err != nil || r.ID <= 0 {
				t.Fatalf("registration answer %q: %v", reply, err)
			}
			id = r.ID
			return true, nil
		})
		if prev, ok := ids[id]; ok {
			t.Fatalf("id %d handed out for %s and again for %s", id, prev, schema)
		}
		ids[id] = schema
		all = append(all, registered{subject, schema, id})
		if status, reply, err := call(b, "GET", "/schemas/ids/"+strconv.Itoa(id), ""); status != 200 || !strings.Contains(reply, fmt.Sprintf("R%d", n)) {
			t.Fatalf("broker %d does not read its own write of id %d: %d %s %v", b.ID, id, status, reply, err)
		}
	}
	for n := range 6 {
		register(bs[n%3], n)
	}

	// Kill -9 the writer: the leader of _schemas-0.
	writer := -1
	waitFor(t, 30*time.Second, "the leader of _schemas-0", func() (bool, error) {
		parts, err := partitionsOf(bs[0].Addr(), "_schemas")
		if err != nil || len(parts) != 1 || parts[0].Leader < 0 {
			return false, fmt.Errorf("%v %v", parts, err)
		}
		if len(parts[0].Replicas) != 3 {
			t.Fatalf("_schemas has replicas %v, want 3", parts[0].Replicas)
		}
		writer = int(parts[0].Leader) - 1
		return true, nil
	})
	bs[writer].Kill()
	var alive []*BrokerProc
	for i, b := range bs {
		if i != writer {
			alive = append(alive, b)
		}
	}
	for n := 6; n < 12; n++ {
		register(alive[n%2], n)
	}

	bs[writer].Restart()
	waitFor(t, 60*time.Second, "the restarted broker's registry ready", func() (bool, error) {
		status, body, err := call(bs[writer], "GET", "/readyz", "")
		return status == 200, fmt.Errorf("%d %s %v", status, body, err)
	})
	// Every broker serves every id and every version, the same way.
	for _, b := range bs {
		waitFor(t, 60*time.Second, fmt.Sprintf("broker %d serving all 12 schemas", b.ID), func() (bool, error) {
			for _, r := range all {
				status, reply, err := call(b, "GET", "/schemas/ids/"+strconv.Itoa(r.id), "")
				var got struct{ Schema string }
				if status != 200 || json.Unmarshal([]byte(reply), &got) != nil {
					return false, fmt.Errorf("id %d: %d %s %v", r.id, status, reply, err)
				}
				if !strings.Contains(got.Schema, strings.Split(r.schema, ",")[1]) {
					t.Fatalf("broker %d: id %d is %s, registered for %s", b.ID, r.id, got.Schema, r.schema)
				}
			}
			for s := range 3 {
				status, reply, err := call(b, "GET", fmt.Sprintf("/subjects/s%d/versions", s), "")
				if status != 200 || reply != "[1,2,3,4]" {
					return false, fmt.Errorf("s%d versions: %d %s %v", s, status, reply, err)
				}
			}
			return true, nil
		})
	}
}
