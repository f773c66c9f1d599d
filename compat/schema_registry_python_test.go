package compat

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// confluentPythonVersion is the confluent-kafka that scripts/test.sh
// installs from PyPI into compat/py/.deps (the newest served, with its
// schemaregistry, avro, json and protobuf extras); Debian's 1.7.0 stays the
// one the plain client tests drive.
const confluentPythonVersion = "2.16.2"

// TestConfluentPythonSchemaRegistry: confluent-kafka for Python with its
// SchemaRegistryClient and its Avro (fastavro), Protobuf (schemas sent as
// base64 descriptors) and JSON Schema serializers
// registers, serializes and produces through kbroker, consumes and
// deserializes; a compatibility check and a registration that must fail
// do, and a subject is deleted. kbroker's REST Proxy then reads the
// Python serializers' records.
func TestConfluentPythonSchemaRegistry(t *testing.T) {
	deps := filepath.Join(compatDir(t), "py", ".deps")
	if _, err := os.Stat(filepath.Join(deps, "confluent_kafka-"+confluentPythonVersion+".dist-info")); err != nil {
		t.Fatalf("confluent-kafka %s is not installed in %s (%v): run scripts/test.sh", confluentPythonVersion, deps, err)
	}
	b, registry, proxy := startRegistryBroker(t)

	cmd := exec.Command(debianPython, filepath.Join(compatDir(t), "py", "confluent_kafka_schema_registry.py"), b.Addr(), registry, "py")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+deps)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("python: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		Version    string                       `json:"version"`
		IDs        map[string]int               `json:"ids"`
		Decoded    map[string][]json.RawMessage `json:"decoded"`
		Compatible bool                         `json:"compatible"`
		Refused    *struct{ Status, Code int }  `json:"refused"`
		Deleted    []int                        `json:"deleted"`
		Subjects   []string                     `json:"subjects"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if res.Version != confluentPythonVersion {
		t.Errorf("the script ran confluent-kafka %s, want PyPI's %s from %s", res.Version, confluentPythonVersion, deps)
	}
	want := map[string][]string{
		"avro":     {`{"id":"a1","note":null,"qty":2}`, `{"id":"a2","note":"rush","qty":5}`},
		"json":     {`{"id":"j1","qty":1}`, `{"id":"j2","qty":9}`},
		"protobuf": {`{"id":"p1","qty":3}`, `{"id":"p2","qty":7}`},
	}
	for kind, vals := range want {
		if res.IDs[kind] <= 0 {
			t.Errorf("%s: no schema id in %+v", kind, res.IDs)
		}
		if got := compactAll(t, res.Decoded[kind]); !slices.Equal(got, vals) {
			t.Errorf("%s decoded by confluent-kafka python: %v, want %v", kind, got, vals)
		}
	}
	if res.Compatible {
		t.Error("the registry called an incompatible schema compatible")
	}
	if res.Refused == nil || res.Refused.Status != 409 || res.Refused.Code != 409 {
		t.Errorf("registering an incompatible schema: %+v, want 409", res.Refused)
	}
	if !slices.Equal(res.Deleted, []int{1}) || !slices.Equal(res.Subjects, []string{"py-avro-value", "py-protobuf-value"}) {
		t.Errorf("after deleting py-json-value: deleted %v, subjects %v", res.Deleted, res.Subjects)
	}
	if got := readThroughProxy(t, proxy, "protobuf", "py-protobuf", 2); strings.Join(got, " ") != `{"id":"p1","qty":3} {"id":"p2","qty":7}` {
		t.Errorf("the Python serializer's Protobuf read by kbroker's REST Proxy: %v", got)
	}
	if got := readThroughProxy(t, proxy, "avro", "py-avro", 2); strings.Join(got, " ") != `{"id":"a1","note":null,"qty":2} {"id":"a2","note":{"string":"rush"},"qty":5}` {
		t.Errorf("the Python serializer's Avro read by kbroker's REST Proxy: %v", got)
	}
}
