package schemaregistry

import (
	"fmt"
	"strings"

	"github.com/kbroker/kbroker/schemaregistry/codec"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoSchema is a .proto file compiled by protocompile.
type protoSchema struct {
	fd   protoreflect.FileDescriptor
	text string
}

// parseProtobuf parses a .proto file, or a base64-encoded
// FileDescriptorProto (stored as its printed .proto text, as Confluent's
// registry stores it).
func parseProtobuf(text string, refs []refSource) (parsedSchema, error) {
	if printed, ok, err := codec.ProtoFromSerialized(text); err != nil {
		return nil, err
	} else if ok {
		text = printed
	}
	fd, err := codec.CompileProtobuf(text, codecRefs(refs))
	if err != nil {
		return nil, err
	}
	return &protoSchema{fd: fd, text: strings.TrimSpace(text)}, nil
}

// canonical is the text as sent (trimmed): ids of schemas registered
// before there was a printer must stay theirs, so the text is kept; a
// schema sent as a serialized descriptor is stored printed.
func (p *protoSchema) canonical() string { return p.text }

// normalized (normalize=true) is the file printed by protoprint without
// comments: whitespace, comments and layout do not make a new schema.
// Should the printer fail, the text as sent.
func (p *protoSchema) normalized() string {
	text, err := codec.PrintProto(p.fd)
	if err != nil {
		return p.text
	}
	return text
}

// canRead applies Confluent's Protobuf rules: the changes from old to this
// schema must all be among Confluent's compatible ones.
func (p *protoSchema) canRead(old parsedSchema) []string {
	o, ok := old.(*protoSchema)
	if !ok {
		return []string{"{errorType:'TYPE_MISMATCH', description:'the previous schema is not a Protobuf schema'}"}
	}
	return protoDiff(o.fd, p.fd)
}

// Confluent's Protobuf difference types that break compatibility
// (protobuf/diff/Difference.Type minus SchemaDiff.COMPATIBLE_CHANGES).
const (
	protoPackageChanged           = "PACKAGE_CHANGED"
	protoMessageRemoved           = "MESSAGE_REMOVED"
	protoFieldKindChanged         = "FIELD_KIND_CHANGED"
	protoFieldScalarKindChanged   = "FIELD_SCALAR_KIND_CHANGED"
	protoFieldNamedTypeChanged    = "FIELD_NAMED_TYPE_CHANGED"
	protoFieldNumericLabelChanged = "FIELD_NUMERIC_LABEL_CHANGED"
	protoRequiredFieldAdded       = "REQUIRED_FIELD_ADDED"
	protoRequiredFieldRemoved     = "REQUIRED_FIELD_REMOVED"
	protoOneofFieldRemoved        = "ONEOF_FIELD_REMOVED"
	protoMultipleFieldsToOneof    = "MULTIPLE_FIELDS_MOVED_TO_ONEOF"
	protoFieldMovedToExistOneof   = "FIELD_MOVED_TO_EXISTING_ONEOF"
)

// protoDiff lists the incompatible differences from orig to upd: what
// Confluent's protobuf SchemaDiff reports that is not in its
// COMPATIBLE_CHANGES. Messages are matched by their name within the
// package, fields by number.
func protoDiff(orig, upd protoreflect.FileDescriptor) []string {
	var out []string
	add := func(typ, path string) {
		out = append(out, fmt.Sprintf("{errorType:'%s', description:'The new schema has an incompatible change at %s'}", typ, path))
	}
	if orig.Package() != upd.Package() {
		add(protoPackageChanged, "#/")
	}
	updMsgs := map[string]protoreflect.MessageDescriptor{}
	eachMessage(upd.Messages(), func(m protoreflect.MessageDescriptor) { updMsgs[localName(upd, m)] = m })
	eachMessage(orig.Messages(), func(om protoreflect.MessageDescriptor) {
		name := localName(orig, om)
		um, ok := updMsgs[name]
		if !ok {
			add(protoMessageRemoved, "#/"+name)
			return
		}
		compareProtoFields(orig, upd, name, om, um, add)
	})
	return out
}

func eachMessage(ms protoreflect.MessageDescriptors, f func(protoreflect.MessageDescriptor)) {
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		if m.IsMapEntry() {
			continue
		}
		f(m)
		eachMessage(m.Messages(), f)
	}
}

// localName is a descriptor's full name without its file's package.
func localName(fd protoreflect.FileDescriptor, d protoreflect.Descriptor) string {
	return strings.TrimPrefix(string(d.FullName()), string(fd.Package())+".")
}

func compareProtoFields(orig, upd protoreflect.FileDescriptor, msg string, om, um protoreflect.MessageDescriptor, add func(string, string)) {
	of, uf := om.Fields(), um.Fields()
	for i := 0; i < of.Len(); i++ {
		o := of.Get(i)
		path := fmt.Sprintf("#/%s/%d", msg, o.Number())
		u := uf.ByNumber(o.Number())
		if u == nil {
			switch {
			case realOneof(o) != nil:
				add(protoOneofFieldRemoved, path)
			case o.Cardinality() == protoreflect.Required:
				add(protoRequiredFieldRemoved, path)
			}
			continue
		}
		if kind := fieldKind(o); kind != fieldKind(u) {
			add(protoFieldKindChanged, path)
		} else {
			switch kind {
			case "scalar":
				if scalarGroup(o.Kind()) != scalarGroup(u.Kind()) {
					add(protoFieldScalarKindChanged, path)
				} else if o.IsList() != u.IsList() && scalarGroup(o.Kind()) != "string_or_bytes" {
					add(protoFieldNumericLabelChanged, path)
				}
			case "message", "enum":
				if namedType(orig, o) != namedType(upd, u) {
					add(protoFieldNamedTypeChanged, path)
				}
			case "map":
				ok, uk := o.MapKey(), u.MapKey()
				ov, uv := o.MapValue(), u.MapValue()
				if scalarGroup(ok.Kind()) != scalarGroup(uk.Kind()) || fieldKind(ov) != fieldKind(uv) ||
					(fieldKind(ov) == "scalar" && scalarGroup(ov.Kind()) != scalarGroup(uv.Kind())) ||
					(fieldKind(ov) != "scalar" && namedType(orig, ov) != namedType(upd, uv)) {
					add(protoFieldKindChanged, path)
				}
			}
		}
	}
	for i := 0; i < uf.Len(); i++ {
		u := uf.Get(i)
		path := fmt.Sprintf("#/%s/%d", msg, u.Number())
		if of.ByNumber(u.Number()) == nil && u.Cardinality() == protoreflect.Required {
			add(protoRequiredFieldAdded, path)
		}
	}
	// Fields moved into a oneof: one field into a new oneof is compatible;
	// several, or into a oneof that existed, is not.
	uos := um.Oneofs()
	for i := 0; i < uos.Len(); i++ {
		uo := uos.Get(i)
		if uo.IsSynthetic() {
			continue
		}
		moved := 0
		for j := 0; j < uo.Fields().Len(); j++ {
			if o := of.ByNumber(uo.Fields().Get(j).Number()); o != nil && realOneof(o) == nil {
				moved++
			}
		}
		path := fmt.Sprintf("#/%s/%s", msg, uo.Name())
		existed := false
		for j := 0; j < om.Oneofs().Len(); j++ {
			if om.Oneofs().Get(j).Name() == uo.Name() && !om.Oneofs().Get(j).IsSynthetic() {
				existed = true
			}
		}
		switch {
		case moved > 0 && existed:
			add(protoFieldMovedToExistOneof, path)
		case moved > 1:
			add(protoMultipleFieldsToOneof, path)
		}
	}
}

// realOneof is the field's oneof unless it is proto3's synthetic one of an
// optional field.
func realOneof(f protoreflect.FieldDescriptor) protoreflect.OneofDescriptor {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return o
	}
	return nil
}

func fieldKind(f protoreflect.FieldDescriptor) string {
	switch {
	case f.IsMap():
		return "map"
	case f.Kind() == protoreflect.MessageKind || f.Kind() == protoreflect.GroupKind:
		return "message"
	case f.Kind() == protoreflect.EnumKind:
		return "enum"
	}
	return "scalar"
}

// scalarGroup is Confluent's ScalarKind: scalar types within one group
// share a wire encoding, so changing among them is compatible.
func scalarGroup(k protoreflect.Kind) string {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return "general_number"
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return "signed_number"
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return "fixed32"
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return "fixed64"
	case protoreflect.FloatKind:
		return "float"
	case protoreflect.DoubleKind:
		return "double"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "string_or_bytes"
	}
	return k.String()
}

// namedType is the local name of a message or enum field's type (the full
// name for types of other packages).
func namedType(fd protoreflect.FileDescriptor, f protoreflect.FieldDescriptor) string {
	switch {
	case f.Message() != nil:
		return localName(fd, f.Message())
	case f.Enum() != nil:
		return localName(fd, f.Enum())
	}
	return ""
}
