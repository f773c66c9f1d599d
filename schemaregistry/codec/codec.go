// Package codec parses the three schema types of the Schema Registry
// (Avro, Protobuf, JSON Schema) with their libraries, and converts a
// record between its JSON form (what the REST Proxy carries: Avro's JSON
// encoding, Protobuf's canonical JSON mapping, the JSON document itself)
// and Confluent's wire form (magic byte 0, the schema id as a big-endian
// int32, then the payload; Protobuf's payload starts with its message
// indexes).
//
// It knows nothing of kbroker: the registry parses with it, the REST
// Proxy encodes and decodes with it.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Schema types, as Confluent names them in schemaType.
const (
	TypeAvro     = "AVRO"
	TypeProtobuf = "PROTOBUF"
	TypeJSON     = "JSON"
)

// Ref is a referenced schema, resolved to its text: Name is the name the
// referring schema uses for it (an Avro full name, a .proto import path,
// a JSON Schema $ref).
type Ref struct {
	Name, Schema string
}

// Codec converts records of one schema between JSON and the payload that
// follows the wire header.
type Codec interface {
	// Encode checks a JSON value against the schema and returns its
	// payload.
	Encode(jsonValue []byte) ([]byte, error)
	// Decode returns the JSON form of a payload written with the schema.
	Decode(payload []byte) ([]byte, error)
}

// New compiles a codec for text of type typ ("" is AVRO) with its
// references (dependencies first). A panic of a schema library on hostile
// input is an error, not a crash.
func New(typ, text string, refs []Ref) (c Codec, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("the %s library failed on this schema: %v", typ, p)
		}
	}()
	switch strings.ToUpper(typ) {
	case "", TypeAvro:
		s, err := ParseAvro(text, refs)
		if err != nil {
			return nil, err
		}
		return avroCodec{s}, nil
	case TypeProtobuf:
		fd, err := CompileProtobuf(text, refs)
		if err != nil {
			return nil, err
		}
		if fd.Messages().Len() == 0 {
			return nil, errors.New("the Protobuf schema declares no message")
		}
		return protoCodec{fd.Messages().Get(0)}, nil
	case TypeJSON:
		s, err := CompileJSONSchema(text, refs)
		if err != nil {
			return nil, err
		}
		return jsonCodec{s}, nil
	}
	return nil, fmt.Errorf("unknown schema type %q (AVRO, PROTOBUF or JSON)", typ)
}

// headerLen is the wire header: magic byte and schema id.
const headerLen = 5

// Frame prefixes payload with the wire header of schema id.
func Frame(id int, payload []byte) []byte {
	out := make([]byte, headerLen, headerLen+len(payload))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, payload...)
}

// Unframe splits a serialized record into its schema id and payload.
func Unframe(b []byte) (id int, payload []byte, err error) {
	if len(b) < headerLen || b[0] != 0 {
		return 0, nil, errors.New("not in the Schema Registry's wire format (magic byte 0 and a 4-byte schema id)")
	}
	return int(int32(binary.BigEndian.Uint32(b[1:headerLen]))), b[headerLen:], nil
}

// Reference names a referenced schema: the name the referring schema uses
// for it and the subject version that holds it.
type Reference struct {
	Name, Subject string
	Version       int
}

// maxRefDepth bounds reference chains (and so cycles).
const maxRefDepth = 32

// ResolveRefs resolves refs to their texts with fetch, transitively,
// dependencies before the schemas that use them, each subject version
// once: what New takes.
func ResolveRefs(refs []Reference, fetch func(subject string, version int) (schema string, refs []Reference, err error)) ([]Ref, error) {
	seen := map[Reference]bool{}
	var walk func(refs []Reference, depth int) ([]Ref, error)
	walk = func(refs []Reference, depth int) ([]Ref, error) {
		if depth > maxRefDepth {
			return nil, fmt.Errorf("references nest deeper than %d", maxRefDepth)
		}
		var out []Ref
		for _, r := range refs {
			key := Reference{Subject: r.Subject, Version: r.Version}
			if seen[key] {
				continue
			}
			seen[key] = true
			text, deps, err := fetch(r.Subject, r.Version)
			if err != nil {
				return nil, err
			}
			sub, err := walk(deps, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(append(out, sub...), Ref{Name: r.Name, Schema: text})
		}
		return out, nil
	}
	return walk(refs, 0)
}
