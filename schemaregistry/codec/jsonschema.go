package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// jsonBase is the base URL of the schema being parsed and of its
// references with relative names, so that "$ref": "address.json" finds the
// reference named address.json.
const jsonBase = "mem://kbroker-registry/"

// jsonSchema is a JSON Schema compiled by santhosh-tekuri/jsonschema
// (drafts 4, 6, 7, 2019-09 and 2020-12, by $schema; 2020-12 without one).
type jsonSchema struct {
	doc  any // the decoded document, for the compatibility rules
	text string
}

// noLoader refuses every URL the schema names that is not one of its
// references: the registry never reads files or the network for a schema.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is not a reference of this schema", strings.TrimPrefix(u, jsonBase))
}

func jsonURL(name string) string {
	if u, err := url.Parse(name); err == nil && u.Scheme != "" {
		return name
	}
	return jsonBase + name
}

// CompileJSONSchema compiles a JSON Schema with santhosh-tekuri/jsonschema
// (drafts 4, 6, 7, 2019-09 and 2020-12, by $schema; 2020-12 without one);
// a $ref names one of its references, never a file or the network.
func CompileJSONSchema(text string, refs []Ref) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	for _, r := range refs {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(r.Schema))
		if err != nil {
			return nil, fmt.Errorf("reference %q: %w", r.Name, err)
		}
		if err := c.AddResource(jsonURL(r.Name), doc); err != nil {
			return nil, fmt.Errorf("reference %q: %w", r.Name, err)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, err
	}
	main := jsonBase + "schema.json"
	if err := c.AddResource(main, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(main)
	if err != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), jsonBase, ""))
	}
	return s, nil
}

// jsonCodec checks a document against its schema; the payload is the
// document's text.
type jsonCodec struct{ schema *jsonschema.Schema }

func (c jsonCodec) Encode(jsonValue []byte) ([]byte, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(jsonValue))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if err := c.schema.Validate(doc); err != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), jsonBase, ""))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, jsonValue); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (c jsonCodec) Decode(payload []byte) ([]byte, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if err := c.schema.Validate(doc); err != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), jsonBase, ""))
	}
	return payload, nil
}
