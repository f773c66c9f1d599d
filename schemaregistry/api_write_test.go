package schemaregistry_test

import (
	"strings"
	"testing"
)

// TestConfigAndCompatibility: /config (global and per subject,
// defaultToGlobal), a refused incompatible registration (409), and the
// compatibility endpoint with verbose=true.
func TestConfigAndCompatibility(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	rb.expect("GET", "/config", "", 200, `{"compatibilityLevel":"BACKWARD"}`)
	rb.expect("PUT", "/config", `{"compatibility":"full"}`, 200, `{"compatibility":"FULL"}`)
	rb.expect("GET", "/config", "", 200, `{"compatibilityLevel":"FULL"}`)
	e := rb.expectError("PUT", "/config", `{"compatibility":"SIDEWAYS"}`, 422, 42203)
	if !strings.Contains(e.body, "Invalid compatibility level") {
		t.Errorf("42203 message: %s", e.body)
	}
	rb.expect("PUT", "/config", `{"compatibilityLevel":"FULL_TRANSITIVE"}`, 200, `{"compatibility":"FULL_TRANSITIVE"}`)
	rb.expect("PUT", "/config", `{"compatibility":"full"}`, 200, `{"compatibility":"FULL"}`)
	rb.expect("DELETE", "/config", "", 200, `{"compatibilityLevel":"FULL"}`)
	rb.expect("GET", "/config", "", 200, `{"compatibilityLevel":"BACKWARD"}`)

	rb.expectError("GET", "/config/users", "", 404, 40408)
	rb.expect("GET", "/config/users?defaultToGlobal=true", "", 200, `{"compatibilityLevel":"BACKWARD"}`)
	rb.expect("PUT", "/config/users", `{"compatibility":"FORWARD_TRANSITIVE"}`, 200, `{"compatibility":"FORWARD_TRANSITIVE"}`)
	rb.expect("GET", "/config/users", "", 200, `{"compatibilityLevel":"FORWARD_TRANSITIVE"}`)
	rb.expect("DELETE", "/config/users", "", 200, `{"compatibilityLevel":"FORWARD_TRANSITIVE"}`)
	rb.expectError("DELETE", "/config/users", "", 404, 40401)

	// BACKWARD (the default): a new field without a default is refused.
	rb.expect("POST", "/subjects/users/versions", schemaBody(userV1, ""), 200, `{"id":1}`)
	noDefault := `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"age","type":"int"}]}`
	e = rb.expectError("POST", "/subjects/users/versions", schemaBody(noDefault, ""), 409, 409)
	if !strings.Contains(e.body, `Schema being registered is incompatible with an earlier schema for subject \"users\"`) || !strings.Contains(e.body, "{oldSchemaVersion: 1}") {
		t.Errorf("409 message: %s", e.body)
	}
	rb.expect("POST", "/compatibility/subjects/users/versions/latest", schemaBody(noDefault, ""), 200, `{"is_compatible":false}`)
	r := rb.do("POST", "/compatibility/subjects/users/versions/1?verbose=true", schemaBody(noDefault, ""))
	var verbose struct {
		IsCompatible bool     `json:"is_compatible"`
		Messages     []string `json:"messages"`
	}
	r.json(t, &verbose)
	if r.status != 200 || verbose.IsCompatible || len(verbose.Messages) == 0 || !strings.Contains(strings.Join(verbose.Messages, " "), "age") {
		t.Errorf("verbose check: %d %s", r.status, r.body)
	}
	rb.expect("POST", "/compatibility/subjects/users/versions/latest?verbose=true", schemaBody(userV2, ""), 200, `{"is_compatible":true,"messages":[]}`)
	rb.expect("POST", "/compatibility/subjects/users/versions", schemaBody(userV2, ""), 200, `{"is_compatible":true}`)
	rb.expect("POST", "/compatibility/subjects/nobody/versions/latest", schemaBody(userV2, ""), 200, `{"is_compatible":true}`)
	rb.expectError("POST", "/compatibility/subjects/users/versions/7", schemaBody(userV2, ""), 404, 40402)
	rb.expectError("POST", "/compatibility/subjects/users/versions/x", schemaBody(userV2, ""), 422, 42202)
	// NONE lets it through.
	rb.expect("PUT", "/config/users", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`)
	rb.expect("POST", "/subjects/users/versions", schemaBody(noDefault, ""), 200, `{"id":2}`)
}

// TestModes: READONLY refuses writes (42205), an invalid mode is 42204,
// IMPORT takes explicit ids and versions and needs an empty scope.
func TestModes(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	rb.expect("GET", "/mode", "", 200, `{"mode":"READWRITE"}`)
	rb.expectError("PUT", "/mode", `{"mode":"SIDEWAYS"}`, 422, 42204)
	rb.expect("POST", "/subjects/a/versions", schemaBody(`"string"`, ""), 200, `{"id":1}`)

	rb.expect("PUT", "/mode/a", `{"mode":"READONLY"}`, 200, `{"mode":"READONLY"}`)
	rb.expect("GET", "/mode/a", "", 200, `{"mode":"READONLY"}`)
	rb.expectError("POST", "/subjects/a/versions", schemaBody(`"int"`, ""), 422, 42205)
	rb.expectError("DELETE", "/subjects/a", "", 422, 42205)
	rb.expect("POST", "/subjects/b/versions", schemaBody(`"int"`, ""), 200, `{"id":2}`) // only a is read-only
	rb.expect("DELETE", "/mode/a", "", 200, `{"mode":"READONLY"}`)
	rb.expectError("GET", "/mode/a", "", 404, 40409)
	rb.expect("GET", "/mode/a?defaultToGlobal=true", "", 200, `{"mode":"READWRITE"}`)
	rb.expectError("DELETE", "/mode/a", "", 404, 40401)

	// IMPORT: refused while schemas exist, unless forced.
	e := rb.expectError("PUT", "/mode", `{"mode":"IMPORT"}`, 422, 42205)
	if !strings.Contains(e.body, "Cannot import since found existing subjects") {
		t.Errorf("IMPORT refusal: %s", e.body)
	}
	rb.expectError("POST", "/subjects/c/versions", `{"schema":"\"long\"","id":100}`, 422, 42205) // an id outside IMPORT
	rb.expect("PUT", "/mode/imported", `{"mode":"IMPORT"}`, 200, `{"mode":"IMPORT"}`)
	rb.expect("POST", "/subjects/imported/versions", `{"schema":"\"long\"","id":100,"version":5}`, 200, `{"id":100}`)
	rb.expectError("POST", "/subjects/imported/versions", `{"schema":"\"float\""}`, 422, 42205) // IMPORT takes only explicit ids
	rb.expect("GET", "/subjects/imported/versions/5", "", 200, `{"subject":"imported","version":5,"id":100,"schema":"\"long\""}`)
	rb.expectError("POST", "/subjects/imported/versions", `{"schema":"\"boolean\"","id":1,"version":6}`, 422, 42205) // id 1 is another schema
	rb.expect("PUT", "/mode/imported", `{"mode":"READWRITE"}`, 200, `{"mode":"READWRITE"}`)
	rb.expect("POST", "/subjects/d/versions", schemaBody(`"double"`, ""), 200, `{"id":101}`)                       // ids continue after the imported one
	rb.expectError("POST", "/subjects/d/versions", `{"schema":"[\"null\",\"double\"]","version":7}`, 422, 42201)   // not the next version
	rb.expect("POST", "/subjects/d/versions", `{"schema":"[\"null\",\"double\"]","version":2}`, 200, `{"id":102}`) // the next one
	rb.expect("PUT", "/mode?force=true", `{"mode":"IMPORT"}`, 200, `{"mode":"IMPORT"}`)
	rb.expect("GET", "/mode", "", 200, `{"mode":"IMPORT"}`)
}

// TestDeletes: soft and permanent deletes of versions and subjects, the
// deleted=true listings and their error codes.
func TestDeletes(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	rb.expect("PUT", "/config", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`)
	for i, s := range []string{`"string"`, `"int"`, `"long"`} {
		rb.expect("POST", "/subjects/s/versions", schemaBody(s, ""), 200, `{"id":`+string(rune('1'+i))+`}`)
	}
	rb.expectError("DELETE", "/subjects/s/versions/2?permanent=true", "", 404, 40407)
	rb.expect("DELETE", "/subjects/s/versions/2", "", 200, `2`)
	rb.expectError("DELETE", "/subjects/s/versions/2", "", 404, 40406)
	rb.expect("GET", "/subjects/s/versions", "", 200, `[1,3]`)
	rb.expect("GET", "/subjects/s/versions?deleted=true", "", 200, `[1,2,3]`)
	rb.expectError("GET", "/subjects/s/versions/2", "", 404, 40402)
	rb.expect("GET", "/subjects/s/versions/2?deleted=true", "", 200, `{"subject":"s","version":2,"id":2,"schema":"\"int\"","deleted":true}`)
	rb.expect("GET", "/schemas/ids/2", "", 200, `{"schema":"\"int\""}`) // ids stay readable for old messages
	rb.expect("DELETE", "/subjects/s/versions/2?permanent=true", "", 200, `2`)
	rb.expect("GET", "/subjects/s/versions?deleted=true", "", 200, `[1,3]`)
	rb.expectError("GET", "/schemas/ids/2", "", 404, 40403)

	rb.expectError("DELETE", "/subjects/s?permanent=true", "", 404, 40405)
	rb.expect("DELETE", "/subjects/s", "", 200, `[1,3]`)
	rb.expectError("DELETE", "/subjects/s", "", 404, 40404)
	rb.expect("GET", "/subjects", "", 200, `[]`)
	rb.expect("GET", "/subjects?deleted=true", "", 200, `["s"]`)
	rb.expect("GET", "/subjects?deletedOnly=true", "", 200, `["s"]`)
	rb.expectError("GET", "/subjects/s/versions", "", 404, 40401)
	// Registering again after a soft delete continues the versions.
	rb.expect("POST", "/subjects/s/versions", schemaBody(`"string"`, ""), 200, `{"id":1}`)
	rb.expect("GET", "/subjects/s/versions", "", 200, `[4]`)
	rb.expect("DELETE", "/subjects/s", "", 200, `[4]`)
	rb.expect("DELETE", "/subjects/s?permanent=true", "", 200, `[1,3,4]`)
	rb.expect("GET", "/subjects?deleted=true", "", 200, `[]`)
	rb.expectError("DELETE", "/subjects/s", "", 404, 40401)
}

// TestReferences: Avro, Protobuf and JSON schemas referencing other
// subjects' schemas; referencedby; a referenced version cannot be deleted.
func TestReferences(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	// Avro: a record type of another subject.
	rb.expect("POST", "/subjects/user/versions", schemaBody(userV1, ""), 200, `{"id":1}`)
	order := `{"type":"record","name":"Order","namespace":"demo","fields":[{"name":"buyer","type":"demo.User"}]}`
	rb.expect("POST", "/subjects/order/versions", schemaBody(order, "", "demo.User", "user", "1"), 200, `{"id":2}`)
	rb.expect("GET", "/subjects/order/versions/1", "", 200,
		`{"subject":"order","version":1,"id":2,"references":[{"name":"demo.User","subject":"user","version":1}],"schema":"{\"type\":\"record\",\"name\":\"Order\",\"namespace\":\"demo\",\"fields\":[{\"name\":\"buyer\",\"type\":\"demo.User\"}]}"}`)
	rb.expect("GET", "/subjects/user/versions/1/referencedby", "", 200, `[2]`)
	rb.expect("GET", "/subjects/order/versions/1/referencedby", "", 200, `[]`)
	rb.expectError("DELETE", "/subjects/user/versions/1", "", 422, 42206)
	rb.expectError("DELETE", "/subjects/user", "", 422, 42206)
	// The same schema without its reference does not parse.
	rb.expectError("POST", "/subjects/order2/versions", schemaBody(order, ""), 422, 42201)

	// Protobuf: an import of another subject, the well-known types and
	// Confluent's meta.proto.
	addr := `syntax = "proto3"; package demo; message Address { string city = 1; }`
	rb.expect("POST", "/subjects/address/versions", schemaBody(addr, "PROTOBUF"), 200, `{"id":3}`)
	person := `syntax = "proto3";
package demo;
import "address.proto";
import "google/protobuf/timestamp.proto";
import "confluent/meta.proto";
message Person {
  string name = 1 [(confluent.field_meta).doc = "full name"];
  Address home = 2;
  google.protobuf.Timestamp born = 3;
}`
	rb.expect("POST", "/subjects/person/versions", schemaBody(person, "PROTOBUF", "address.proto", "address", "-1"), 200, `{"id":4}`)
	r := rb.do("GET", "/schemas/ids/4", "")
	if !strings.Contains(r.body, `"schemaType":"PROTOBUF"`) || !strings.Contains(r.body, `"references":[{"name":"address.proto","subject":"address","version":1}]`) {
		t.Errorf("protobuf by id: %s", r.body)
	}
	rb.expect("GET", "/subjects/address/versions/1/referencedby", "", 200, `[4]`)

	// JSON Schema: a $ref to another subject's schema.
	rb.expect("POST", "/subjects/point/versions", schemaBody(`{"type":"object","properties":{"x":{"type":"number"}}}`, "JSON"), 200, `{"id":5}`)
	shape := `{"type":"object","properties":{"center":{"$ref":"point.json"}}}`
	rb.expect("POST", "/subjects/shape/versions", schemaBody(shape, "JSON", "point.json", "point", "1"), 200, `{"id":6}`)
	rb.expect("GET", "/subjects/shape/versions/1/schema", "", 200, shape)
	rb.expect("GET", "/schemas/types", "", 200, `["JSON","PROTOBUF","AVRO"]`)
}

// TestNormalize: normalize=true stores a normalized form, so schemas that
// differ only in key order share an id.
func TestNormalize(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	a := `{"type":"object","properties":{"a":{"type":"string"}}}`
	b := `{"properties":{"a":{"type":"string"}},"type":"object"}`
	rb.expect("POST", "/subjects/j/versions?normalize=true", schemaBody(a, "JSON"), 200, `{"id":1}`)
	rb.expect("POST", "/subjects/j/versions?normalize=true", schemaBody(b, "JSON"), 200, `{"id":1}`)
	rb.expect("POST", "/subjects/j", schemaBody(a, "JSON"), 404, `{"error_code":40403,"message":"Schema not found"}`)
	rb.expect("POST", "/subjects/j?normalize=true", schemaBody(a, "JSON"), 200, `{"subject":"j","version":1,"id":1,"schemaType":"JSON","schema":"{\"properties\":{\"a\":{\"type\":\"string\"}},\"type\":\"object\"}"}`)
	// Without normalize the other key order is another schema (b is
	// literally the normalized text stored as id 1).
	rb.expect("PUT", "/config/k", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`)
	rb.expect("POST", "/subjects/k/versions", schemaBody(a, "JSON"), 200, `{"id":2}`)
	rb.expect("POST", "/subjects/k/versions", schemaBody(b, "JSON"), 200, `{"id":1}`)
	// normalize in the subject's config applies to every registration.
	rb.expect("PUT", "/config/n", `{"normalize":true}`, 200, `{"normalize":true}`)
	rb.expect("GET", "/config/n", "", 200, `{"normalize":true}`)
	rb.expect("POST", "/subjects/n/versions", schemaBody(b, "JSON"), 200, `{"id":1}`)
}

// TestNormalizeProtobuf: with normalize=true two .proto files that differ
// only in layout and comments are one schema, stored as protoprint prints
// it; without normalize the text is kept as sent (so ids of schemas
// registered before normalization existed do not change).
func TestNormalizeProtobuf(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	a := "syntax = \"proto3\";\npackage kb;\nmessage M { string a = 1; int32 b = 2; }"
	b := "// an order\nsyntax = \"proto3\";\n\npackage kb;\n\nmessage M {\n  string a = 1; // the name\n  int32 b = 2;\n}\n"
	rb.expect("POST", "/subjects/p/versions?normalize=true", schemaBody(a, "PROTOBUF"), 200, `{"id":1}`)
	rb.expect("POST", "/subjects/p/versions?normalize=true", schemaBody(b, "PROTOBUF"), 200, `{"id":1}`)
	r := rb.do("GET", "/schemas/ids/1/schema", "")
	if r.status != 200 || strings.Contains(r.body, "//") || !strings.Contains(r.body, "message M {") || !strings.Contains(r.body, "string a = 1;") {
		t.Errorf("the normalized schema: %d %q", r.status, r.body)
	}
	rb.expect("PUT", "/config/q", `{"compatibility":"NONE"}`, 200, `{"compatibility":"NONE"}`)
	rb.expect("POST", "/subjects/q/versions", schemaBody(a, "PROTOBUF"), 200, `{"id":2}`)
	rb.expect("POST", "/subjects/q/versions", schemaBody(b, "PROTOBUF"), 200, `{"id":3}`)
}
