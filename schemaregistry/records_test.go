package schemaregistry

import (
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecordsConfluentJSON: keys and values are Confluent's JSON, and
// records Confluent's registry wrote (older and newer shapes) decode.
func TestRecordsConfluentJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"schema key", encodeKey(schemaKey("orders-value", 3)), `{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}`},
		{"global config key", encodeKey(subjectKey(keyConfig, "")), `{"keytype":"CONFIG","magic":0}`},
		{"subject mode key", encodeKey(subjectKey(keyMode, "s")), `{"keytype":"MODE","subject":"s","magic":0}`},
		{"delete subject key", encodeKey(subjectKey(keyDeleteSubj, "s")), `{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}`},
		{"noop key", encodeKey(recordKey{KeyType: keyNoop}), `{"keytype":"NOOP","magic":0}`},
		{"avro value", encodeSchemaValue(schemaValue{Subject: "s", Version: 1, ID: 7, SchemaType: typeAvro, Schema: `"string"`}), `{"subject":"s","version":1,"id":7,"schema":"\"string\"","deleted":false}`},
		{"protobuf value with references", encodeSchemaValue(schemaValue{Subject: "s", Version: 2, ID: 8, SchemaType: typeProtobuf, References: []Reference{{"a.proto", "a", 1}}, Schema: "x", Deleted: true}),
			`{"subject":"s","version":2,"id":8,"schemaType":"PROTOBUF","references":[{"name":"a.proto","subject":"a","version":1}],"schema":"x","deleted":true}`},
		{"config value", encodeValue(configValue{Subject: "s", CompatibilityLevel: levelFull}), `{"subject":"s","compatibilityLevel":"FULL"}`},
		{"delete subject value", encodeValue(deleteSubjectValue{Subject: "s", Version: 4}), `{"subject":"s","version":4}`},
		{"clear subject value", encodeValue(clearSubjectValue{Subject: "s"}), `{"subject":"s"}`},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, tc.want)
		}
	}

	// As Confluent's registries wrote them: a null subject, a newer value
	// with md5/metadata/ruleSet and an explicit AVRO, an unknown key type.
	st := newState()
	for _, kv := range [][2]string{
		{`{"keytype":"CONFIG","subject":null,"magic":0}`, `{"compatibilityLevel":"FULL_TRANSITIVE"}`},
		{`{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}`, `{"subject":"a","version":1,"id":1,"md5":"abc","schemaType":"AVRO","metadata":{"properties":{"owner":"x"}},"schema":"\"string\"","deleted":false}`},
		{`{"keytype":"SCHEMA","subject":"b","version":1,"magic":1}`, `{"subject":"b","version":1,"id":2,"schema":"\"int\""}`},
		{`{"keytype":"MODE","magic":0}`, `{"mode":"READONLY"}`},
		{`{"keytype":"CONTEXT","tenant":"default","context":".x","magic":0}`, `{}`},
		{`{"keytype":"DELETE_SUBJECT","subject":"b","magic":0}`, `{"subject":"b","version":1}`},
	} {
		r, err := decodeRecord([]byte(kv[0]), []byte(kv[1]))
		if err != nil {
			t.Fatalf("%s: %v", kv[0], err)
		}
		if err := st.apply(r); err != nil {
			t.Fatalf("%s: %v", kv[0], err)
		}
	}
	if got := st.compatibility("any"); got != levelFullTransitive {
		t.Errorf("global level %s, want FULL_TRANSITIVE", got)
	}
	if got := st.mode("any"); got != modeReadOnly {
		t.Errorf("global mode %s, want READONLY", got)
	}
	if v := st.subjects["a"][1]; v == nil || v.SchemaType != typeAvro || string(v.Metadata) != `{"properties":{"owner":"x"}}` {
		t.Errorf("a v1 = %+v", v)
	}
	if v := st.subjects["b"][1]; v == nil || v.SchemaType != typeAvro || !v.Deleted {
		t.Errorf("b v1 = %+v, want AVRO, soft-deleted by DELETE_SUBJECT", v)
	}

	// Records the registry cannot use are errors (logged and skipped).
	for _, kv := range [][2]string{
		{`not json`, `{}`},
		{`{"keytype":"SCHEMA","subject":"a","version":1,"magic":0}`, `{}`},
		{`{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}`, `{"subject":"a","version":1,"id":0,"schema":"x"}`},
		{`{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}`, `{"subject":"other","version":1,"id":3,"schema":"x"}`},
		{`{"keytype":"CONFIG","magic":0}`, `[1,2]`},
	} {
		if _, err := decodeRecord([]byte(kv[0]), []byte(kv[1])); err == nil {
			t.Errorf("%s %s decoded", kv[0], kv[1])
		}
	}
}

// TestStateRefusesDuplicates: the invariant of state: an id names one
// schema, a live version one id.
func TestStateRefusesDuplicates(t *testing.T) {
	st := newState()
	put := func(subject string, version, id int, schema string) error {
		return st.apply(record{key: schemaKey(subject, version), schema: &schemaValue{Subject: subject, Version: version, ID: id, SchemaType: typeAvro, Schema: schema}})
	}
	if err := put("a", 1, 1, `"string"`); err != nil {
		t.Fatal(err)
	}
	if err := put("b", 1, 1, `"int"`); err == nil || !strings.Contains(err.Error(), "already the id of another schema") {
		t.Errorf("id 1 for another schema: %v", err)
	}
	if err := put("a", 1, 2, `"int"`); err == nil || !strings.Contains(err.Error(), "already schema id 1") {
		t.Errorf("a v1 with another id: %v", err)
	}
	if err := put("c", 1, 1, `"string"`); err != nil {
		t.Errorf("the same schema under another subject: %v", err)
	}
	if st.schemaByID(1) == nil || len(st.subjectNames("", false)) != 2 || st.maxID != 1 {
		t.Errorf("state after refusals: subjects %v, maxID %d", st.subjectNames("", false), st.maxID)
	}
	// A tombstone removes the version; the id stays known while another
	// version has it.
	if err := st.apply(record{key: schemaKey("a", 1)}); err != nil {
		t.Fatal(err)
	}
	if st.subjects["a"] != nil || st.schemaByID(1) == nil {
		t.Errorf("after the tombstone: a = %v, id 1 = %v", st.subjects["a"], st.schemaByID(1))
	}
	if n := st.nextVersion("c"); n != 2 {
		t.Errorf("next version of c = %d, want 2", n)
	}
}

// TestRepairRecords: a SCHEMA record of ours refused because its key
// holds another writer's version is answered by re-writing that version,
// so that the latest record of the key (what compaction keeps) is the one
// every registry applied.
func TestRepairRecords(t *testing.T) {
	st := newState()
	won := schemaValue{Subject: "s", Version: 2, ID: 3, SchemaType: typeAvro, Schema: `"int"`}
	if err := st.apply(record{key: schemaKey("s", 2), schema: &won}); err != nil {
		t.Fatal(err)
	}
	lost := schemaValue{Subject: "s", Version: 2, ID: 3, SchemaType: typeAvro, Schema: `"long"`}
	free := schemaValue{Subject: "s", Version: 9, ID: 4, SchemaType: typeAvro, Schema: `"long"`}
	ours := []*kgo.Record{
		{Key: encodeKey(schemaKey("s", 2)), Value: encodeSchemaValue(lost)},
		{Key: encodeKey(schemaKey("s", 9)), Value: encodeSchemaValue(free)},             // its key holds nothing: nothing to repair
		{Key: encodeKey(subjectKey(keyConfig, "s")), Value: encodeValue(configValue{})}, // not a schema
	}
	got := repairRecords(st, ours)
	if len(got) != 1 || string(got[0].Key) != string(ours[0].Key) || string(got[0].Value) != string(encodeSchemaValue(won)) {
		t.Fatalf("repairs = %v", got)
	}
	if again := repairRecords(st, []*kgo.Record{{Key: ours[0].Key, Value: encodeSchemaValue(won)}}); len(again) != 0 {
		t.Errorf("a record that took effect was repaired: %v", again)
	}
}

// TestConfluentPrintedSchemaIsFound: a schema a Confluent registry stored
// in its own printing (whitespace, attribute order) is the same schema:
// registering it again here gives its id.
func TestConfluentPrintedSchemaIsFound(t *testing.T) {
	st := newState()
	confluent := `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"}]}`
	r, err := decodeRecord([]byte(`{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}`),
		[]byte(`{"subject":"a","version":1,"id":41,"schema":`+strconv.Quote(confluent)+`,"deleted":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.apply(r); err != nil {
		t.Fatal(err)
	}
	c, err := prepare(st, registerRequest{Schema: "{ \"type\": \"record\", \"name\": \"User\", \"namespace\": \"demo\", \"fields\": [{\"name\": \"id\", \"type\": \"long\"}] }"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := st.byContent[c.contentKey()]; !ok || id != 41 {
		t.Errorf("the same schema maps to id %d (%v), want 41", id, ok)
	}
}
