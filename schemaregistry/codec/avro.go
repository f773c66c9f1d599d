package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

// ParseAvro parses an Avro schema with hamba/avro. Each parse has a cache
// of its own (never avro.DefaultSchemaCache), so a named type is known only
// through the schema's own references, which are parsed first.
func ParseAvro(text string, refs []Ref) (avro.Schema, error) {
	cache := &avro.SchemaCache{}
	for _, r := range refs {
		if _, err := avro.ParseWithCache(r.Schema, "", cache); err != nil {
			return nil, fmt.Errorf("reference %q: %w", r.Name, err)
		}
	}
	return avro.ParseWithCache(text, "", cache)
}

// avroAPI bounds what decoding a hostile payload allocates: a bytes or
// string value is at most maxAvroBytes and an array at most maxAvroItems
// items (hamba allocates the length a payload claims before reading it).
var avroAPI = avro.Config{MaxByteSliceSize: maxAvroBytes, MaxSliceAllocSize: maxAvroItems}.Freeze()

const (
	maxAvroBytes = 64 << 20
	maxAvroItems = 1 << 20
)

// avroCodec converts between Avro's JSON encoding (unions other than null
// as {"branch": value}, bytes and fixed as strings of code points 0–255)
// and Avro's binary encoding, which hamba/avro writes and reads from Go's
// generic values (maps, slices, the union form map[name]value).
type avroCodec struct{ schema avro.Schema }

func (c avroCodec) Encode(jsonValue []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(jsonValue))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	native, err := avroFromJSON(c.schema, v, "$")
	if err != nil {
		return nil, err
	}
	return avroAPI.Marshal(c.schema, native)
}

func (c avroCodec) Decode(payload []byte) ([]byte, error) {
	var native any
	if err := avroAPI.Unmarshal(c.schema, payload, &native); err != nil {
		return nil, err
	}
	v, err := avroToJSON(c.schema, native)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// branchName is how Avro's JSON encoding names a union branch: a named
// type's full name, else the type's name.
func branchName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

// nullableOne reports whether u is null and one other type, which hamba
// reads and writes as that type's value or nil.
func nullableOne(u *avro.UnionSchema) bool {
	return len(u.Types()) == 2 && u.Nullable()
}

// avroFromJSON is the hamba value of v, an Avro JSON value of s.
func avroFromJSON(s avro.Schema, v any, path string) (any, error) {
	bad := func() (any, error) {
		return nil, fmt.Errorf("%s: %s is not a %s value in Avro's JSON encoding", path, jsonKind(v), s.Type())
	}
	switch s := s.(type) {
	case *avro.RefSchema:
		return avroFromJSON(s.Schema(), v, path)
	case *avro.NullSchema:
		if v != nil {
			return bad()
		}
		return nil, nil
	case *avro.PrimitiveSchema:
		switch s.Type() {
		case avro.Boolean:
			if b, ok := v.(bool); ok {
				return b, nil
			}
		case avro.String:
			if str, ok := v.(string); ok {
				return str, nil
			}
		case avro.Bytes:
			if str, ok := v.(string); ok {
				return codePoints(str, path)
			}
		case avro.Int, avro.Long:
			n, ok := v.(json.Number)
			if !ok {
				return bad()
			}
			i, err := n.Int64()
			if err != nil || (s.Type() == avro.Int && (i < math.MinInt32 || i > math.MaxInt32)) {
				return nil, fmt.Errorf("%s: %s is not an Avro %s", path, n, s.Type())
			}
			if s.Type() == avro.Int {
				return int(i), nil
			}
			return i, nil
		case avro.Float, avro.Double:
			n, ok := v.(json.Number)
			if !ok {
				return bad()
			}
			f, err := n.Float64()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			if s.Type() == avro.Float {
				return float32(f), nil
			}
			return f, nil
		}
		return bad()
	case *avro.RecordSchema:
		obj, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			fv, present := obj[f.Name()]
			if !present {
				if !f.HasDefault() {
					return nil, fmt.Errorf("%s: field %q is missing and has no default", path, f.Name())
				}
				continue // hamba writes the default
			}
			nv, err := avroFromJSON(f.Type(), fv, path+"."+f.Name())
			if err != nil {
				return nil, err
			}
			out[f.Name()] = nv
		}
		for k := range obj {
			if s.Fields() != nil && !hasField(s, k) {
				return nil, fmt.Errorf("%s: %s has no field %q", path, s.FullName(), k)
			}
		}
		return out, nil
	case *avro.EnumSchema:
		str, ok := v.(string)
		if !ok {
			return bad()
		}
		for _, sym := range s.Symbols() {
			if sym == str {
				return str, nil
			}
		}
		return nil, fmt.Errorf("%s: %q is not a symbol of %s", path, str, s.FullName())
	case *avro.FixedSchema:
		str, ok := v.(string)
		if !ok {
			return bad()
		}
		b, err := codePoints(str, path)
		if err != nil {
			return nil, err
		}
		if len(b) != s.Size() {
			return nil, fmt.Errorf("%s: %d bytes for %s of size %d", path, len(b), s.FullName(), s.Size())
		}
		// hamba writes a fixed from a [size]byte.
		arr := reflect.New(reflect.ArrayOf(len(b), reflect.TypeFor[byte]())).Elem()
		reflect.Copy(arr, reflect.ValueOf(b))
		return arr.Interface(), nil
	case *avro.ArraySchema:
		arr, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			nv, err := avroFromJSON(s.Items(), e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	case *avro.MapSchema:
		obj, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(obj))
		for k, e := range obj {
			nv, err := avroFromJSON(s.Values(), e, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = nv
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil {
			if !slices.ContainsFunc(s.Types(), func(t avro.Schema) bool { return t.Type() == avro.Null }) {
				return nil, fmt.Errorf("%s: null is not a branch of this union", path)
			}
			return nil, nil
		}
		obj, ok := v.(map[string]any)
		if !ok || len(obj) != 1 {
			return nil, fmt.Errorf(`%s: a union value is null or {"<branch>": value}, not %s`, path, jsonKind(v))
		}
		for name, bv := range obj {
			for _, t := range s.Types() {
				if branchName(t) != name {
					continue
				}
				nv, err := avroFromJSON(t, bv, path+"."+name)
				if err != nil {
					return nil, err
				}
				if nullableOne(s) {
					return nv, nil
				}
				return map[string]any{name: nv}, nil
			}
			return nil, fmt.Errorf("%s: %q is not a branch of this union", path, name)
		}
	}
	return nil, fmt.Errorf("%s: unsupported Avro type %s", path, s.Type())
}

func hasField(s *avro.RecordSchema, name string) bool {
	for _, f := range s.Fields() {
		if f.Name() == name {
			return true
		}
	}
	return false
}

// codePoints is Avro's JSON form of bytes: each character one byte.
func codePoints(s, path string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, fmt.Errorf("%s: bytes are written as characters U+0000 to U+00FF, not %q", path, r)
		}
		out = append(out, byte(r))
	}
	return out, nil
}

// fromCodePoints is the inverse of codePoints.
func fromCodePoints(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		sb.WriteRune(rune(c))
	}
	return sb.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// avroToJSON is the Avro JSON value of v, what hamba read for s.
func avroToJSON(s avro.Schema, v any) (any, error) {
	switch s := s.(type) {
	case *avro.RefSchema:
		return avroToJSON(s.Schema(), v)
	case *avro.NullSchema:
		return nil, nil
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("record %s read as %T", s.FullName(), v)
		}
		out := make(map[string]any, len(m))
		for _, f := range s.Fields() {
			fv, err := avroToJSON(f.Type(), m[f.Name()])
			if err != nil {
				return nil, err
			}
			out[f.Name()] = fv
		}
		return out, nil
	case *avro.ArraySchema:
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("array read as %T", v)
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			ev, err := avroToJSON(s.Items(), e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("map read as %T", v)
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			ev, err := avroToJSON(s.Values(), e)
			if err != nil {
				return nil, err
			}
			out[k] = ev
		}
		return out, nil
	case *avro.UnionSchema:
		if v == nil {
			return nil, nil
		}
		if nullableOne(s) {
			for _, t := range s.Types() {
				if t.Type() != avro.Null {
					bv, err := avroToJSON(t, v)
					if err != nil {
						return nil, err
					}
					return map[string]any{branchName(t): bv}, nil
				}
			}
		}
		m, ok := v.(map[string]any)
		if !ok || len(m) != 1 {
			return nil, fmt.Errorf("union read as %T", v)
		}
		for name, bv := range m {
			for _, t := range s.Types() {
				if branchName(t) == name || string(t.Type()) == name {
					jv, err := avroToJSON(t, bv)
					if err != nil {
						return nil, err
					}
					return map[string]any{branchName(t): jv}, nil
				}
			}
			return nil, fmt.Errorf("union branch %q read, not in the schema", name)
		}
	case *avro.FixedSchema:
		if r, ok := v.(*big.Rat); ok {
			return fromCodePoints(unscaled(r, s.Logical(), s.Size())), nil
		}
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Array || rv.Type().Elem().Kind() != reflect.Uint8 {
			return nil, fmt.Errorf("fixed %s read as %T", s.FullName(), v)
		}
		b := make([]byte, rv.Len())
		reflect.Copy(reflect.ValueOf(b), rv)
		return fromCodePoints(b), nil
	case *avro.PrimitiveSchema:
		return primitiveToJSON(s, v)
	}
	// enum (a string) and what needs no change
	return v, nil
}

// primitiveToJSON undoes hamba's logical types: times and durations
// become the numbers on the wire, decimals their unscaled bytes.
func primitiveToJSON(s *avro.PrimitiveSchema, v any) (any, error) {
	switch x := v.(type) {
	case []byte:
		return fromCodePoints(x), nil
	case *big.Rat:
		return fromCodePoints(unscaled(x, s.Logical(), 0)), nil
	case time.Time:
		switch logicalType(s.Logical()) {
		case avro.TimestampMicros, avro.LocalTimestampMicros:
			return x.UnixMicro(), nil
		case avro.Date:
			return int(x.Unix() / 86400), nil
		}
		return x.UnixMilli(), nil
	case time.Duration:
		if logicalType(s.Logical()) == avro.TimeMicros {
			return x.Microseconds(), nil
		}
		return x.Milliseconds(), nil
	}
	return v, nil
}

func logicalType(l avro.LogicalSchema) avro.LogicalType {
	if l == nil {
		return ""
	}
	return l.Type()
}

// unscaled is a decimal's two's-complement big-endian unscaled value,
// sign-extended to size bytes when size > 0.
func unscaled(r *big.Rat, l avro.LogicalSchema, size int) []byte {
	scale := 0
	if d, ok := l.(*avro.DecimalLogicalSchema); ok {
		scale = d.Scale()
	}
	n := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	n.Quo(n, r.Denom())
	var b []byte
	if n.Sign() >= 0 {
		b = n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
	} else {
		// two's complement: 2^(8k) + n for the smallest k that fits
		k := len(n.Bytes()) + 1
		m := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), uint(8*k)), n)
		b = m.Bytes()
		for len(b) < k {
			b = append([]byte{0xff}, b...)
		}
		for len(b) > 1 && b[0] == 0xff && b[1]&0x80 != 0 {
			b = b[1:]
		}
	}
	for len(b) < size {
		pad := byte(0)
		if n.Sign() < 0 {
			pad = 0xff
		}
		b = append([]byte{pad}, b...)
	}
	return b
}
