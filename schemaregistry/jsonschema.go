package schemaregistry

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

func parseJSONSchema(text string, refs []refSource) (parsedSchema, error) {
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
	if _, err := c.Compile(main); err != nil {
		return nil, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), jsonBase, ""))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(text)); err != nil {
		return nil, err
	}
	var plain any
	if err := json.Unmarshal([]byte(text), &plain); err != nil {
		return nil, err
	}
	return &jsonSchema{doc: plain, text: buf.String()}, nil
}

// canonical is the document without insignificant whitespace.
func (j *jsonSchema) canonical() string { return j.text }

// normalized is the document with every object's keys sorted.
func (j *jsonSchema) normalized() string {
	b, err := json.Marshal(j.doc)
	if err != nil {
		return j.text
	}
	return string(b)
}

// canRead applies Confluent's JSON Schema rules (strict): every change
// from old to this schema must be one Confluent counts as compatible.
func (j *jsonSchema) canRead(old parsedSchema) []string {
	o, ok := old.(*jsonSchema)
	if !ok {
		return []string{"{errorType:'TYPE_MISMATCH', description:'the previous schema is not a JSON schema'}"}
	}
	d := &jsonDiff{origRoot: o.doc, updRoot: j.doc}
	d.compare("#", o.doc, j.doc, 0)
	return d.out
}
