package schemaregistry

import "testing"

// FuzzRecords: any _schemas key and value decode to a record or an error,
// and applying what decodes never panics and keeps the state's invariant
// (an id names one schema).
func FuzzRecords(f *testing.F) {
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}`), []byte(`{"subject":"a","version":1,"id":1,"schema":"\"string\""}`))
	f.Add([]byte(`{"keytype":"CONFIG","magic":0}`), []byte(`{"compatibilityLevel":"FULL"}`))
	f.Add([]byte(`{"keytype":"DELETE_SUBJECT","subject":"a","magic":0}`), []byte(`{"subject":"a","version":9}`))
	f.Add([]byte(`{"keytype":"CLEAR_SUBJECT","subject":"a","magic":0}`), []byte(`{"subject":"a"}`))
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"b","version":1,"magic":1}`), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		st := newState()
		for _, kv := range [][2][]byte{
			{[]byte(`{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}`), []byte(`{"subject":"a","version":1,"id":1,"schema":"\"string\""}`)},
			{key, value},
		} {
			r, err := decodeRecord(kv[0], kv[1])
			if err != nil {
				continue
			}
			_ = st.apply(r)
		}
		for id, v := range st.byID {
			for _, u := range st.usesOf(id, true) {
				if u.contentKey() != v.contentKey() {
					t.Fatalf("id %d names %q and %q", id, v.Schema, u.Schema)
				}
			}
		}
	})
}

// FuzzParseSchema: any schema text of any type parses or fails with an
// error (the libraries' panics included), and what parses can be checked
// against itself.
func FuzzParseSchema(f *testing.F) {
	f.Add(0, `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`)
	f.Add(1, `syntax = "proto3"; message M { int32 a = 1; oneof o { string b = 2; } }`)
	f.Add(2, `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`)
	f.Fuzz(func(t *testing.T, typ int, text string) {
		ty := []string{typeAvro, typeProtobuf, typeJSON}[uint(typ)%3]
		ps, err := parseSchema(ty, text, nil)
		if err != nil {
			return
		}
		if msgs := ps.canRead(ps); len(msgs) != 0 {
			t.Fatalf("%s schema cannot read itself: %v\n%s", ty, msgs, text)
		}
	})
}
