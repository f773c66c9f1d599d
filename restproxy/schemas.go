package restproxy

// The schema formats of v2 (avro, protobuf, jsonschema): records are
// written in the Schema Registry's wire format (magic byte, schema id,
// payload) with the schema given in the request (registered under the
// topic's subject, TopicNameStrategy: "<topic>-key", "<topic>-value") or
// by id, and read back as JSON through the schema their id names. The
// registry is Config.SchemaRegistry (Confluent's schema.registry.url: by
// default the broker's own), reached with the call's Basic login when it
// has one.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/kbroker/kbroker/schemaregistry/codec"
	"github.com/twmb/franz-go/pkg/sr"
)

// formatSchemaType is the Schema Registry type of each schema format.
var formatSchemaType = map[string]sr.SchemaType{
	"avro":       sr.TypeAvro,
	"protobuf":   sr.TypeProtobuf,
	"jsonschema": sr.TypeJSON,
}

// Codes of the schema formats (kafka-rest's Errors).
const (
	codeKeySchemaMissing   = 42201
	codeValueSchemaMissing = 42202
	codeInvalidSchema      = 42205
)

// maxCachedCodecs bounds the proxy's codecs by schema id; past it the
// cache starts again (ids are few; a registry with more is rare).
const maxCachedCodecs = 10000

// codecCache holds a codec per registry URL and schema id: an id names
// one schema for ever, so an entry never goes stale. It also remembers
// which (subject, id) pairs were seen registered, so a stream of records
// naming a schema by id asks the registry once.
type codecCache struct {
	mu    sync.Mutex
	m     map[codecKey]cachedCodec
	under map[subjectKey]bool
}

type subjectKey struct {
	codecKey
	subject string
}

func (cc *codecCache) registered(k subjectKey) bool {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.under[k]
}

func (cc *codecCache) markRegistered(k subjectKey) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.under == nil || len(cc.under) >= maxCachedCodecs {
		cc.under = map[subjectKey]bool{}
	}
	cc.under[k] = true
}

// cachedCodec is a schema id's codec and schema type, and its record
// name (RecordNameStrategy's subject) or why it has none.
type cachedCodec struct {
	cd      codec.Codec
	typ     sr.SchemaType
	name    string
	nameErr error
}

type codecKey struct {
	url string
	id  int
}

func (cc *codecCache) get(k codecKey) (cachedCodec, bool) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c, ok := cc.m[k]
	return c, ok
}

func (cc *codecCache) put(k codecKey, c cachedCodec) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil || len(cc.m) >= maxCachedCodecs {
		cc.m = map[codecKey]cachedCodec{}
	}
	cc.m[k] = c
}

// schemaRegistry is the registry as the call's user sees it.
type schemaRegistry struct {
	url string
	cl  *sr.Client
	p   *Proxy
}

// registry returns the call's view of the Schema Registry, or why there
// is none.
func (c *call) registry() (*schemaRegistry, error) {
	if c.reg != nil {
		return c.reg, nil
	}
	if c.p.cfg.SchemaRegistry == nil {
		return nil, errf(http.StatusInternalServerError, codeKafkaError, "the schema formats need a Schema Registry: set schema.registry.url or schema.registry.listeners")
	}
	url, err := c.p.cfg.SchemaRegistry()
	if err != nil {
		return nil, errf(http.StatusInternalServerError, codeKafkaError, "Schema Registry: %v", err)
	}
	opts := []sr.ClientOpt{sr.URLs(url), sr.HTTPClient(c.p.registryHTTP), sr.UserAgent("kbroker-rest-proxy")}
	if user, pass, ok := c.r.BasicAuth(); ok {
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, errf(http.StatusInternalServerError, codeKafkaError, "Schema Registry: %v", err)
	}
	c.reg = &schemaRegistry{url: url, cl: cl, p: c.p}
	return c.reg, nil
}

// registryError is the answer to a failed registry call: the registry's
// own status, code and message for what it refused, 42205 for a schema
// it found invalid, 50002 when it could not be asked.
func registryError(err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		if re.ErrorCode == 42201 || re.ErrorCode == 42202 {
			return errf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: %s", re.Message)
		}
		status, code := re.StatusCode, re.ErrorCode
		if status < 400 || status > 599 {
			status = http.StatusInternalServerError
		}
		if code == 0 {
			code = status
		}
		return errf(status, code, "Schema Registry: %s", re.Error())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errf(http.StatusRequestTimeout, codeTimeout, "Schema Registry: %v", err)
	}
	return errf(http.StatusInternalServerError, codeKafkaError, "Schema Registry: %v", err)
}

// register registers schema of typ under subject (or finds it there) and
// returns its id and codec.
func (s *schemaRegistry) register(ctx context.Context, subject string, typ sr.SchemaType, schema string) (int, codec.Codec, error) {
	ss, err := s.cl.CreateSchema(ctx, subject, sr.Schema{Schema: schema, Type: typ})
	if err != nil {
		return 0, nil, registryError(err)
	}
	cd, err := s.codec(ctx, ss.ID)
	return ss.ID, cd, err
}

// registeredUnder is nil when schema id is a version of subject (not
// deleted), as Confluent's REST Proxy checks a schema_id against the
// subject before it produces with it.
func (s *schemaRegistry) registeredUnder(ctx context.Context, subject string, id int) error {
	key := subjectKey{codecKey{s.url, id}, subject}
	if s.p.codecs.registered(key) {
		return nil
	}
	svs, err := s.cl.SchemaVersionsByID(ctx, id)
	if err != nil {
		return registryError(err)
	}
	for _, sv := range svs {
		if sv.Subject == subject {
			s.p.codecs.markRegistered(key)
			return nil
		}
	}
	return errf(http.StatusBadRequest, http.StatusBadRequest, "Error when fetching schema version. subject = %s: schema %d is not registered under it", subject, id)
}

// codec is the codec of schema id, from the cache or built from the
// schema and its references as the registry serves them.
func (s *schemaRegistry) codec(ctx context.Context, id int) (codec.Codec, error) {
	c, err := s.schema(ctx, id)
	return c.cd, err
}

// schema is schema id's codec and type.
func (s *schemaRegistry) schema(ctx context.Context, id int) (cachedCodec, error) {
	key := codecKey{s.url, id}
	if c, ok := s.p.codecs.get(key); ok {
		return c, nil
	}
	sch, err := s.cl.SchemaByID(ctx, id)
	if err != nil {
		return cachedCodec{}, registryError(err)
	}
	refs, err := codec.ResolveRefs(srRefs(sch.References), func(subject string, version int) (string, []codec.Reference, error) {
		ss, err := s.cl.SchemaByVersion(ctx, subject, version)
		if err != nil {
			return "", nil, registryError(err)
		}
		return ss.Schema.Schema, srRefs(ss.References), nil
	})
	if err != nil {
		var re *restError
		if !errors.As(err, &re) {
			err = errf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: %v", err)
		}
		return cachedCodec{}, err
	}
	cd, err := codec.New(sch.Type.String(), sch.Schema, refs)
	if err != nil {
		return cachedCodec{}, errf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema %d: %v", id, err)
	}
	c := cachedCodec{cd: cd, typ: sch.Type}
	c.name, c.nameErr = codec.RecordName(sch.Type.String(), sch.Schema, refs)
	s.p.codecs.put(key, c)
	return c, nil
}

// srRefs are franz-go's references as codec.ResolveRefs takes them.
func srRefs(refs []sr.SchemaReference) []codec.Reference {
	out := make([]codec.Reference, len(refs))
	for i, r := range refs {
		out[i] = codec.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version}
	}
	return out
}

// schemaSide is the key or value side of a v2 schema-format produce.
type schemaSide struct {
	name   string // "key" or "value"
	schema *string
	id     *int
	code   int // 42201 or 42202 when records carry this side without a schema
}

// resolve returns the side's schema id and codec: the given id's, or the
// given schema registered under "<topic>-<side>". (0, nil) when the
// records have no non-null data on this side and no schema was given.
func (s *schemaRegistry) resolve(ctx context.Context, topic string, typ sr.SchemaType, side schemaSide, used bool) (int, codec.Codec, error) {
	switch {
	case side.id != nil:
		cd, err := s.codec(ctx, *side.id)
		return *side.id, cd, err
	case side.schema != nil:
		return s.register(ctx, topic+"-"+side.name, typ, *side.schema)
	case used:
		return 0, nil, errf(http.StatusUnprocessableEntity, side.code, "Request includes %ss but does not include %s schema", side.name, side.name)
	}
	return 0, nil, nil
}

// encodeWith is raw (a JSON value) in the wire format of schema id; null
// or absent is nil.
func encodeWith(cd codec.Codec, id int, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	payload, err := cd.Encode(raw)
	if err != nil {
		return nil, errf(http.StatusUnprocessableEntity, codeJSONConversion, "Conversion of JSON to Object failed: %v", err)
	}
	return codec.Frame(id, payload), nil
}

// decodeWire is the JSON form of b, a key or value in the registry's
// wire format.
func (s *schemaRegistry) decodeWire(ctx context.Context, b []byte) (json.RawMessage, error) {
	id, payload, err := codec.Unframe(b)
	if err != nil {
		return nil, err
	}
	cd, err := s.codec(ctx, id)
	if err != nil {
		return nil, err
	}
	out, err := cd.Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("schema %d: %w", id, err)
	}
	return out, nil
}

// v3SchemaTypes maps v3's schema types to the registry's.
var v3SchemaTypes = map[string]sr.SchemaType{"AVRO": sr.TypeAvro, "PROTOBUF": sr.TypeProtobuf, "JSONSCHEMA": sr.TypeJSON}

func isV3SchemaType(t string) bool {
	_, ok := v3SchemaTypes[t]
	return ok
}

// v3TypeNames is the v3 name of each registry type.
var v3TypeNames = map[sr.SchemaType]string{sr.TypeAvro: "AVRO", sr.TypeProtobuf: "PROTOBUF", sr.TypeJSON: "JSONSCHEMA"}

// Subject name strategies of a v3 key or value (Confluent's
// subject_name_strategy); the empty one is TOPIC_NAME.
const (
	strategyTopicName       = "TOPIC_NAME"
	strategyRecordName      = "RECORD_NAME"
	strategyTopicRecordName = "TOPIC_RECORD_NAME"
)

// strategySubject is the subject that strategy names for topic's key or
// value, with record name the schema's record name (RecordName); ok is
// false when the strategy needs a record name and has none.
func strategySubject(strategy, topic string, isKey bool, recordName string) (subject string, ok bool) {
	switch strategy {
	case strategyRecordName:
		return recordName, recordName != ""
	case strategyTopicRecordName:
		return topic + "-" + recordName, recordName != ""
	}
	if isKey {
		return topic + "-key", true
	}
	return topic + "-value", true
}

// v3SchemaBytes is a v3 key or value in the registry's wire format, as
// Confluent's REST Proxy resolves its schema:
//   - schema_id: that schema, which must be registered under the subject
//     ("subject", else the strategy's subject of that schema);
//   - schema (text, with type, default AVRO): registered under the
//     subject ("subject", else the strategy's subject of the parsed
//     schema), or found there;
//   - else the subject's schema_version (default the latest), where the
//     subject is "subject" or TOPIC_NAME's "<topic>-key|value": the other
//     strategies need a schema to name one.
func (c *call) v3SchemaBytes(topic string, isKey bool, d *v3Data) ([]byte, *v3DataInfo, error) {
	bad := func(format string, args ...any) error {
		return errf(http.StatusBadRequest, http.StatusBadRequest, format, args...)
	}
	strategy := strategyTopicName
	if d.SubjectNameStrategy != nil {
		strategy = *d.SubjectNameStrategy
		switch strategy {
		case strategyTopicName, strategyRecordName, strategyTopicRecordName:
		default:
			return nil, nil, bad("subject_name_strategy %q: one of TOPIC_NAME, RECORD_NAME, TOPIC_RECORD_NAME", strategy)
		}
	}
	typ := sr.TypeAvro
	if d.Type != nil {
		t, ok := v3SchemaTypes[*d.Type]
		if !ok {
			return nil, nil, bad("Type %s takes no schema: AVRO, PROTOBUF or JSONSCHEMA.", *d.Type)
		}
		typ = t
	}
	reg, err := c.registry()
	if err != nil {
		return nil, nil, err
	}
	// subjectOf is the subject of a schema whose record name is name.
	subjectOf := func(name string, nameErr error) (string, error) {
		if d.Subject != nil {
			return *d.Subject, nil
		}
		subject, ok := strategySubject(strategy, topic, isKey, name)
		if !ok {
			return "", errf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: subject_name_strategy=%s: %v", strategy, nameErr)
		}
		return subject, nil
	}
	var id int
	switch {
	case d.SchemaID != nil:
		id = *d.SchemaID
		sc, err := reg.schema(c.ctx, id)
		if err != nil {
			return nil, nil, err
		}
		subject, err := subjectOf(sc.name, sc.nameErr)
		if err != nil {
			return nil, nil, err
		}
		if err := reg.registeredUnder(c.ctx, subject, id); err != nil {
			return nil, nil, err
		}
	case len(d.Schema) > 0:
		var text string
		if err := json.Unmarshal(d.Schema, &text); err != nil {
			return nil, nil, bad("schema must be a string: %v", err)
		}
		var name string
		var nameErr error
		if d.Subject == nil && strategy != strategyTopicName {
			if name, nameErr = codec.RecordName(typ.String(), text, nil); nameErr != nil {
				return nil, nil, errf(http.StatusUnprocessableEntity, codeInvalidSchema, "Invalid schema: %v", nameErr)
			}
		}
		subject, err := subjectOf(name, nameErr)
		if err != nil {
			return nil, nil, err
		}
		if id, _, err = reg.register(c.ctx, subject, typ, text); err != nil {
			return nil, nil, err
		}
	default:
		if d.Subject == nil && strategy != strategyTopicName {
			return nil, nil, bad("Cannot use schema_subject_strategy=%s without schema_id or schema.", strategy)
		}
		subject, _ := subjectOf("", nil)
		version := -1
		if d.SchemaVersion != nil {
			version = *d.SchemaVersion
		}
		ss, err := reg.cl.SchemaByVersion(c.ctx, subject, version)
		if err != nil {
			return nil, nil, registryError(err)
		}
		id = ss.ID
	}
	sc, err := reg.schema(c.ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if d.Type != nil && sc.typ != typ {
		return nil, nil, bad("schema %d is %s, not %s", id, v3TypeNames[sc.typ], *d.Type)
	}
	payload, err := sc.cd.Encode(d.Data)
	if err != nil {
		return nil, nil, bad("Conversion of JSON to Object failed: %v", err)
	}
	b := codec.Frame(id, payload)
	return b, &v3DataInfo{Type: v3TypeNames[sc.typ], Size: len(b)}, nil
}
