package schemaregistry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/kbroker/kbroker/schemaregistry/codec"
)

// jsonSchema is a JSON Schema compiled by santhosh-tekuri/jsonschema
// (drafts 4, 6, 7, 2019-09 and 2020-12, by $schema; 2020-12 without one).
type jsonSchema struct {
	doc  any // the decoded document, for the compatibility rules
	text string
}

func parseJSONSchema(text string, refs []refSource) (parsedSchema, error) {
	if _, err := codec.CompileJSONSchema(text, codecRefs(refs)); err != nil {
		return nil, err
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

// Confluent's JSON Schema difference types that break compatibility
// (json/diff/Difference.Type not in SchemaDiff.COMPATIBLE_CHANGES_STRICT).
// Those this file detects are listed; the rules come from Confluent's
// documentation of JSON Schema compatibility (open, closed and partially
// open content models).
const (
	jsonTypeNarrowed              = "TYPE_NARROWED"
	jsonTypeChanged               = "TYPE_CHANGED"
	jsonMaxLengthAdded            = "MAX_LENGTH_ADDED"
	jsonMaxLengthDecreased        = "MAX_LENGTH_DECREASED"
	jsonMinLengthAdded            = "MIN_LENGTH_ADDED"
	jsonMinLengthIncreased        = "MIN_LENGTH_INCREASED"
	jsonPatternAdded              = "PATTERN_ADDED"
	jsonPatternChanged            = "PATTERN_CHANGED"
	jsonMaximumAdded              = "MAXIMUM_ADDED"
	jsonMaximumDecreased          = "MAXIMUM_DECREASED"
	jsonMinimumAdded              = "MINIMUM_ADDED"
	jsonMinimumIncreased          = "MINIMUM_INCREASED"
	jsonMultipleOfAdded           = "MULTIPLE_OF_ADDED"
	jsonMultipleOfChanged         = "MULTIPLE_OF_CHANGED"
	jsonEnumNarrowed              = "ENUM_ARRAY_NARROWED"
	jsonRequiredAdded             = "REQUIRED_ATTRIBUTE_ADDED"
	jsonAdditionalPropsRemoved    = "ADDITIONAL_PROPERTIES_REMOVED"
	jsonAdditionalPropsNarrowed   = "ADDITIONAL_PROPERTIES_NARROWED"
	jsonPropAddedToOpen           = "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	jsonRequiredPropAddedUnopen   = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
	jsonPropRemovedFromClosed     = "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	jsonPropAddedNotCovered       = "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsonPropRemovedNotCovered     = "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	jsonMaxItemsAdded             = "MAX_ITEMS_ADDED"
	jsonMaxItemsDecreased         = "MAX_ITEMS_DECREASED"
	jsonMinItemsAdded             = "MIN_ITEMS_ADDED"
	jsonMinItemsIncreased         = "MIN_ITEMS_INCREASED"
	jsonUniqueItemsAdded          = "UNIQUE_ITEMS_ADDED"
	jsonMaxPropertiesAdded        = "MAX_PROPERTIES_ADDED"
	jsonMaxPropertiesDecreased    = "MAX_PROPERTIES_DECREASED"
	jsonMinPropertiesAdded        = "MIN_PROPERTIES_ADDED"
	jsonMinPropertiesIncreased    = "MIN_PROPERTIES_INCREASED"
	jsonCombinedTypeChanged       = "COMBINED_TYPE_CHANGED"
	jsonSumTypeNarrowed           = "SUM_TYPE_NARROWED"
	jsonProductTypeExtended       = "PRODUCT_TYPE_EXTENDED"
	jsonNotTypeExtended           = "NOT_TYPE_EXTENDED"
	jsonSchemaAddedFalse          = "SCHEMA_ADDED"
	maxJSONDepth                  = 64
	jsonIncompatibleMessageFormat = "{errorType:'%s', description:'Found incompatible change: Difference{jsonPath='%s', type=%s}'}"
)

// jsonDiff collects the incompatible differences from an original
// (writer) schema to an update (reader) schema.
type jsonDiff struct {
	origRoot, updRoot any
	out               []string
}

func (d *jsonDiff) add(typ, path string) {
	d.out = append(d.out, fmt.Sprintf(jsonIncompatibleMessageFormat, typ, path, typ))
}

// deref follows a local "$ref" ("#/definitions/x", "#/$defs/x") within
// root; other references are compared by their text.
func deref(root, s any) any {
	for range maxJSONDepth {
		m, ok := s.(map[string]any)
		if !ok {
			return s
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#/") {
			return s
		}
		next := root
		for _, p := range strings.Split(ref[2:], "/") {
			p = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
			pm, ok := next.(map[string]any)
			if !ok {
				return s
			}
			next = pm[p]
		}
		if next == nil {
			return s
		}
		s = next
	}
	return s
}

// compare walks orig and upd at path.
func (d *jsonDiff) compare(path string, orig, upd any, depth int) {
	if depth > maxJSONDepth {
		return
	}
	orig, upd = deref(d.origRoot, orig), deref(d.updRoot, upd)
	if reflect.DeepEqual(orig, upd) {
		return
	}
	// Boolean schemas: true accepts everything, false nothing.
	if b, ok := upd.(bool); ok {
		if !b {
			d.add(jsonSchemaAddedFalse, path)
		}
		return
	}
	if b, ok := orig.(bool); ok {
		if b && !isEmptySchema(upd) {
			d.add(jsonTypeNarrowed, path)
		}
		return
	}
	o, _ := orig.(map[string]any)
	u, _ := upd.(map[string]any)
	if o == nil || u == nil {
		return
	}
	if or, ur := o["$ref"], u["$ref"]; or != nil || ur != nil {
		if !reflect.DeepEqual(or, ur) {
			d.add(jsonTypeChanged, path)
		}
		return
	}
	d.compareTypes(path, o, u)
	d.compareLimits(path, o, u)
	d.compareEnum(path, o, u)
	d.compareCombined(path, o, u, depth)
	if n, ok := u["not"]; ok {
		if on, ok := o["not"]; !ok || !reflect.DeepEqual(on, n) {
			// A new or changed "not" can refuse what the old schema
			// accepted (Confluent: NOT_TYPE_EXTENDED).
			d.add(jsonNotTypeExtended, path+"/not")
		}
	}
	d.compareObject(path, o, u, depth)
	if oi, ok := o["items"]; ok {
		if ui, ok := u["items"]; ok {
			d.compare(path+"/items", oi, ui, depth+1)
		}
	} else if ui, ok := u["items"]; ok && !isEmptySchema(ui) {
		d.add(jsonTypeNarrowed, path+"/items")
	}
}

func isEmptySchema(s any) bool {
	if b, ok := s.(bool); ok {
		return b
	}
	m, ok := s.(map[string]any)
	return ok && len(m) == 0
}

// types is a schema's "type" as a set; nil means any type.
func types(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func (d *jsonDiff) compareTypes(path string, o, u map[string]any) {
	ot, ut := types(o), types(u)
	if ut == nil || reflect.DeepEqual(ot, ut) {
		return
	}
	if ot == nil {
		d.add(jsonTypeNarrowed, path)
		return
	}
	for _, t := range ot {
		if !slices.Contains(ut, t) && !(t == "integer" && slices.Contains(ut, "number")) {
			if len(ut) < len(ot) {
				d.add(jsonTypeNarrowed, path)
			} else {
				d.add(jsonTypeChanged, path)
			}
			return
		}
	}
}

func num(m map[string]any, k string) (float64, bool) {
	f, ok := m[k].(float64)
	return f, ok
}

// compareLimits: an upper bound may rise or go, a lower bound may fall
// or go; adding one or tightening it refuses data the old schema accepted.
func (d *jsonDiff) compareLimits(path string, o, u map[string]any) {
	for _, l := range []struct {
		key, added, tightened string
		upper                 bool
	}{
		{"maxLength", jsonMaxLengthAdded, jsonMaxLengthDecreased, true},
		{"maximum", jsonMaximumAdded, jsonMaximumDecreased, true},
		{"exclusiveMaximum", jsonMaximumAdded, jsonMaximumDecreased, true},
		{"maxItems", jsonMaxItemsAdded, jsonMaxItemsDecreased, true},
		{"maxProperties", jsonMaxPropertiesAdded, jsonMaxPropertiesDecreased, true},
		{"minLength", jsonMinLengthAdded, jsonMinLengthIncreased, false},
		{"minimum", jsonMinimumAdded, jsonMinimumIncreased, false},
		{"exclusiveMinimum", jsonMinimumAdded, jsonMinimumIncreased, false},
		{"minItems", jsonMinItemsAdded, jsonMinItemsIncreased, false},
		{"minProperties", jsonMinPropertiesAdded, jsonMinPropertiesIncreased, false},
	} {
		uv, uok := num(u, l.key)
		ov, ook := num(o, l.key)
		switch {
		case uok && !ook:
			d.add(l.added, path+"/"+l.key)
		case uok && (l.upper && uv < ov || !l.upper && uv > ov):
			d.add(l.tightened, path+"/"+l.key)
		}
	}
	if up, ok := u["pattern"]; ok {
		if op, ok := o["pattern"]; !ok {
			d.add(jsonPatternAdded, path+"/pattern")
		} else if op != up {
			d.add(jsonPatternChanged, path+"/pattern")
		}
	}
	if um, ok := num(u, "multipleOf"); ok {
		om, ook := num(o, "multipleOf")
		switch {
		case !ook:
			d.add(jsonMultipleOfAdded, path+"/multipleOf")
		case um != om && (um == 0 || om/um != float64(int64(om/um))):
			d.add(jsonMultipleOfChanged, path+"/multipleOf")
		}
	}
	if u["uniqueItems"] == true && o["uniqueItems"] != true {
		d.add(jsonUniqueItemsAdded, path+"/uniqueItems")
	}
}

func (d *jsonDiff) compareEnum(path string, o, u map[string]any) {
	ue, ok := u["enum"].([]any)
	if !ok {
		return
	}
	oe, ok := o["enum"].([]any)
	if !ok {
		d.add(jsonEnumNarrowed, path+"/enum")
		return
	}
	for _, v := range oe {
		if !slices.ContainsFunc(ue, func(x any) bool { return reflect.DeepEqual(x, v) }) {
			d.add(jsonEnumNarrowed, path+"/enum")
			return
		}
	}
}

// compareCombined: oneOf/anyOf (sum types) may gain members, allOf
// (product types) may lose some; each old member must stay readable.
func (d *jsonDiff) compareCombined(path string, o, u map[string]any, depth int) {
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		ol, oin := o[k].([]any)
		ul, uin := u[k].([]any)
		if !oin && !uin {
			continue
		}
		if oin != uin {
			d.add(jsonCombinedTypeChanged, path+"/"+k)
			continue
		}
		if k == "allOf" {
			if len(ul) > len(ol) {
				d.add(jsonProductTypeExtended, path+"/"+k)
			}
			continue
		}
		for i, om := range ol {
			matched := slices.ContainsFunc(ul, func(um any) bool {
				sub := &jsonDiff{origRoot: d.origRoot, updRoot: d.updRoot}
				sub.compare(path, om, um, depth+1)
				return len(sub.out) == 0
			})
			if !matched {
				d.add(jsonSumTypeNarrowed, fmt.Sprintf("%s/%s/%d", path, k, i))
			}
		}
	}
}

// contentModel is an object schema's additionalProperties: open (absent
// or true), closed (false) or partially open (a schema).
func contentModel(m map[string]any) (open, closed bool, partial any) {
	ap, ok := m["additionalProperties"]
	if !ok || ap == true || isEmptySchema(ap) {
		return true, false, nil
	}
	if ap == false {
		return false, true, nil
	}
	return false, false, ap
}

func (d *jsonDiff) compareObject(path string, o, u map[string]any, depth int) {
	op, _ := o["properties"].(map[string]any)
	up, _ := u["properties"].(map[string]any)
	oOpen, oClosed, oPartial := contentModel(o)
	_, uClosed, uPartial := contentModel(u)
	uRequired := stringSet(u["required"])
	oRequired := stringSet(o["required"])
	for name, os := range op {
		p := path + "/properties/" + name
		if us, ok := up[name]; ok {
			d.compare(p, os, us, depth+1)
			continue
		}
		switch {
		case uClosed:
			d.add(jsonPropRemovedFromClosed, p)
		case uPartial != nil && !d.covers(p, os, uPartial, depth):
			d.add(jsonPropRemovedNotCovered, p)
		}
	}
	for name, us := range up {
		if _, ok := op[name]; ok {
			continue
		}
		p := path + "/properties/" + name
		switch {
		case oOpen:
			if !isEmptySchema(us) {
				d.add(jsonPropAddedToOpen, p)
			}
		case oClosed:
			if uRequired[name] && !hasDefault(us) {
				d.add(jsonRequiredPropAddedUnopen, p)
			}
		case oPartial != nil && !d.covers(p, oPartial, us, depth):
			d.add(jsonPropAddedNotCovered, p)
		}
	}
	for name := range uRequired {
		if !oRequired[name] && op[name] != nil && !hasDefault(up[name]) {
			d.add(jsonRequiredAdded, path+"/required/"+name)
		}
	}
	switch {
	case oClosed:
		// Opening a closed model accepts more: compatible.
	case uClosed:
		d.add(jsonAdditionalPropsRemoved, path+"/additionalProperties")
	case oOpen && uPartial != nil:
		d.add(jsonAdditionalPropsNarrowed, path+"/additionalProperties")
	case oPartial != nil && uPartial != nil:
		if !d.covers(path+"/additionalProperties", oPartial, uPartial, depth) {
			d.add(jsonAdditionalPropsNarrowed, path+"/additionalProperties")
		}
	}
}

// covers reports whether a reader with schema upd accepts everything
// schema orig accepts.
func (d *jsonDiff) covers(path string, orig, upd any, depth int) bool {
	sub := &jsonDiff{origRoot: d.origRoot, updRoot: d.updRoot}
	sub.compare(path, orig, upd, depth+1)
	return len(sub.out) == 0
}

func hasDefault(s any) bool {
	m, ok := s.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m["default"]
	return ok
}

func stringSet(v any) map[string]bool {
	out := map[string]bool{}
	l, _ := v.([]any)
	for _, x := range l {
		if s, ok := x.(string); ok {
			out[s] = true
		}
	}
	return out
}
