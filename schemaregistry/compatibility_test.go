package schemaregistry

import (
	"strings"
	"testing"
)

// compatCase is one rule: a change from old to new and whether each
// direction holds. backward: new reads old's data; forward: old reads
// new's data. want is a difference type the failing direction reports.
type compatCase struct {
	rule               string
	old, new           string
	backward, forward  bool
	wantInBackwardFail string
}

func runCompatCases(t *testing.T, typ string, cases []compatCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			o, err := parseSchema(typ, tc.old, nil)
			if err != nil {
				t.Fatalf("old schema: %v", err)
			}
			n, err := parseSchema(typ, tc.new, nil)
			if err != nil {
				t.Fatalf("new schema: %v", err)
			}
			prev := []previousVersion{{version: 1, text: tc.old, schema: o}}
			back := checkCompatibility(levelBackward, n, prev)
			fwd := checkCompatibility(levelForward, n, prev)
			if (len(back) == 0) != tc.backward {
				t.Errorf("BACKWARD compatible = %v, want %v: %v", len(back) == 0, tc.backward, back)
			}
			if (len(fwd) == 0) != tc.forward {
				t.Errorf("FORWARD compatible = %v, want %v: %v", len(fwd) == 0, tc.forward, fwd)
			}
			full := checkCompatibility(levelFull, n, prev)
			if (len(full) == 0) != (tc.backward && tc.forward) {
				t.Errorf("FULL compatible = %v, want %v", len(full) == 0, tc.backward && tc.forward)
			}
			if none := checkCompatibility(levelNone, n, prev); len(none) != 0 {
				t.Errorf("NONE reported %v", none)
			}
			if tc.wantInBackwardFail != "" && !strings.Contains(strings.Join(back, " "), tc.wantInBackwardFail) {
				t.Errorf("BACKWARD messages %v do not name %s", back, tc.wantInBackwardFail)
			}
		})
	}
}

const avroV1 = `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`

// TestAvroCompatibilityRules: Avro's schema resolution rules (the
// specification's "Schema Resolution").
func TestAvroCompatibilityRules(t *testing.T) {
	runCompatCases(t, typeAvro, []compatCase{
		{rule: "adding a field with a default", old: avroV1,
			new:      `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"email","type":["null","string"],"default":null}]}`,
			backward: true, forward: true},
		{rule: "adding a field without a default", old: avroV1,
			new:      `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"age","type":"int"}]}`,
			backward: false, forward: true},
		{rule: "removing a field without a default", old: avroV1,
			new:      `{"type":"record","name":"User","namespace":"demo","fields":[{"name":"id","type":"long"}]}`,
			backward: true, forward: false},
		{rule: "promoting int to long", old: `{"type":"record","name":"R","fields":[{"name":"n","type":"int"}]}`,
			new:      `{"type":"record","name":"R","fields":[{"name":"n","type":"long"}]}`,
			backward: true, forward: false},
		{rule: "changing a field's type to an unrelated one", old: `{"type":"record","name":"R","fields":[{"name":"n","type":"int"}]}`,
			new:      `{"type":"record","name":"R","fields":[{"name":"n","type":"string"}]}`,
			backward: false, forward: false},
		{rule: "adding an enum symbol", old: `{"type":"enum","name":"E","symbols":["A","B"]}`,
			new:      `{"type":"enum","name":"E","symbols":["A","B","C"]}`,
			backward: true, forward: false},
		{rule: "renaming the record", old: avroV1,
			new:      `{"type":"record","name":"Person","namespace":"demo","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`,
			backward: false, forward: false},
		{rule: "widening to a union", old: `"string"`, new: `["null","string"]`, backward: true, forward: false},
	})
}

// TestProtobufCompatibilityRules: Confluent's Protobuf rules (its
// SchemaDiff's compatible changes; everything else breaks).
func TestProtobufCompatibilityRules(t *testing.T) {
	const v1 = `syntax = "proto3"; package demo; message User { int64 id = 1; string name = 2; }`
	runCompatCases(t, typeProtobuf, []compatCase{
		{rule: "FIELD_ADDED", old: v1, new: `syntax = "proto3"; package demo; message User { int64 id = 1; string name = 2; string email = 3; }`, backward: true, forward: true},
		{rule: "FIELD_REMOVED", old: v1, new: `syntax = "proto3"; package demo; message User { int64 id = 1; }`, backward: true, forward: true},
		{rule: "FIELD_NAME_CHANGED", old: v1, new: `syntax = "proto3"; package demo; message User { int64 id = 1; string full_name = 2; }`, backward: true, forward: true},
		{rule: "scalar kind within a wire group (int64 to uint64)", old: v1, new: `syntax = "proto3"; package demo; message User { uint64 id = 1; string name = 2; }`, backward: true, forward: true},
		{rule: "FIELD_STRING_OR_BYTES (string to bytes)", old: v1, new: `syntax = "proto3"; package demo; message User { int64 id = 1; bytes name = 2; }`, backward: true, forward: true},
		{rule: "FIELD_SCALAR_KIND_CHANGED", old: v1, new: `syntax = "proto3"; package demo; message User { string id = 1; string name = 2; }`, wantInBackwardFail: protoFieldScalarKindChanged},
		{rule: "FIELD_KIND_CHANGED", old: v1, new: `syntax = "proto3"; package demo; message Name { string v = 1; } message User { int64 id = 1; Name name = 2; }`, wantInBackwardFail: protoFieldKindChanged},
		{rule: "FIELD_NAMED_TYPE_CHANGED", old: `syntax = "proto3"; message A {} message B {} message M { A f = 1; }`, new: `syntax = "proto3"; message A {} message B {} message M { B f = 1; }`, wantInBackwardFail: protoFieldNamedTypeChanged},
		{rule: "FIELD_NUMERIC_LABEL_CHANGED", old: v1, new: `syntax = "proto3"; package demo; message User { repeated int64 id = 1; string name = 2; }`, wantInBackwardFail: protoFieldNumericLabelChanged},
		{rule: "MESSAGE_REMOVED", old: `syntax = "proto3"; message A {} message B {}`, new: `syntax = "proto3"; message A {}`, wantInBackwardFail: protoMessageRemoved, forward: true},
		{rule: "MESSAGE_ADDED", old: `syntax = "proto3"; message A {}`, new: `syntax = "proto3"; message A {} message B {}`, backward: true, wantInBackwardFail: "", forward: false},
		{rule: "PACKAGE_CHANGED", old: v1, new: `syntax = "proto3"; package other; message User { int64 id = 1; string name = 2; }`, wantInBackwardFail: protoPackageChanged},
		{rule: "REQUIRED_FIELD_ADDED", old: `syntax = "proto2"; message M { optional int32 a = 1; }`, new: `syntax = "proto2"; message M { optional int32 a = 1; required int32 b = 2; }`, wantInBackwardFail: protoRequiredFieldAdded},
		{rule: "ONEOF_FIELD_REMOVED", old: `syntax = "proto3"; message M { oneof o { int32 a = 1; string b = 2; } }`, new: `syntax = "proto3"; message M { oneof o { int32 a = 1; } }`, wantInBackwardFail: protoOneofFieldRemoved, forward: true},
		{rule: "one field moved to a new oneof", old: `syntax = "proto3"; message M { int32 a = 1; }`, new: `syntax = "proto3"; message M { oneof o { int32 a = 1; } }`, backward: true, forward: true},
		{rule: "MULTIPLE_FIELDS_MOVED_TO_ONEOF", old: `syntax = "proto3"; message M { int32 a = 1; int32 b = 2; }`, new: `syntax = "proto3"; message M { oneof o { int32 a = 1; int32 b = 2; } }`, wantInBackwardFail: protoMultipleFieldsToOneof, forward: true},
		{rule: "FIELD_MOVED_TO_EXISTING_ONEOF", old: `syntax = "proto3"; message M { int32 a = 1; oneof o { int32 b = 2; } }`, new: `syntax = "proto3"; message M { oneof o { int32 a = 1; int32 b = 2; } }`, wantInBackwardFail: protoFieldMovedToExistOneof, forward: true},
		{rule: "ENUM_CONST_ADDED", old: `syntax = "proto3"; enum E { A = 0; } message M { E e = 1; }`, new: `syntax = "proto3"; enum E { A = 0; B = 1; } message M { E e = 1; }`, backward: true, forward: true},
	})
}

// TestJSONSchemaCompatibilityRules: Confluent's JSON Schema rules with
// open, closed and partially open content models.
func TestJSONSchemaCompatibilityRules(t *testing.T) {
	obj := func(props, extra string) string {
		return `{"type":"object","properties":{` + props + `}` + extra + `}`
	}
	closed := `,"additionalProperties":false`
	runCompatCases(t, typeJSON, []compatCase{
		{rule: "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, ""),
			wantInBackwardFail: jsonPropAddedToOpen, forward: true},
		{rule: "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", old: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, ""), new: obj(`"a":{"type":"string"}`, ""),
			backward: true, forward: false},
		{rule: "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", old: obj(`"a":{"type":"string"}`, closed), new: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, closed),
			backward: true, forward: false},
		{rule: "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", old: obj(`"a":{"type":"string"}`, closed), new: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, closed+`,"required":["b"]`),
			wantInBackwardFail: jsonRequiredPropAddedUnopen},
		{rule: "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", old: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, closed), new: obj(`"a":{"type":"string"}`, closed),
			wantInBackwardFail: jsonPropRemovedFromClosed, forward: true},
		{rule: "property added covered by a partially open model", old: obj(`"a":{"type":"string"}`, `,"additionalProperties":{"type":"string"}`), new: obj(`"a":{"type":"string"},"b":{"type":"string"}`, `,"additionalProperties":{"type":"string"}`),
			backward: true, forward: true},
		{rule: "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", old: obj(`"a":{"type":"string"}`, `,"additionalProperties":{"type":"string"}`), new: obj(`"a":{"type":"string"},"b":{"type":"integer"}`, `,"additionalProperties":{"type":"string"}`),
			wantInBackwardFail: jsonPropAddedNotCovered},
		{rule: "TYPE_EXTENDED", old: `{"type":"string"}`, new: `{"type":["string","null"]}`, backward: true, forward: false},
		{rule: "TYPE_NARROWED", old: `{"type":["string","null"]}`, new: `{"type":"string"}`, wantInBackwardFail: jsonTypeNarrowed, forward: true},
		{rule: "integer to number", old: `{"type":"integer"}`, new: `{"type":"number"}`, backward: true, forward: false},
		{rule: "MAX_LENGTH_DECREASED", old: `{"type":"string","maxLength":10}`, new: `{"type":"string","maxLength":5}`, wantInBackwardFail: jsonMaxLengthDecreased, forward: true},
		{rule: "MIN_LENGTH_ADDED", old: `{"type":"string"}`, new: `{"type":"string","minLength":1}`, wantInBackwardFail: jsonMinLengthAdded, forward: true},
		{rule: "ENUM_ARRAY_EXTENDED", old: `{"enum":["a","b"]}`, new: `{"enum":["a","b","c"]}`, backward: true, forward: false},
		{rule: "ENUM_ARRAY_NARROWED", old: `{"enum":["a","b"]}`, new: `{"enum":["a"]}`, wantInBackwardFail: jsonEnumNarrowed, forward: true},
		{rule: "REQUIRED_ATTRIBUTE_ADDED", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"}`, `,"required":["a"]`), wantInBackwardFail: jsonRequiredAdded, forward: true},
		{rule: "ADDITIONAL_PROPERTIES_REMOVED", old: obj(`"a":{"type":"string"}`, ""), new: obj(`"a":{"type":"string"}`, closed), wantInBackwardFail: jsonAdditionalPropsRemoved, forward: true},
		{rule: "SUM_TYPE_EXTENDED", old: `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, new: `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`, backward: true, forward: false},
		{rule: "COMBINED_TYPE_CHANGED", old: `{"oneOf":[{"type":"string"}]}`, new: `{"allOf":[{"type":"string"}]}`, wantInBackwardFail: jsonCombinedTypeChanged},
		{rule: "local $ref followed", old: `{"$defs":{"s":{"type":"string"}},"type":"object","properties":{"a":{"$ref":"#/$defs/s"}}}`, new: `{"$defs":{"s":{"type":"string","maxLength":3}},"type":"object","properties":{"a":{"$ref":"#/$defs/s"}}}`, wantInBackwardFail: jsonMaxLengthAdded, forward: true},
	})
}

// TestTransitiveLevels: a _TRANSITIVE level checks every earlier version,
// the plain level only the latest.
func TestTransitiveLevels(t *testing.T) {
	history := []string{
		`{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}`,
		`{"type":"record","name":"R","fields":[{"name":"b","type":"int","default":0}]}`,
	}
	// v4 reads and is read by v3, but cannot read v1's data (no b, no
	// default) and v1 cannot read its data (no a, no default).
	v4 := `{"type":"record","name":"R","fields":[{"name":"b","type":"int"}]}`
	var prev []previousVersion
	for i, s := range history {
		ps, err := parseSchema(typeAvro, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		prev = append(prev, previousVersion{version: i + 1, text: s, schema: ps})
	}
	n, err := parseSchema(typeAvro, v4, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		level string
		ok    bool
	}{
		{levelBackward, true}, {levelBackwardTransitive, false},
		{levelForward, true}, {levelForwardTransitive, false},
		{levelFull, true}, {levelFullTransitive, false},
		{levelNone, true},
	} {
		got := checkCompatibility(tc.level, n, prev)
		if (len(got) == 0) != tc.ok {
			t.Errorf("%s: compatible = %v, want %v: %v", tc.level, len(got) == 0, tc.ok, got)
		}
		if !tc.ok && !strings.Contains(strings.Join(got, " "), "{oldSchemaVersion: 1}") {
			t.Errorf("%s: messages do not name version 1: %v", tc.level, got)
		}
	}
}
