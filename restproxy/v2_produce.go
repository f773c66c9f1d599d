package restproxy

// v2 produce: POST /topics/{topic} and /topics/{topic}/partitions/{partition}
// with Content-Type application/vnd.kafka.{binary,json}.v2+json. A reply
// lists, for each record in order, its partition and offset or its error
// (error_code and error), as Confluent's ProduceResponse. Avro, Protobuf and
// JSON Schema go through the Schema Registry (schemas.go).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
)

// Embedded formats.
const (
	formatBinary = "binary"
	formatJSON   = "json"
)

// embeddedFormat is the format of a content type
// application/vnd.kafka.<format>.v2+json, or "".
func embeddedFormat(mediaType string) string {
	rest, ok := strings.CutPrefix(mediaType, "application/vnd.kafka.")
	if !ok {
		return ""
	}
	f, ok := strings.CutSuffix(rest, ".v2+json")
	if !ok || f == "" || strings.Contains(f, ".") {
		return ""
	}
	return f
}

// produceFormat checks a produce call's content type: binary, json or a
// schema format, else the 415 Confluent answers to a format it cannot
// decode.
func produceFormat(c *call) (string, error) {
	if f := embeddedFormat(c.mediaType()); knownFormat(f) {
		return f, nil
	}
	return "", errUnsupportedMedia
}

// knownFormat reports whether f is an embedded format the proxy reads
// and writes.
func knownFormat(f string) bool {
	_, schema := formatSchemaType[f]
	return schema || f == formatBinary || f == formatJSON
}

type v2ProduceRecord struct {
	Key       json.RawMessage `json:"key,omitempty"`
	Value     json.RawMessage `json:"value"`
	Partition *int32          `json:"partition,omitempty"`
}

type v2ProduceRequest struct {
	Records []v2ProduceRecord `json:"records"`
	// Schemas of the schema formats, as text (registered under the
	// topic's subject) or id; accepted and ignored for binary and json,
	// as Confluent does.
	KeySchema     *string `json:"key_schema,omitempty"`
	ValueSchema   *string `json:"value_schema,omitempty"`
	KeySchemaID   *int    `json:"key_schema_id,omitempty"`
	ValueSchemaID *int    `json:"value_schema_id,omitempty"`
}

// partitionOffset is one record's outcome (Confluent's PartitionOffset).
type partitionOffset struct {
	Partition *int32  `json:"partition"`
	Offset    *int64  `json:"offset"`
	ErrorCode *int    `json:"error_code"`
	Error     *string `json:"error"`
}

type v2ProduceResponse struct {
	KeySchemaID   *int              `json:"key_schema_id"`
	ValueSchemaID *int              `json:"value_schema_id"`
	Offsets       []partitionOffset `json:"offsets"`
}

func (p *Proxy) routesV2Produce() {
	p.handle("POST /topics/{topic}", ctV2, func(c *call) error { return c.v2Produce(-1) })
	p.handle("POST /topics/{topic}/partitions/{partition}", ctV2, func(c *call) error {
		part, err := partitionParam(c)
		if err != nil {
			return err
		}
		return c.v2Produce(part)
	})
}

// partitionParam is the {partition} of the path (40402 when not a number).
func partitionParam(c *call) (int32, error) {
	n, err := strconv.ParseInt(c.r.PathValue("partition"), 10, 32)
	if err != nil || n < 0 {
		return 0, errPartitionNotFound
	}
	return int32(n), nil
}

// v2Produce produces the body's records to the path's topic: to partition
// when it is not -1, else each to its own partition field or the key's
// partition (Kafka's murmur2, sticky for null keys).
func (c *call) v2Produce(partition int32) error {
	format, err := produceFormat(c)
	if err != nil {
		return err
	}
	var req v2ProduceRequest
	if err := c.decode(&req, true); err != nil {
		return err
	}
	if req.Records == nil {
		return errPayload("records is missing.")
	}
	topic := c.r.PathValue("topic")
	var resp v2ProduceResponse
	encKey := func(raw json.RawMessage) ([]byte, error) { return decodeEmbedded(format, raw) }
	encValue := encKey
	if typ, ok := formatSchemaType[format]; ok {
		if encKey, encValue, err = c.schemaEncoders(topic, typ, &req, &resp); err != nil {
			return err
		}
	}
	recs := make([]*kgo.Record, len(req.Records))
	for i, in := range req.Records {
		r := &kgo.Record{Topic: topic, Partition: -1}
		if r.Key, err = encKey(in.Key); err != nil {
			return err
		}
		if r.Value, err = encValue(in.Value); err != nil {
			return err
		}
		switch {
		case partition >= 0:
			r.Partition = partition
		case in.Partition != nil:
			r.Partition = *in.Partition
		}
		recs[i] = r
	}
	if resp.Offsets, err = c.produce(recs); err != nil {
		return err
	}
	writeJSON(c.w, http.StatusOK, ctV2, resp)
	return nil
}

// schemaEncoders returns the key and value encoders of a schema-format
// produce to topic, and sets the response's schema ids.
func (c *call) schemaEncoders(topic string, typ sr.SchemaType, req *v2ProduceRequest, resp *v2ProduceResponse) (encKey, encValue func(json.RawMessage) ([]byte, error), err error) {
	reg, err := c.registry()
	if err != nil {
		return nil, nil, err
	}
	used := func(get func(v2ProduceRecord) json.RawMessage) bool {
		for _, r := range req.Records {
			if raw := get(r); len(raw) > 0 && string(raw) != "null" {
				return true
			}
		}
		return false
	}
	side := func(s schemaSide, get func(v2ProduceRecord) json.RawMessage, respID **int) (func(json.RawMessage) ([]byte, error), error) {
		id, cd, err := reg.resolve(c.ctx, topic, typ, s, used(get))
		if err != nil {
			return nil, err
		}
		if cd == nil { // no schema, and every record's side is null
			return func(json.RawMessage) ([]byte, error) { return nil, nil }, nil
		}
		*respID = &id
		return func(raw json.RawMessage) ([]byte, error) { return encodeWith(cd, id, raw) }, nil
	}
	if encKey, err = side(schemaSide{"key", req.KeySchema, req.KeySchemaID, codeKeySchemaMissing},
		func(r v2ProduceRecord) json.RawMessage { return r.Key }, &resp.KeySchemaID); err != nil {
		return nil, nil, err
	}
	if encValue, err = side(schemaSide{"value", req.ValueSchema, req.ValueSchemaID, codeValueSchemaMissing},
		func(r v2ProduceRecord) json.RawMessage { return r.Value }, &resp.ValueSchemaID); err != nil {
		return nil, nil, err
	}
	return encKey, encValue, nil
}

// decodeEmbedded is a key or value of format: binary is a base64 string,
// json any JSON value (its text is the bytes); null or absent is nil.
func decodeEmbedded(format string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if format == formatJSON {
		return []byte(raw), nil
	}
	// Base64 needs no JSON escapes: a plain string literal is its own
	// text, which spares a second JSON parse of every value.
	src := []byte(raw)
	if len(src) < 2 || src[0] != '"' || src[len(src)-1] != '"' || bytes.IndexByte(src, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errJSON(fmt.Errorf("a binary key or value must be a base64 string: %w", err))
		}
		src = []byte(s)
	} else {
		src = src[1 : len(src)-1]
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
	n, err := base64.StdEncoding.Decode(b, src)
	if err != nil {
		return nil, errJSON(fmt.Errorf("invalid base64: %w", err))
	}
	return b[:n], nil
}

// placer places records in partitions: an explicit partition is checked
// against the topic's count (40402), a record without one gets the key's
// partition (Kafka's murmur2, sticky for null keys).
type placer struct {
	c            *call
	counts       map[string]int
	partitioners map[string]kgo.TopicPartitioner
	// autoCreate asks the broker to create a missing topic, as v2's
	// producer does (when auto.create.topics.enable and the ACLs allow).
	autoCreate bool
}

func (c *call) newPlacer() *placer {
	return &placer{c: c, counts: map[string]int{}, partitioners: map[string]kgo.TopicPartitioner{}}
}

// place sets r.Partition, checking the topic exists (40401) the first time.
func (pl *placer) place(r *kgo.Record) error {
	n, ok := pl.counts[r.Topic]
	if !ok {
		td, err := pl.c.topic(r.Topic)
		if err == errTopicNotFound && pl.autoCreate {
			td.Partitions, err = pl.c.autoCreate(r.Topic)
		}
		if err != nil {
			return err
		}
		n = len(td.Partitions)
		pl.counts[r.Topic] = n
	}
	if r.Partition >= int32(n) {
		return errPartitionNotFound
	}
	if r.Partition < 0 {
		tp := pl.partitioners[r.Topic]
		if tp == nil {
			tp = kgo.StickyKeyPartitioner(nil).ForTopic(r.Topic)
			pl.partitioners[r.Topic] = tp
		}
		r.Partition = int32(tp.Partition(r, n))
	}
	return nil
}

// produce places and produces recs and returns each one's outcome in
// order.
func (c *call) produce(recs []*kgo.Record) ([]partitionOffset, error) {
	uc, err := c.client()
	if err != nil {
		return nil, err
	}
	pl := c.newPlacer()
	pl.autoCreate = true
	for _, r := range recs {
		if err := pl.place(r); err != nil {
			return nil, err
		}
	}
	out := make([]partitionOffset, len(recs))
	index := make(map[*kgo.Record]int, len(recs))
	for i, r := range recs {
		index[r] = i
	}
	// ProduceSync's results come in the order the records completed.
	for _, res := range uc.cl.ProduceSync(c.ctx, recs...) {
		i := index[res.Record]
		if res.Err != nil {
			code, msg := recordErrorCode(res.Err), res.Err.Error()
			out[i] = partitionOffset{ErrorCode: &code, Error: &msg}
			continue
		}
		part, off := res.Record.Partition, res.Record.Offset
		out[i] = partitionOffset{Partition: &part, Offset: &off}
	}
	return out, nil
}

// acceptFormat is the embedded format a records call asks for in Accept:
// "" when it names none (any format will do).
func acceptFormat(r *http.Request) string {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if f := embeddedFormat(mt); f != "" {
			return f
		}
	}
	return ""
}

// autoCreate asks for topic's metadata allowing its creation (Kafka's
// auto.create.topics.enable) and returns its partitions; 40401 when the
// broker does not create it.
func (c *call) autoCreate(topic string) (kadm.PartitionDetails, error) {
	uc, err := c.client()
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(c.ctx, uc.cl)
	if err != nil {
		return nil, kafkaError(err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		// LEADER_NOT_AVAILABLE: created, partitions not led yet; the
		// metadata read next shows them.
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && err != kerr.LeaderNotAvailable {
			return nil, kafkaError(err)
		}
		td, err := c.topic(topic)
		return td.Partitions, err
	}
	return nil, errTopicNotFound
}
