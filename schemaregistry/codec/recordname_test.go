package codec

import "testing"

// TestRecordName: the subject RecordNameStrategy gives each schema type,
// and the schemas that have none.
func TestRecordName(t *testing.T) {
	for _, c := range []struct {
		what, typ, text, want string
	}{
		{"avro record with a namespace", TypeAvro, `{"type":"record","name":"Q","namespace":"kb","fields":[]}`, "kb.Q"},
		{"avro enum, default type", "", `{"type":"enum","name":"Color","symbols":["RED"]}`, "Color"},
		{"avro primitive", TypeAvro, `"int"`, ""},
		{"protobuf first message", TypeProtobuf, "syntax = \"proto3\";\npackage kb.v1;\nmessage A {}\nmessage B {}\n", "kb.v1.A"},
		{"protobuf without a message", TypeProtobuf, "syntax = \"proto3\";\npackage kb;\n", ""},
		{"json schema title", TypeJSON, `{"title":"Shipment","type":"object"}`, "Shipment"},
		{"json schema without a title", TypeJSON, `{"type":"object"}`, ""},
		{"unknown type", "XML", `<a/>`, ""},
	} {
		got, err := RecordName(c.typ, c.text, nil)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: named %q, want an error", c.what, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.what, got, err, c.want)
		}
	}
}
