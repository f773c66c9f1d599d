package schemaregistry_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

const (
	userV1 = `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"}]}`
	// userV1Spaced is userV1 with other whitespace: the same schema.
	userV1Spaced = "{ \"type\": \"record\", \"name\": \"User\",\n \"namespace\": \"demo\", \"fields\": [ {\"name\": \"id\", \"type\": \"long\"} ] }"
	userV2       = `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"email","type":["null","string"],"default":null}]}`
	// userV1Canonical is how the registry stores and serves userV1.
	userV1Canonical = `{"name":"demo.User","type":"record","fields":[{"name":"id","type":"long"}]}`
)

// TestSubjectsAndSchemas: registration, ids shared across subjects, every
// read endpoint's exact shape, and the not-found answers.
func TestSubjectsAndSchemas(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	rb.expect("GET", "/", "", 200, `{}`)
	rb.expect("GET", "/subjects", "", 200, `[]`)
	rb.expect("GET", "/schemas/types", "", 200, `["JSON","PROTOBUF","AVRO"]`)
	rb.expect("GET", "/contexts", "", 200, `["."]`)

	rb.expect("POST", "/subjects/users-value/versions", schemaBody(userV1, ""), 200, `{"id":1}`)
	rb.expect("POST", "/subjects/users-value/versions", schemaBody(userV1Spaced, "AVRO"), 200, `{"id":1}`) // the same schema: same id, no new version
	rb.expect("POST", "/subjects/other-value/versions", schemaBody(userV1, ""), 200, `{"id":1}`)           // ids are global
	rb.expect("POST", "/subjects/users-value/versions", schemaBody(userV2, ""), 200, `{"id":2}`)

	rb.expect("POST", "/subjects/team%2Fusers/versions", schemaBody(userV1, ""), 200, `{"id":1}`) // a subject with a slash
	rb.expect("GET", "/subjects/team%2Fusers/versions", "", 200, `[1]`)
	rb.expect("DELETE", "/subjects/team%2Fusers", "", 200, `[1]`)
	rb.expect("DELETE", "/subjects/team%2Fusers?permanent=true", "", 200, `[1]`)
	rb.expect("GET", "/subjects", "", 200, `["other-value","users-value"]`)
	rb.expect("GET", "/subjects?subjectPrefix=users", "", 200, `["users-value"]`)
	rb.expect("GET", "/subjects/users-value/versions", "", 200, `[1,2]`)
	v1 := `{"subject":"users-value","version":1,"id":1,"schema":` + strconv.Quote(userV1Canonical) + `}`
	rb.expect("GET", "/subjects/users-value/versions/1", "", 200, v1)
	for _, latest := range []string{"latest", "-1", "2"} {
		r := rb.do("GET", "/subjects/users-value/versions/"+latest, "")
		if r.status != 200 || !strings.HasPrefix(r.body, `{"subject":"users-value","version":2,"id":2,"schema":`) {
			t.Errorf("versions/%s: %d %s", latest, r.status, r.body)
		}
	}
	rb.expect("GET", "/subjects/users-value/versions/1/schema", "", 200, userV1Canonical)
	rb.expect("GET", "/schemas/ids/1", "", 200, `{"schema":`+strconv.Quote(userV1Canonical)+`}`)
	rb.expect("GET", "/schemas/ids/1/schema", "", 200, userV1Canonical)
	rb.expect("GET", "/schemas/ids/1/subjects", "", 200, `["other-value","users-value"]`)
	rb.expect("GET", "/schemas/ids/1/versions", "", 200, `[{"subject":"other-value","version":1},{"subject":"users-value","version":1}]`)
	rb.expect("GET", "/schemas/ids/1?subject=users-value", "", 200, `{"subject":"users-value","version":1,"schema":`+strconv.Quote(userV1Canonical)+`}`)
	// Another subject: Confluent falls back to any version with the id.
	if r := rb.do("GET", "/schemas/ids/2?subject=other-value", ""); r.status != 200 || !strings.HasPrefix(r.body, `{"subject":"users-value","version":2,"schema":`) {
		t.Errorf("id 2 with another subject: %d %s", r.status, r.body)
	}
	r := rb.do("GET", "/schemas?subjectPrefix=users", "")
	var list []map[string]any
	r.json(t, &list)
	if len(list) != 2 || list[0]["version"] != 1.0 || list[1]["id"] != 2.0 {
		t.Errorf("/schemas: %s", r.body)
	}
	rb.expect("GET", "/schemas?latestOnly=true&subjectPrefix=users", "", 200, `[{"subject":"users-value","version":2,"id":2,"schema":`+strconv.Quote(mustCanonical(t, rb, 2))+`}]`)

	// Lookup: which version of the subject has this schema.
	rb.expect("POST", "/subjects/users-value", schemaBody(userV1Spaced, ""), 200, v1)
	rb.expectError("POST", "/subjects/users-value", schemaBody(`"string"`, ""), 404, 40403)
	rb.expectError("POST", "/subjects/nobody", schemaBody(userV1, ""), 404, 40401)

	// Not found and invalid.
	rb.expectError("GET", "/subjects/nobody/versions", "", 404, 40401)
	rb.expectError("GET", "/subjects/nobody/versions/1", "", 404, 40401)
	rb.expectError("GET", "/subjects/users-value/versions/9", "", 404, 40402)
	e := rb.expectError("GET", "/subjects/users-value/versions/abc", "", 422, 42202)
	if !strings.Contains(e.body, `The specified version 'abc' is not a valid version id`) {
		t.Errorf("42202 message: %s", e.body)
	}
	rb.expectError("GET", "/subjects/users-value/versions/0", "", 422, 42202)
	rb.expectError("GET", "/schemas/ids/99", "", 404, 40403)
	rb.expect("GET", "/schemas/ids/99", "", 404, `{"error_code":40403,"message":"Schema 99 not found"}`)
	rb.expect("GET", "/subjects/nobody/versions", "", 404, `{"error_code":40401,"message":"Subject 'nobody' not found."}`)
	rb.expectError("GET", "/no/such/path", "", 404, 404)
	rb.expectError("PATCH", "/subjects", "", 405, 405)
	rb.expectError("GET", "/subjects/users-value/versions/1/referencedby/x", "", 404, 404)

	// Metadata.
	var md struct {
		Scope struct {
			Path     []string          `json:"path"`
			Clusters map[string]string `json:"clusters"`
		} `json:"scope"`
	}
	rb.do("GET", "/v1/metadata/id", "").json(t, &md)
	if md.Scope.Clusters["kafka-cluster"] == "" || md.Scope.Clusters["schema-registry-cluster"] == "" || md.Scope.Path == nil {
		t.Errorf("/v1/metadata/id: %+v", md)
	}
}

func mustCanonical(t *testing.T, rb *registryBroker, id int) string {
	t.Helper()
	r := rb.do("GET", "/schemas/ids/"+strconv.Itoa(id)+"/schema", "")
	if r.status != 200 {
		t.Fatalf("schema %d: %d %s", id, r.status, r.body)
	}
	return r.body
}

// TestContentTypesAndBadInput: Confluent's three content types, 406/415
// for others, bounded bodies, malformed JSON and invalid schemas of every
// type, each with Confluent's error code; the registry keeps serving.
func TestContentTypesAndBadInput(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	for _, ct := range []string{"application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json", "application/json"} {
		r := rb.do("POST", "/subjects/ct/versions", schemaBody(`"string"`, ""), "Content-Type: "+ct, "Accept: "+ct)
		if r.status != 200 || r.ct != ct || r.body != `{"id":1}` {
			t.Errorf("%s: %d %q %s", ct, r.status, r.ct, r.body)
		}
	}
	if r := rb.do("GET", "/subjects", ""); r.ct != "application/vnd.schemaregistry.v1+json" {
		t.Errorf("default content type %q", r.ct)
	}
	if r := rb.do("GET", "/subjects", "", "Accept: text/html"); r.status != http.StatusNotAcceptable {
		t.Errorf("Accept: text/html: %d %s", r.status, r.body)
	}
	if r := rb.do("POST", "/subjects/ct/versions", schemaBody(`"int"`, ""), "Content-Type: text/plain"); r.status != http.StatusUnsupportedMediaType || r.errorCode(t) != 415 {
		t.Errorf("Content-Type: text/plain: %d %s", r.status, r.body)
	}
	big := schemaBody(`{"type":"record","name":"Big","doc":"`+strings.Repeat("x", 2<<20)+`","fields":[]}`, "")
	rb.expectError("POST", "/subjects/big/versions", big, http.StatusRequestEntityTooLarge, 413)
	rb.expectError("POST", "/subjects/bad/versions", `{"schema": `, 400, 400)
	rb.expectError("POST", "/subjects/bad/versions", `{"schema": 5}`, 422, 422)
	for _, tc := range []struct{ name, body string }{
		{"avro syntax", schemaBody(`{"type":"record","name":"R","fields":[{"name":"a"}]}`, "")},
		{"avro unknown named type", schemaBody(`{"type":"record","name":"R","fields":[{"name":"a","type":"Missing"}]}`, "")},
		{"avro not json", schemaBody(`{nope`, "")},
		{"empty schema", schemaBody(``, "")},
		{"unknown schema type", schemaBody(`"string"`, "XML")},
		{"protobuf syntax", schemaBody(`syntax = "proto3"; message M { int32 a = ; }`, "PROTOBUF")},
		{"protobuf unknown import", schemaBody(`syntax = "proto3"; import "missing.proto"; message M { int32 a = 1; }`, "PROTOBUF")},
		{"json schema not json", schemaBody(`{"type":`, "JSON")},
		{"json schema invalid keyword value", schemaBody(`{"type":"object","properties":{"a":{"type":"nonsense"}}}`, "JSON")},
		{"json schema unresolvable $ref", schemaBody(`{"$ref":"other.json"}`, "JSON")},
		{"unknown reference", schemaBody(`{"type":"record","name":"R","fields":[{"name":"a","type":"demo.User"}]}`, "", "demo.User", "nobody", "1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rb.expectError("POST", "/subjects/bad/versions", tc.body, 422, 42201)
			t.Log(r.body)
		})
	}
	rb.expectError("POST", "/subjects/%20/versions", schemaBody(`"int"`, ""), 422, 42208)
	// Still serving.
	rb.expect("POST", "/subjects/ct/versions", schemaBody(`"string"`, ""), 200, `{"id":1}`)
	rb.expect("GET", "/subjects", "", 200, `["ct"]`)
}
