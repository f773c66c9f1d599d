package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hamba/avro/v2"
)

// RecordName is the name that Confluent's RecordNameStrategy gives a
// schema's subject: an Avro named type's full name, a Protobuf file's
// first message's full name, a JSON Schema's title. A schema without one
// is an error.
func RecordName(typ, text string, refs []Ref) (string, error) {
	switch strings.ToUpper(typ) {
	case "", TypeAvro:
		s, err := ParseAvro(text, refs)
		if err != nil {
			return "", err
		}
		if n, ok := s.(avro.NamedSchema); ok {
			return n.FullName(), nil
		}
		return "", errors.New("an Avro schema that is not a named type has no record name")
	case TypeProtobuf:
		fd, err := CompileProtobuf(text, refs)
		if err != nil {
			return "", err
		}
		if fd.Messages().Len() == 0 {
			return "", errors.New("the Protobuf schema declares no message")
		}
		return string(fd.Messages().Get(0).FullName()), nil
	case TypeJSON:
		var doc struct{ Title string }
		if err := json.Unmarshal([]byte(text), &doc); err != nil || doc.Title == "" {
			return "", errors.New("a JSON Schema without a title has no record name")
		}
		return doc.Title, nil
	}
	return "", fmt.Errorf("unknown schema type %q", typ)
}
