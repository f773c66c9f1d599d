package restproxy_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
)

const (
	ctAvro       = "application/vnd.kafka.avro.v2+json"
	ctProtobuf   = "application/vnd.kafka.protobuf.v2+json"
	ctJSONSchema = "application/vnd.kafka.jsonschema.v2+json"
)

// startWithRegistry starts a broker whose proxy uses its own registry.
func startWithRegistry(t *testing.T) *env {
	e := start(t, map[string]string{"schema.registry.listeners": "http://127.0.0.1:0"})
	return e
}

// registryURL is the broker's own registry.
func (e *env) registryURL() string { return "http://" + e.b.SchemaRegistryAddrs()[0].String() }

type schemaProduceReply struct {
	KeySchemaID   *int `json:"key_schema_id"`
	ValueSchemaID *int `json:"value_schema_id"`
	Offsets       []struct {
		Partition int32   `json:"partition"`
		Offset    int64   `json:"offset"`
		ErrorCode *int    `json:"error_code"`
		Error     *string `json:"error"`
	} `json:"offsets"`
}

// consumeNative reads n records of topic from the start with franz-go.
func (e *env) consumeNative(topic string, n int) []*kgo.Record {
	e.t.Helper()
	cl := e.kafka(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(e.ctx)
		if err := e.ctx.Err(); err != nil {
			e.t.Fatalf("reading %s: %v (%d of %d records)", topic, err, len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// readAs creates an instance of format in a new group, subscribes it to
// topic from the start and returns the first n records it reads.
func (e *env) readAs(format, topic string, n int) []struct {
	Key, Value json.RawMessage
} {
	e.t.Helper()
	group := "g-" + format + "-" + topic
	var created struct {
		BaseURI string `json:"base_uri"`
	}
	e.must(200, &created, "POST", "/consumers/"+group, ctV2, fmt.Sprintf(`{"name":"c","format":%q,"auto.offset.reset":"earliest"}`, format))
	path := "/consumers/" + group + "/instances/c"
	e.must(204, nil, "POST", path+"/subscription", ctV2, fmt.Sprintf(`{"topics":[%q]}`, topic))
	var recs []struct{ Key, Value json.RawMessage }
	e.eventually("records of "+topic, func() bool {
		var more []struct{ Key, Value json.RawMessage }
		e.must(200, &more, "GET", path+"/records?timeout=500", "", "", "Accept", "application/vnd.kafka."+format+".v2+json")
		recs = append(recs, more...)
		return len(recs) >= n
	})
	e.must(204, nil, "DELETE", path, ctV2, "")
	return recs
}

// TestAvroThroughTheRegistry: avro records produced over HTTP register
// their schemas under the topic's subjects and are, byte for byte, what a
// Confluent serializer writes (read here with franz-go's header decoder
// and hamba/avro into a struct); a record written natively by such a
// serializer reads back over HTTP as Avro's JSON encoding.
func TestAvroThroughTheRegistry(t *testing.T) {
	e := startWithRegistry(t)
	e.createTopic("users", 1)
	userSchema := `{"type":"record","name":"User","namespace":"kb","fields":[{"name":"name","type":"string"},{"name":"age","type":["null","int"],"default":null}]}`
	var rep schemaProduceReply
	e.must(200, &rep, "POST", "/topics/users", ctAvro, jsonBody(t, map[string]any{
		"key_schema":   `"string"`,
		"value_schema": userSchema,
		"records": []any{
			map[string]any{"key": "k1", "value": map[string]any{"name": "ann", "age": map[string]any{"int": 31}}},
			map[string]any{"value": map[string]any{"name": "bob", "age": nil}},
		},
	}))
	if rep.KeySchemaID == nil || rep.ValueSchemaID == nil || len(rep.Offsets) != 2 || rep.Offsets[1].Offset != 1 {
		t.Fatalf("produce reply %+v", rep)
	}
	reg, err := sr.NewClient(sr.URLs(e.registryURL()))
	if err != nil {
		t.Fatal(err)
	}
	for subject, id := range map[string]int{"users-key": *rep.KeySchemaID, "users-value": *rep.ValueSchemaID} {
		ss, err := reg.SchemaByVersion(e.ctx, subject, -1)
		if err != nil || ss.ID != id {
			t.Fatalf("%s: %+v %v, want id %d", subject, ss, err, id)
		}
	}

	type user struct {
		Name string `avro:"name"`
		Age  *int   `avro:"age"`
	}
	var hdr sr.ConfluentHeader
	recs := e.consumeNative("users", 2)
	for i, want := range []user{{"ann", ptr(31)}, {"bob", nil}} {
		id, payload, err := hdr.DecodeID(recs[i].Value)
		if err != nil || id != *rep.ValueSchemaID {
			t.Fatalf("record %d: id %d %v", i, id, err)
		}
		var got user
		if err := avro.Unmarshal(avro.MustParse(userSchema), payload, &got); err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || (got.Age == nil) != (want.Age == nil) || got.Age != nil && *got.Age != *want.Age {
			t.Errorf("record %d: %+v, want %+v", i, got, want)
		}
	}
	if id, payload, err := hdr.DecodeID(recs[0].Key); err != nil || id != *rep.KeySchemaID || string(payload) != "\x04k1" {
		t.Errorf("key: %d %q %v", id, payload, err)
	}
	if recs[1].Key != nil {
		t.Errorf("a record without a key got key %q", recs[1].Key)
	}

	// A serializer's record, by id, and read back as Avro JSON.
	var serde sr.Serde
	serde.Register(*rep.ValueSchemaID, user{}, sr.EncodeFn(func(v any) ([]byte, error) {
		return avro.Marshal(avro.MustParse(userSchema), v)
	}))
	b, err := serde.Encode(user{Name: "cy", Age: ptr(7)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.kafka().ProduceSync(e.ctx, &kgo.Record{Topic: "users", Value: b}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.must(200, &rep, "POST", "/topics/users", ctAvro, fmt.Sprintf(`{"value_schema_id":%d,"records":[{"value":{"name":"dee"}}]}`, *rep.ValueSchemaID))
	got := e.readAs("avro", "users", 4)
	want := []string{`{"age":{"int":31},"name":"ann"}`, `{"age":null,"name":"bob"}`, `{"age":{"int":7},"name":"cy"}`, `{"age":null,"name":"dee"}`}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i].Value) != want[i] {
			t.Errorf("record %d: %s, want %s", i, got[i].Value, want[i])
		}
	}
	if string(got[0].Key) != `"k1"` || string(got[1].Key) != "null" {
		t.Errorf("keys %s %s", got[0].Key, got[1].Key)
	}
}

func ptr[T any](v T) *T { return &v }

// TestProtobufAndJSONSchemaThroughTheRegistry: protobuf records carry
// Confluent's message indexes and the message's binary form; jsonschema
// records the document, checked against its schema; both read back.
func TestProtobufAndJSONSchemaThroughTheRegistry(t *testing.T) {
	e := startWithRegistry(t)
	e.createTopic("pb", 1)
	e.createTopic("js", 1)
	var rep schemaProduceReply
	e.must(200, &rep, "POST", "/topics/pb", ctProtobuf, jsonBody(t, map[string]any{
		"value_schema": `syntax = "proto3"; package kb; message Order { string id = 1; int32 qty = 2; }`,
		"records":      []any{map[string]any{"value": map[string]any{"id": "o1", "qty": 2}}},
	}))
	recs := e.consumeNative("pb", 1)
	var hdr sr.ConfluentHeader
	id, rest, err := hdr.DecodeID(recs[0].Value)
	if err != nil || id != *rep.ValueSchemaID {
		t.Fatalf("protobuf id %d %v", id, err)
	}
	index, msg, err := hdr.DecodeIndex(rest, 8)
	if err != nil || len(index) != 1 || index[0] != 0 {
		t.Fatalf("message indexes %v %v", index, err)
	}
	// Order{id:"o1", qty:2}: field 1 bytes, field 2 varint.
	want := protowire.AppendVarint(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "o1"), 0)
	want = protowire.AppendVarint(protowire.AppendTag(want[:len(want)-1], 2, protowire.VarintType), 2)
	if string(msg) != string(want) {
		t.Fatalf("message % x, want % x", msg, want)
	}
	if got := e.readAs("protobuf", "pb", 1); len(got) != 1 || string(got[0].Value) != `{"id":"o1","qty":2}` {
		t.Fatalf("protobuf read back %+v", got)
	}

	schema := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	e.must(200, &rep, "POST", "/topics/js", ctJSONSchema, jsonBody(t, map[string]any{
		"value_schema": schema,
		"records":      []any{map[string]any{"value": map[string]any{"n": 5}}},
	}))
	wantError(t, "document against its schema", e.do("POST", "/topics/js", ctJSONSchema, jsonBody(t, map[string]any{
		"value_schema_id": *rep.ValueSchemaID,
		"records":         []any{map[string]any{"value": map[string]any{"n": "five"}}},
	})), 422, 42203)
	recs = e.consumeNative("js", 1)
	if id, doc, err := hdr.DecodeID(recs[0].Value); err != nil || id != *rep.ValueSchemaID || string(doc) != `{"n":5}` {
		t.Fatalf("jsonschema record: %d %s %v", id, doc, err)
	}
	if got := e.readAs("jsonschema", "js", 1); len(got) != 1 || string(got[0].Value) != `{"n":5}` {
		t.Fatalf("jsonschema read back %+v", got)
	}
}

// TestSchemaFormatErrors: Confluent's answers when a schema is missing,
// invalid or incompatible, when a value does not fit, and when a record
// is not in the registry's format.
func TestSchemaFormatErrors(t *testing.T) {
	e := startWithRegistry(t)
	e.createTopic("t", 1)
	s := `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	cases := []struct {
		what         string
		body         any
		status, code int
	}{
		{"values without a value schema", map[string]any{"records": []any{map[string]any{"value": 1}}}, 422, 42202},
		{"keys without a key schema", map[string]any{"value_schema": `"int"`, "records": []any{map[string]any{"key": 1, "value": 1}}}, 422, 42201},
		{"invalid schema", map[string]any{"value_schema": `{"type":"recordz"}`, "records": []any{map[string]any{"value": 1}}}, 422, 42205},
		{"unknown schema id", map[string]any{"value_schema_id": 999, "records": []any{map[string]any{"value": 1}}}, 404, 40403},
		{"value that does not fit", map[string]any{"value_schema": s, "records": []any{map[string]any{"value": map[string]any{"a": "x"}}}}, 422, 42203},
	}
	for _, c := range cases {
		wantError(t, c.what, e.do("POST", "/topics/t", ctAvro, jsonBody(t, c.body)), c.status, c.code)
	}
	// The subject t-value now holds R (from the last case's registration);
	// an incompatible change is refused by the registry (BACKWARD).
	e.must(200, nil, "POST", "/topics/t", ctAvro, jsonBody(t, map[string]any{"value_schema": s, "records": []any{map[string]any{"value": map[string]any{"a": 1}}}}))
	incompatible := `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	wantError(t, "incompatible schema", e.do("POST", "/topics/t", ctAvro, jsonBody(t, map[string]any{"value_schema": incompatible, "records": []any{map[string]any{"value": map[string]any{"a": "x"}}}})), 409, 409)

	// A record not in the registry's format is an error of the read.
	if err := e.kafka().ProduceSync(e.ctx, &kgo.Record{Topic: "t", Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	e.must(200, nil, "POST", "/consumers/bad", ctV2, `{"name":"c","format":"avro","auto.offset.reset":"earliest"}`)
	e.must(204, nil, "POST", "/consumers/bad/instances/c/assignments", ctV2, `{"partitions":[{"topic":"t","partition":0}]}`)
	e.must(204, nil, "POST", "/consumers/bad/instances/c/positions", ctV2, `{"offsets":[{"topic":"t","partition":0,"offset":1}]}`)
	var r reply
	e.eventually("the read of a plain record", func() bool {
		r = e.do("GET", "/consumers/bad/instances/c/records?timeout=500", "", "", "Accept", ctAvro)
		return r.status != 200 || string(r.body) != "[]"
	})
	wantError(t, "plain record read as avro", r, 500, 50002)
}

// TestV3RecordsWithSchemas: v3's POST .../records takes AVRO, PROTOBUF and
// JSONSCHEMA data with the schema as text (registered under the topic's
// subject), as an id, or as a subject's version; the records read back
// through a v2 instance of the schema's format.
func TestV3RecordsWithSchemas(t *testing.T) {
	e := startWithRegistry(t)
	e.createTopic("t3", 1)
	path := "/v3/clusters/" + e.clusterID() + "/topics/t3/records"
	schema := `{"type":"record","name":"P","fields":[{"name":"x","type":"int"}]}`
	type reply struct {
		ErrorCode int `json:"error_code"`
		Message   string
		Offset    int64
		Value     *struct {
			Type string
			Size int
		}
	}
	var r reply
	e.must(200, &r, "POST", path, "application/json", jsonBody(t, map[string]any{
		"value": map[string]any{"type": "AVRO", "schema": schema, "data": map[string]any{"x": 1}},
	}))
	if r.ErrorCode != 200 || r.Value == nil || r.Value.Type != "AVRO" || r.Value.Size != 6 {
		t.Fatalf("schema as text: %+v", r)
	}
	reg, err := sr.NewClient(sr.URLs(e.registryURL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := reg.SchemaByVersion(e.ctx, "t3-value", 1)
	if err != nil {
		t.Fatal(err)
	}
	e.must(200, &r, "POST", path, "application/json", jsonBody(t, map[string]any{
		"value": map[string]any{"schema_id": ss.ID, "data": map[string]any{"x": 2}},
	}))
	if r.ErrorCode != 200 || r.Value == nil || r.Value.Type != "AVRO" || r.Offset != 1 {
		t.Fatalf("schema by id: %+v", r)
	}
	e.must(200, &r, "POST", path, "application/json", jsonBody(t, map[string]any{
		"value": map[string]any{"subject": "t3-value", "schema_version": 1, "data": map[string]any{"x": 3}},
	}))
	if r.ErrorCode != 200 || r.Offset != 2 {
		t.Fatalf("schema by subject and version: %+v", r)
	}
	for what, body := range map[string]any{
		"data that does not fit":          map[string]any{"value": map[string]any{"schema_id": ss.ID, "data": map[string]any{"x": "no"}}},
		"a type that is not the schema's": map[string]any{"value": map[string]any{"type": "PROTOBUF", "schema_id": ss.ID, "data": map[string]any{"x": 4}}},
		"another strategy":                map[string]any{"value": map[string]any{"subject_name_strategy": "RECORD_NAME", "data": map[string]any{"x": 4}}},
	} {
		e.must(200, &r, "POST", path, "application/json", jsonBody(t, body))
		if r.ErrorCode != 400 {
			t.Errorf("%s: %+v, want error_code 400", what, r)
		}
	}
	e.must(200, &r, "POST", path, "application/json", jsonBody(t, map[string]any{
		"value": map[string]any{"schema_id": 4242, "data": 1},
	}))
	if r.ErrorCode != 404 {
		t.Errorf("an unknown schema id: %+v, want 404", r)
	}
	got := e.readAs("avro", "t3", 3)
	if len(got) != 3 || string(got[0].Value) != `{"x":1}` || string(got[2].Value) != `{"x":3}` {
		t.Fatalf("read back: %+v", got)
	}
}

// TestV3RecordsSubjectNameStrategies: v3's subject_name_strategy names the
// subject a schema given as text is registered under (RECORD_NAME: the
// record's full name, TOPIC_RECORD_NAME: "<topic>-<record>") and the one a
// schema_id must be registered under; without a schema the record-name
// strategies have no subject, as in Confluent's REST Proxy.
func TestV3RecordsSubjectNameStrategies(t *testing.T) {
	e := startWithRegistry(t)
	e.createTopic("t4", 1)
	e.createTopic("t5", 1)
	path := func(topic string) string { return "/v3/clusters/" + e.clusterID() + "/topics/" + topic + "/records" }
	type reply struct {
		ErrorCode int `json:"error_code"`
		Message   string
		Offset    int64
	}
	post := func(topic string, value map[string]any) reply {
		t.Helper()
		var r reply
		e.must(200, &r, "POST", path(topic), "application/json", jsonBody(t, map[string]any{"value": value}))
		return r
	}
	reg, err := sr.NewClient(sr.URLs(e.registryURL()))
	if err != nil {
		t.Fatal(err)
	}
	idOf := func(subject string) int {
		t.Helper()
		ss, err := reg.SchemaByVersion(e.ctx, subject, -1)
		if err != nil {
			t.Fatalf("subject %s: %v", subject, err)
		}
		return ss.ID
	}

	q := `{"type":"record","name":"Q","namespace":"kb","fields":[{"name":"x","type":"int"}]}`
	if r := post("t4", map[string]any{"subject_name_strategy": "RECORD_NAME", "schema": q, "data": map[string]any{"x": 1}}); r.ErrorCode != 200 {
		t.Fatalf("RECORD_NAME with a schema: %+v", r)
	}
	qID := idOf("kb.Q")
	if r := post("t4", map[string]any{"subject_name_strategy": "TOPIC_RECORD_NAME", "schema": q, "data": map[string]any{"x": 2}}); r.ErrorCode != 200 {
		t.Fatalf("TOPIC_RECORD_NAME with a schema: %+v", r)
	}
	if id := idOf("t4-kb.Q"); id != qID {
		t.Errorf("t4-kb.Q holds id %d, want the same schema's %d", id, qID)
	}
	if r := post("t4", map[string]any{"subject_name_strategy": "RECORD_NAME", "schema_id": qID, "data": map[string]any{"x": 3}}); r.ErrorCode != 200 || r.Offset != 2 {
		t.Fatalf("RECORD_NAME with the schema's id: %+v", r)
	}
	if _, err := reg.SchemaByVersion(e.ctx, "t4-value", -1); err == nil {
		t.Error("the record-name strategies registered under t4-value too")
	}
	// An id not registered under the strategy's subject is refused, for
	// TOPIC_NAME (t4-value has none) as for the others.
	p := `{"type":"record","name":"P","fields":[{"name":"x","type":"int"}]}`
	if r := post("t5", map[string]any{"schema": p, "data": map[string]any{"x": 1}}); r.ErrorCode != 200 {
		t.Fatalf("TOPIC_NAME with a schema: %+v", r)
	}
	pID := idOf("t5-value")
	for what, c := range map[string]struct {
		value map[string]any
		code  int
	}{
		"an id not under RECORD_NAME's subject":      {map[string]any{"subject_name_strategy": "RECORD_NAME", "schema_id": pID, "data": map[string]any{"x": 1}}, 400},
		"an id not under TOPIC_NAME's subject":       {map[string]any{"schema_id": qID, "data": map[string]any{"x": 1}}, 400},
		"RECORD_NAME with only a version":            {map[string]any{"subject_name_strategy": "RECORD_NAME", "schema_version": 1, "data": map[string]any{"x": 1}}, 400},
		"an unknown strategy":                        {map[string]any{"subject_name_strategy": "TOPIC", "schema": q, "data": map[string]any{"x": 1}}, 400},
		"RECORD_NAME of a schema that names nothing": {map[string]any{"subject_name_strategy": "RECORD_NAME", "schema": `"int"`, "data": 1}, 422},
	} {
		if r := post("t4", c.value); r.ErrorCode != c.code {
			t.Errorf("%s: %+v, want error_code %d", what, r, c.code)
		}
	}
	// An explicit subject wins over the strategy.
	if r := post("t4", map[string]any{"subject_name_strategy": "RECORD_NAME", "subject": "t5-value", "schema_id": pID, "data": map[string]any{"x": 4}}); r.ErrorCode != 200 {
		t.Errorf("RECORD_NAME with an explicit subject: %+v", r)
	}

	// Protobuf's record name is its first message's full name, JSON
	// Schema's its title.
	proto := "syntax = \"proto3\";\npackage kb.v1;\nmessage Order { int32 qty = 1; }\n"
	if r := post("t5", map[string]any{"type": "PROTOBUF", "subject_name_strategy": "TOPIC_RECORD_NAME", "schema": proto, "data": map[string]any{"qty": 2}}); r.ErrorCode != 200 {
		t.Fatalf("TOPIC_RECORD_NAME of a Protobuf schema: %+v", r)
	}
	idOf("t5-kb.v1.Order")
	js := `{"title":"Shipment","type":"object","properties":{"n":{"type":"integer"}}}`
	if r := post("t5", map[string]any{"type": "JSONSCHEMA", "subject_name_strategy": "RECORD_NAME", "schema": js, "data": map[string]any{"n": 1}}); r.ErrorCode != 200 {
		t.Fatalf("RECORD_NAME of a JSON Schema: %+v", r)
	}
	idOf("Shipment")

	got := e.readAs("avro", "t4", 4)
	want := []string{`{"x":1}`, `{"x":2}`, `{"x":3}`, `{"x":4}`}
	for i, r := range got {
		if string(r.Value) != want[i] {
			t.Errorf("t4 record %d: %s, want %s", i, r.Value, want[i])
		}
	}
}
