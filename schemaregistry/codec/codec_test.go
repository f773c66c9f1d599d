package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

// TestRoundTrip: a JSON value encodes to the payload the schema's own
// library writes for the same value, and decodes back to the same JSON.
func TestRoundTrip(t *testing.T) {
	const avroRecord = `{"type":"record","name":"R","namespace":"ns","fields":[
		{"name":"s","type":"string"},
		{"name":"opt","type":["null","long"]},
		{"name":"u","type":["int","string",{"type":"record","name":"Inner","fields":[{"name":"x","type":"double"}]}]},
		{"name":"b","type":"bytes"},
		{"name":"f","type":{"type":"fixed","name":"Two","size":2}},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"d","type":{"type":"int","logicalType":"date"}},
		{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":6,"scale":2}},
		{"name":"m","type":{"type":"map","values":"int"}},
		{"name":"a","type":{"type":"array","items":"float"}}]}`
	cases := []struct {
		name, typ, schema, json string
		// want is the payload, or "" to check only the round trip.
		want []byte
	}{
		{"avro string", "AVRO", `"string"`, `"hi"`, []byte{4, 'h', 'i'}},
		{"avro int", "", `"int"`, `-3`, []byte{5}},
		{"avro nullable null", "AVRO", `["null","string"]`, `null`, []byte{0}},
		{"avro nullable branch", "AVRO", `["null","string"]`, `{"string":"x"}`, []byte{2, 2, 'x'}},
		{"avro record", "AVRO", avroRecord, `{"s":"a","opt":{"long":7},"u":{"ns.Inner":{"x":1.5}},"b":"\u0000\u00ff","f":"ab","e":"B","ts":1700000000123,"d":19000,"dec":"\u0085","m":{"k":3},"a":[0.5]}`, nil},
		{"avro record other branch", "AVRO", avroRecord, `{"s":"","opt":null,"u":{"string":"z"},"b":"","f":"\u0001\u0002","e":"A","ts":0,"d":0,"dec":"\u0000","m":{},"a":[]}`, nil},
		{"protobuf", "PROTOBUF", `syntax = "proto3"; package p; message M { string name = 1; int64 n = 2; repeated string tags = 3; }`, `{"name":"a","n":"5","tags":["x"]}`, []byte{0, 10, 1, 'a', 16, 5, 26, 1, 'x'}},
		{"json", "JSON", `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`, `{"a":1}`, []byte(`{"a":1}`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cd, err := New(c.typ, c.schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			payload, err := cd.Encode([]byte(c.json))
			if err != nil {
				t.Fatal(err)
			}
			if c.want != nil && !bytes.Equal(payload, c.want) {
				t.Fatalf("payload % x, want % x", payload, c.want)
			}
			back, err := cd.Decode(payload)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, back, []byte(c.json)) {
				t.Fatalf("decoded %s, want %s", back, c.json)
			}
		})
	}
}

// TestAvroMatchesHamba: the payload of a record is what hamba/avro writes
// for the same value from a Go struct (a serializer's path).
func TestAvroMatchesHamba(t *testing.T) {
	schema := `{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":["null","int"],"default":null}]}`
	type user struct {
		Name string `avro:"name"`
		Age  *int   `avro:"age"`
	}
	age := 42
	want, err := avro.Marshal(avro.MustParse(schema), user{"ann", &age})
	if err != nil {
		t.Fatal(err)
	}
	cd, err := New("AVRO", schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cd.Encode([]byte(`{"name":"ann","age":{"int":42}}`))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encode: % x %v, want % x", got, err, want)
	}
	// A missing field with a default takes it.
	got, err = cd.Encode([]byte(`{"name":"ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	want, _ = avro.Marshal(avro.MustParse(schema), user{Name: "ann"})
	if !bytes.Equal(got, want) {
		t.Fatalf("default: % x, want % x", got, want)
	}
}

// TestProtobufNestedMessageIndexes: a payload written for a nested
// message (indexes [0, 1]) decodes as that message.
func TestProtobufNestedMessageIndexes(t *testing.T) {
	cd, err := New("PROTOBUF", `syntax = "proto3"; message A { message X { int32 x = 1; } message Y { string y = 1; } } message B { bool b = 1; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	// count 2 (zigzag 4), indexes 0 and 1 (zigzag 0, 2), then Y{y:"q"}
	got, err := cd.Decode([]byte{4, 0, 2, 10, 1, 'q'})
	if err != nil || string(got) != `{"y":"q"}` {
		t.Fatalf("nested: %s %v", got, err)
	}
	// count 1, index 1: B
	got, err = cd.Decode([]byte{2, 2, 8, 1})
	if err != nil || string(got) != `{"b":true}` {
		t.Fatalf("second top-level: %s %v", got, err)
	}
	for _, bad := range [][]byte{{2, 4}, {2}, {0x80}, {200, 1}} {
		if _, err := cd.Decode(bad); err == nil {
			t.Errorf("% x decoded", bad)
		}
	}
}

// TestRefused: values that do not match the schema are errors naming
// where, never a panic.
func TestRefused(t *testing.T) {
	cases := []struct{ typ, schema, json, want string }{
		{"AVRO", `"int"`, `"x"`, "not a int"},
		{"AVRO", `"int"`, `3000000000`, "not an Avro int"},
		{"AVRO", `["null","string"]`, `"x"`, "a union value is null or"},
		{"AVRO", `["null","string"]`, `{"int":1}`, "not a branch"},
		{"AVRO", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, `{}`, `field "a" is missing`},
		{"AVRO", `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`, `{"a":1,"z":2}`, `no field "z"`},
		{"AVRO", `{"type":"enum","name":"E","symbols":["A"]}`, `"Q"`, "not a symbol"},
		{"AVRO", `{"type":"fixed","name":"F","size":2}`, `"abc"`, "3 bytes"},
		{"AVRO", `"bytes"`, `"\u0100"`, "U+0000 to U+00FF"},
		{"AVRO", `"string"`, `{`, "not JSON"},
		{"PROTOBUF", `syntax = "proto3"; message M { int32 a = 1; }`, `{"b":1}`, "Protobuf's JSON mapping"},
		{"JSON", `{"type":"object","required":["a"]}`, `{}`, "missing property"},
	}
	for _, c := range cases {
		cd, err := New(c.typ, c.schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cd.Encode([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want an error with %q", c.schema, c.json, err, c.want)
		}
	}
	if _, err := New("XML", "<a/>", nil); err == nil {
		t.Error("unknown type accepted")
	}
}

func TestFrame(t *testing.T) {
	b := Frame(258, []byte{9})
	if !bytes.Equal(b, []byte{0, 0, 0, 1, 2, 9}) {
		t.Fatalf("% x", b)
	}
	id, p, err := Unframe(b)
	if err != nil || id != 258 || !bytes.Equal(p, []byte{9}) {
		t.Fatalf("%d % x %v", id, p, err)
	}
	for _, bad := range [][]byte{nil, {1, 0, 0, 0, 1}, {0, 0, 0}} {
		if _, _, err := Unframe(bad); err == nil {
			t.Errorf("% x unframed", bad)
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// TestProtoFromSerialized: a schema sent as a base64 FileDescriptorProto
// (confluent-kafka python's form) becomes .proto text that compiles to
// the same messages; a .proto file is not taken for one.
func TestProtoFromSerialized(t *testing.T) {
	src := `syntax = "proto3"; package kb; import "google/protobuf/timestamp.proto"; message Order { string id = 1; repeated int32 qty = 2; google.protobuf.Timestamp at = 3; map<string, string> tags = 4; oneof pay { string card = 5; bool cash = 6; } enum Kind { A = 0; B = 1; } Kind kind = 7; }`
	fd, err := CompileProtobuf(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := proto.Marshal(protodesc.ToFileDescriptorProto(fd))
	if err != nil {
		t.Fatal(err)
	}
	text, ok, err := ProtoFromSerialized(base64.StdEncoding.EncodeToString(raw))
	if err != nil || !ok {
		t.Fatalf("%v %v", ok, err)
	}
	again, err := CompileProtobuf(text, nil)
	if err != nil {
		t.Fatalf("the printed text does not compile: %v\n%s", err, text)
	}
	want, got := fd.Messages().Get(0), again.Messages().Get(0)
	if want.FullName() != got.FullName() || want.Fields().Len() != got.Fields().Len() {
		t.Fatalf("printed %s, fields %d, want %s with %d:\n%s", got.FullName(), got.Fields().Len(), want.FullName(), want.Fields().Len(), text)
	}
	for i := range want.Fields().Len() {
		w, g := want.Fields().Get(i), got.Fields().Get(i)
		if w.Name() != g.Name() || w.Number() != g.Number() || w.Kind() != g.Kind() || w.Cardinality() != g.Cardinality() || w.IsMap() != g.IsMap() {
			t.Errorf("field %s: printed as %s %d %v", w.Name(), g.Name(), g.Number(), g.Kind())
		}
	}
	if _, ok, _ := ProtoFromSerialized(src); ok {
		t.Error("a .proto file was taken for a serialized descriptor")
	}
}
