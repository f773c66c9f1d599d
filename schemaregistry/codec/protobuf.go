package codec

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/jhump/protoreflect/v2/protoprint"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// protoMainFile is the name the schema being parsed compiles under; its
// imports are its references' names, the well-known types and Confluent's
// own imports.
const protoMainFile = "kbroker-registry-input.proto"

// confluentProtos are the imports Confluent's serializers emit that are not
// Google's well-known types: confluent/meta.proto (field, message and file
// metadata, extension 1088 of each options message) and
// confluent/type/decimal.proto. Declared here as Confluent's
// protobuf-types publishes them (package, message and field numbers).
var confluentProtos = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
option java_package = "io.confluent.protobuf";
option java_outer_classname = "MetaProto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
option java_package = "io.confluent.protobuf.type";
option java_outer_classname = "DecimalProto";
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
}

// ProtoFromSerialized returns the .proto text of a schema sent as a
// base64-encoded FileDescriptorProto (how confluent-kafka python's
// Protobuf serializer registers schemas; Confluent's registry takes both
// forms and keeps the text), printed by jhump/protoreflect's protoprint.
// ok is false when text is not such a descriptor (a .proto file is not
// valid base64).
func ProtoFromSerialized(text string) (out string, ok bool, err error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	if err != nil || len(raw) == 0 {
		return "", false, nil
	}
	var fdp descriptorpb.FileDescriptorProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, &fdp); err != nil {
		return "", false, nil
	}
	// Imports are only named here: the text is compiled against the
	// schema's references afterwards.
	fd, err := (protodesc.FileOptions{AllowUnresolvable: true}).New(&fdp, new(protoregistry.Files))
	if err != nil {
		return "", true, fmt.Errorf("the serialized descriptor is not a valid file: %w", err)
	}
	printed, err := PrintProto(fd)
	if err != nil {
		return "", true, fmt.Errorf("printing the serialized descriptor: %w", err)
	}
	return printed, true, nil
}

// PrintProto prints fd as .proto text with protoprint's layout: two files
// that differ only in whitespace, comments or layout print the same.
func PrintProto(fd protoreflect.FileDescriptor) (string, error) {
	var b strings.Builder
	if err := (&protoprint.Printer{OmitComments: protoprint.CommentsAll}).PrintProtoFile(fd, &b); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// CompileProtobuf compiles a .proto file with protocompile; its imports
// are its references (by name), Google's well-known types and Confluent's
// own imports.
func CompileProtobuf(text string, refs []Ref) (protoreflect.FileDescriptor, error) {
	srcs := map[string]string{}
	for k, v := range confluentProtos {
		srcs[k] = v
	}
	for _, r := range refs {
		srcs[r.Name] = r.Schema
	}
	srcs[protoMainFile] = text
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(srcs)}),
		MaxParallelism: 1,
	}
	files, err := c.Compile(context.Background(), protoMainFile)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), protoMainFile+":", ""))
	}
	fd := files.FindFileByPath(protoMainFile)
	if fd == nil {
		return nil, errors.New("the schema did not compile")
	}
	return fd, nil
}

// protoCodec converts between Protobuf's canonical JSON mapping and the
// binary form of msg (the file's first message, as Confluent's REST Proxy
// writes), behind Confluent's message indexes.
type protoCodec struct {
	msg protoreflect.MessageDescriptor
}

func (c protoCodec) Encode(jsonValue []byte) ([]byte, error) {
	m := dynamicpb.NewMessage(c.msg)
	if err := protojson.Unmarshal(jsonValue, m); err != nil {
		return nil, fmt.Errorf("not a %s in Protobuf's JSON mapping: %w", c.msg.FullName(), err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	// Deterministic writes fields in number order, as Java does.
	// Message indexes [0] (the first message) are written as one 0.
	return append([]byte{0}, b...), nil
}

func (c protoCodec) Decode(payload []byte) ([]byte, error) {
	md, rest, err := messageAt(c.msg.ParentFile(), payload)
	if err != nil {
		return nil, err
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(rest, m); err != nil {
		return nil, fmt.Errorf("not a %s: %w", md.FullName(), err)
	}
	return protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(m)
}

// messageAt reads Confluent's message indexes (a zigzag varint count, then
// that many zigzag varint indexes, each into the previous message's nested
// messages; a count of 0 is [0]) and returns the message they name and
// the bytes after them.
func messageAt(fd protoreflect.FileDescriptor, b []byte) (protoreflect.MessageDescriptor, []byte, error) {
	next := func() (int, error) {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, errors.New("truncated message indexes")
		}
		b = b[n:]
		return int(protowire.DecodeZigZag(v)), nil
	}
	count, err := next()
	if err != nil {
		return nil, nil, err
	}
	if count < 0 || count > 64 {
		return nil, nil, fmt.Errorf("%d message indexes", count)
	}
	indexes := []int{0}
	if count > 0 {
		indexes = indexes[:0]
		for range count {
			i, err := next()
			if err != nil {
				return nil, nil, err
			}
			indexes = append(indexes, i)
		}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range indexes {
		if i < 0 || i >= msgs.Len() {
			return nil, nil, fmt.Errorf("message index %d out of range", i)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, b, nil
}
