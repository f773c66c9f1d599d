package schemaregistry

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/hamba/avro/v2"
	"github.com/kbroker/kbroker/schemaregistry/codec"
)

// avroSchema is an Avro schema parsed by hamba/avro. Each parse has a
// cache of its own (never avro.DefaultSchemaCache), so a named type is
// known only through the schema's own references.
type avroSchema struct {
	schema avro.Schema
	text   string // canonical: the schema re-printed with every attribute
}

func parseAvro(text string, refs []refSource) (parsedSchema, error) {
	s, err := codec.ParseAvro(text, codecRefs(refs))
	if err != nil {
		return nil, err
	}
	if len(refs) > 0 {
		// hamba prints a referenced named type inline; the stored schema
		// must name it, as the references say, so it is kept as sent
		// (without insignificant whitespace).
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(text)); err != nil {
			return nil, err
		}
		return &avroSchema{schema: s, text: buf.String()}, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("printing the schema: %w", err)
	}
	return &avroSchema{schema: s, text: string(b)}, nil
}

// canonical is hamba's full print of the schema (names fully qualified,
// docs, defaults, aliases and properties kept): what a deserializer gets
// for the id must keep the defaults it resolves with. A schema with
// references is kept as sent, compacted (see parseAvro).
func (a *avroSchema) canonical() string { return a.text }

// normalized is the canonical print too: it already fully qualifies names
// and orders each object's attributes the same way.
func (a *avroSchema) normalized() string { return a.text }

// canRead applies Avro's schema resolution rules (the specification's
// "Schema Resolution", as hamba's SchemaCompatibility implements them):
// this schema as the reader, old as the writer.
func (a *avroSchema) canRead(old parsedSchema) []string {
	o, ok := old.(*avroSchema)
	if !ok {
		return []string{"{errorType:'TYPE_MISMATCH', description:'the previous schema is not an Avro schema'}"}
	}
	if err := avro.NewSchemaCompatibility().Compatible(a.schema, o.schema); err != nil {
		return []string{fmt.Sprintf("{errorType:'READER_INCOMPATIBLE', description:'%s'}", err)}
	}
	return nil
}
