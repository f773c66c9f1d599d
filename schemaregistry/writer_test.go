package schemaregistry_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/kbroker/kbroker/schemaregistry"
)

// freePort is a port nothing listens on (for a listener whose
// configured port others must know).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// secondRegistry is another registry over rb's broker, as the registry of
// another broker of a cluster would be: node id nodeID, served over HTTP.
func secondRegistry(t *testing.T, rb *registryBroker, nodeID int32) *registryBroker {
	t.Helper()
	reg := schemaregistry.New(schemaregistry.Config{
		Bootstrap: func() (schemaregistry.Endpoint, error) {
			return schemaregistry.Endpoint{Addr: rb.b.Addrs()[0].String()}, nil
		},
		NodeID: nodeID,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	srv := httptest.NewServer(reg.Handler())
	reg.Start()
	t.Cleanup(func() { srv.Close(); reg.Close() })
	return &registryBroker{t: t, b: rb.b, url: srv.URL, hc: srv.Client()}
}

// TestWritesGoToTheWriter: a registry whose broker does not lead
// _schemas-0 forwards writes to the leader's registry (its URL from the
// leader's schema.registry.listeners) and answers once its own view holds
// the write; errors come back as the writer gave them.
func TestWritesGoToTheWriter(t *testing.T) {
	rb := startRegistry(t, t.TempDir(), "schema.registry.listeners", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	other := secondRegistry(t, rb, 7) // broker 7 does not lead: node 0 does

	r := other.do("POST", "/subjects/fwd/versions", schemaBody(userV1, ""))
	if r.status != 200 || r.body != `{"id":1}` {
		t.Fatalf("forwarded registration: %d %s", r.status, r.body)
	}
	// Read your writes: the forwarding registry's own view has it.
	other.expect("GET", "/subjects/fwd/versions", "", 200, `[1]`)
	rb.expect("GET", "/subjects/fwd/versions", "", 200, `[1]`)
	if w := other.header("POST", "/subjects/fwd/versions", schemaBody(userV1, ""), "X-Kbroker-Schema-Writer"); w != "0" {
		t.Errorf("writer of a forwarded write = %q, want node 0", w)
	}
	if w := rb.header("POST", "/subjects/fwd/versions", schemaBody(userV1, ""), "X-Kbroker-Schema-Writer"); w != "0" {
		t.Errorf("writer of a local write = %q, want node 0", w)
	}
	other.expect("PUT", "/config/fwd", `{"compatibility":"FULL"}`, 200, `{"compatibility":"FULL"}`)
	other.expect("GET", "/config/fwd", "", 200, `{"compatibilityLevel":"FULL"}`)
	other.expectError("POST", "/subjects/fwd/versions", schemaBody(`"string"`, ""), 409, 409)
	other.expectError("DELETE", "/subjects/nobody", "", 404, 40401)
	other.expect("DELETE", "/subjects/fwd", "", 200, `[1]`)
	rb.expect("GET", "/subjects", "", 200, `[]`)
}

// TestConcurrentWritersNeverShareIDs: two registries that both write (as
// two brokers might while the leadership of _schemas-0 moves) register
// different schemas at once under one subject and several; every id
// names one schema, every version one id, before and after a restart.
func TestConcurrentWritersNeverShareIDs(t *testing.T) {
	dir := t.TempDir()
	rb := startRegistry(t, dir)
	rb.expect("PUT", "/config", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`)
	other := secondRegistry(t, rb, 0) // claims the writer's node id too: both write
	const n = 24
	type result struct {
		subject, schema, canonical string
		id                         int
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg := rb
			if i%2 == 1 {
				reg = other
			}
			subject := fmt.Sprintf("s%d", i%3)
			schema := fmt.Sprintf(`{"type":"fixed","name":"F%d","size":%d}`, i, i+1)
			r := reg.do("POST", "/subjects/"+subject+"/versions", schemaBody(schema, ""))
			var got struct{ ID int }
			if r.status != 200 {
				t.Errorf("registration %d: %d %s", i, r.status, r.body)
				return
			}
			r.json(t, &got)
			results[i] = result{subject, schema, fmt.Sprintf(`{"name":"F%d","type":"fixed","size":%d}`, i, i+1), got.ID}
		}()
	}
	wg.Wait()
	check := func(rb *registryBroker) {
		t.Helper()
		// Reads answer from the registry's own view, which may not yet
		// hold the other writer's last records; a write (here one that
		// registers nothing new) first brings the view to the log's end.
		if r := rb.do("POST", "/subjects/"+results[0].subject+"/versions", schemaBody(results[0].schema, "")); r.status != 200 {
			t.Fatalf("re-registration: %d %s", r.status, r.body)
		}
		ids := map[int]string{}
		for _, res := range results {
			if prev, ok := ids[res.id]; ok && prev != res.schema {
				t.Errorf("id %d handed out for %s and %s", res.id, prev, res.schema)
			}
			ids[res.id] = res.schema
			var byID struct{ Schema string }
			rb.do("GET", fmt.Sprintf("/schemas/ids/%d", res.id), "").json(t, &byID)
			if byID.Schema != res.canonical {
				t.Errorf("id %d serves %s, registered for %s", res.id, byID.Schema, res.canonical)
			}
			var versions []struct {
				Subject string
				Version int
			}
			rb.do("GET", fmt.Sprintf("/schemas/ids/%d/versions", res.id), "").json(t, &versions)
			if len(versions) != 1 || versions[0].Subject != res.subject {
				t.Errorf("id %d is used by %+v, want one version of %s", res.id, versions, res.subject)
			}
		}
		if len(ids) != n {
			t.Errorf("%d distinct ids for %d schemas", len(ids), n)
		}
		for s := range 3 {
			var vs []int
			rb.do("GET", fmt.Sprintf("/subjects/s%d/versions", s), "").json(t, &vs)
			if len(vs) != n/3 {
				t.Errorf("subject s%d has versions %v, want %d", s, vs, n/3)
			}
		}
	}
	check(rb)
	check(other)
	rb.close()
	check(startRegistry(t, dir))
}
