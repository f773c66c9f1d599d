package schemaregistry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kbroker/kbroker/schemaregistry/codec"
)

// Schema types, as Confluent names them in schemaType.
const (
	typeAvro     = "AVRO"
	typeProtobuf = "PROTOBUF"
	typeJSON     = "JSON"
)

// schemaTypes is what GET /schemas/types lists.
var schemaTypes = []string{typeJSON, typeProtobuf, typeAvro}

// parsedSchema is a schema its library accepted, with the text to store
// and the compatibility rule of its type.
type parsedSchema interface {
	// canonical is the text stored and served: the schema re-printed by
	// its library where the library can print (Avro, JSON), so that
	// whitespace and key order do not make a new id.
	canonical() string
	// normalized is the text stored with normalize=true.
	normalized() string
	// canRead returns why a reader of this schema cannot read data
	// written with old (empty: it can): Avro's schema resolution rules,
	// Confluent's rules for Protobuf and JSON Schema.
	canRead(old parsedSchema) []string
}

// refSource is a referenced schema, resolved to its text: Name is the
// name the referring schema uses for it.
type refSource struct {
	Name, Type, Schema string
}

// codecRefs are refs as the codec package takes them.
func codecRefs(refs []refSource) []codec.Ref {
	out := make([]codec.Ref, len(refs))
	for i, r := range refs {
		out[i] = codec.Ref{Name: r.Name, Schema: r.Schema}
	}
	return out
}

// normalizeType maps a request's schemaType ("" is AVRO) to Confluent's
// name, case-insensitively.
func normalizeType(t string) (string, error) {
	switch strings.ToUpper(t) {
	case "", typeAvro:
		return typeAvro, nil
	case typeProtobuf:
		return typeProtobuf, nil
	case typeJSON:
		return typeJSON, nil
	}
	return "", fmt.Errorf("unknown schema type %q (AVRO, PROTOBUF or JSON)", t)
}

// parseSchema parses text of typ with its references (dependencies
// first, as resolveRefs orders them). A panic of a schema library on
// hostile input is an invalid schema, not a crash.
func parseSchema(typ, text string, refs []refSource) (ps parsedSchema, err error) {
	defer func() {
		if p := recover(); p != nil {
			ps, err = nil, fmt.Errorf("the %s parser failed on this schema: %v", typ, p)
		}
	}()
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("empty schema")
	}
	if err := checkRefTypes(refs, typ); err != nil {
		return nil, err
	}
	switch typ {
	case typeAvro:
		return parseAvro(text, refs)
	case typeProtobuf:
		return parseProtobuf(text, refs)
	case typeJSON:
		return parseJSONSchema(text, refs)
	}
	return nil, fmt.Errorf("unknown schema type %q", typ)
}

// checkRefTypes refuses references to schemas of another type than typ.
func checkRefTypes(refs []refSource, typ string) error {
	for _, r := range refs {
		if r.Type != typ {
			return fmt.Errorf("reference %q is a %s schema, not %s", r.Name, r.Type, typ)
		}
	}
	return nil
}

// maxRefDepth bounds reference chains (and so cycles) when resolving.
const maxRefDepth = 32

// resolveRefs resolves references to their schemas, transitively,
// dependencies before the schemas that use them, each once. A reference
// to a missing subject or version is an error; version -1 is the latest.
func (s *state) resolveRefs(refs []Reference) ([]Reference, []refSource, error) {
	var out []refSource
	seen := map[string]bool{}
	resolved := make([]Reference, len(refs))
	var walk func(refs []Reference, depth int) error
	walk = func(refs []Reference, depth int) error {
		if depth > maxRefDepth {
			return errors.New("references nest too deep (a cycle?)")
		}
		for _, r := range refs {
			v, err := s.refVersion(r)
			if err != nil {
				return err
			}
			if err := walk(v.References, depth+1); err != nil {
				return err
			}
			if !seen[r.Name] {
				seen[r.Name] = true
				out = append(out, refSource{Name: r.Name, Type: v.SchemaType, Schema: v.Schema})
			}
		}
		return nil
	}
	for i, r := range refs {
		v, err := s.refVersion(r)
		if err != nil {
			return nil, nil, err
		}
		resolved[i] = Reference{Name: r.Name, Subject: r.Subject, Version: v.Version}
	}
	if err := walk(refs, 0); err != nil {
		return nil, nil, err
	}
	return resolved, out, nil
}

func (s *state) refVersion(r Reference) (*schemaValue, error) {
	if r.Name == "" || r.Subject == "" {
		return nil, fmt.Errorf("reference %+v needs a name and a subject", r)
	}
	var v *schemaValue
	if r.Version == -1 {
		v = s.latest(r.Subject)
	} else if vs := s.subjects[r.Subject]; vs != nil {
		v = vs[r.Version]
	}
	if v == nil {
		return nil, fmt.Errorf("reference %q: subject %q has no version %d", r.Name, r.Subject, r.Version)
	}
	return v, nil
}
