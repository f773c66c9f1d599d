package restproxy

// v3 produce: POST /v3/clusters/{cluster_id}/topics/{topic_name}/records.
// The body is one JSON record or, streamed, many concatenated on one
// connection (curl -T-, Transfer-Encoding: chunked); each gets one reply
// object, in order, written and flushed as soon as it is produced, so a
// client may wait for a reply before sending the next record. Records are
// produced while later ones are read (up to streamWindow in flight); a
// record that cannot be decoded gets an error reply and, when its JSON is
// broken, ends the stream.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// streamWindow bounds the records of one stream produced but not yet
// answered; their bytes are bounded by the user client's
// MaxBufferedBytes.
const streamWindow = 64

type v3Data struct {
	Type *string         `json:"type"`
	Data json.RawMessage `json:"data"`
	// Schema fields (schemas.go): the AVRO, PROTOBUF and JSONSCHEMA types
	// name their schema by text, id, or subject and version.
	Subject             *string         `json:"subject"`
	SubjectNameStrategy *string         `json:"subject_name_strategy"`
	SchemaID            *int            `json:"schema_id"`
	SchemaVersion       *int            `json:"schema_version"`
	Schema              json.RawMessage `json:"schema"`
}

type v3Header struct {
	Name  string  `json:"name"`
	Value *string `json:"value"` // base64
}

type v3ProduceRecord struct {
	PartitionID *int32     `json:"partition_id"`
	Headers     []v3Header `json:"headers"`
	Key         *v3Data    `json:"key"`
	Value       *v3Data    `json:"value"`
	Timestamp   *time.Time `json:"timestamp"`
}

type v3DataInfo struct {
	Type string `json:"type"`
	Size int    `json:"size"`
}

type v3ProduceReply struct {
	ErrorCode   int         `json:"error_code"`
	Message     string      `json:"message,omitempty"`
	ClusterID   string      `json:"cluster_id,omitempty"`
	TopicName   string      `json:"topic_name,omitempty"`
	PartitionID *int32      `json:"partition_id,omitempty"`
	Offset      *int64      `json:"offset,omitempty"`
	Timestamp   string      `json:"timestamp,omitempty"`
	Key         *v3DataInfo `json:"key,omitempty"`
	Value       *v3DataInfo `json:"value,omitempty"`
}

// v3Bytes is a key or value's bytes: BINARY is base64, STRING a JSON
// string taken as UTF-8, JSON (and no type) any JSON value as its text;
// the schema types and any schema field go through the Schema Registry.
func (c *call) v3Bytes(topic string, isKey bool, d *v3Data) ([]byte, *v3DataInfo, error) {
	if d == nil {
		return nil, nil, nil
	}
	if d.Subject != nil || d.SubjectNameStrategy != nil || d.SchemaID != nil || d.SchemaVersion != nil || len(d.Schema) > 0 ||
		d.Type != nil && isV3SchemaType(*d.Type) {
		return c.v3SchemaBytes(topic, isKey, d)
	}
	typ := "JSON"
	if d.Type != nil {
		typ = *d.Type
	}
	var b []byte
	switch typ {
	case "BINARY":
		var s string
		if err := json.Unmarshal(d.Data, &s); err != nil {
			return nil, nil, errf(http.StatusBadRequest, http.StatusBadRequest, "BINARY data must be a base64 string: %v", err)
		}
		var err error
		if b, err = base64.StdEncoding.DecodeString(s); err != nil {
			return nil, nil, errf(http.StatusBadRequest, http.StatusBadRequest, "Invalid base64: %v", err)
		}
	case "STRING":
		var s string
		if err := json.Unmarshal(d.Data, &s); err != nil {
			return nil, nil, errf(http.StatusBadRequest, http.StatusBadRequest, "STRING data must be a string: %v", err)
		}
		b = []byte(s)
	case "JSON":
		if len(d.Data) > 0 && string(d.Data) != "null" {
			b = []byte(d.Data)
		}
	default:
		return nil, nil, errf(http.StatusBadRequest, http.StatusBadRequest, "Unknown type %q: BINARY, JSON, STRING, AVRO, PROTOBUF or JSONSCHEMA.", typ)
	}
	return b, &v3DataInfo{Type: typ, Size: len(b)}, nil
}

// v3Record converts one request record for topic.
func (c *call) v3Record(topic string, in v3ProduceRecord) (*kgo.Record, *v3DataInfo, *v3DataInfo, error) {
	r := &kgo.Record{Topic: topic, Partition: -1}
	if in.PartitionID != nil {
		r.Partition = *in.PartitionID
		if r.Partition < 0 {
			return nil, nil, nil, errPartitionNotFound
		}
	}
	var ki, vi *v3DataInfo
	var err error
	if r.Key, ki, err = c.v3Bytes(topic, true, in.Key); err != nil {
		return nil, nil, nil, err
	}
	if r.Value, vi, err = c.v3Bytes(topic, false, in.Value); err != nil {
		return nil, nil, nil, err
	}
	for _, h := range in.Headers {
		kh := kgo.RecordHeader{Key: h.Name}
		if h.Value != nil {
			if kh.Value, err = base64.StdEncoding.DecodeString(*h.Value); err != nil {
				return nil, nil, nil, errf(http.StatusBadRequest, http.StatusBadRequest, "Header %s: invalid base64: %v", h.Name, err)
			}
		}
		r.Headers = append(r.Headers, kh)
	}
	if in.Timestamp != nil {
		r.Timestamp = *in.Timestamp
	}
	return r, ki, vi, nil
}

// pendingReply is one record's reply, ready when done is closed.
type pendingReply struct {
	done  chan struct{}
	reply v3ProduceReply
}

func (p *Proxy) routesV3Records() {
	p.v3("POST /topics/{topic_name}/records", func(v *v3Call) error {
		if mt := v.mediaType(); mt != "application/json" && mt != "" {
			return errUnsupportedMedia
		}
		topic := v.r.PathValue("topic_name")
		uc, pl, err := v.topicPlacer(topic) // a stream looks its topic up once
		if err != nil {
			return err
		}
		// Replies are written while the body is still read, for as long
		// as the connection lasts (a kept-alive connection may carry the
		// deadlines of an earlier call).
		rc := http.NewResponseController(v.w)
		_ = rc.EnableFullDuplex()
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		v.w.Header().Set("Content-Type", ctV3)
		v.w.WriteHeader(http.StatusOK)

		// A stream lives as long as its connection, not RequestTimeout.
		ctx, cancel := context.WithCancel(v.r.Context())
		defer cancel()
		defer context.AfterFunc(v.p.stopped, cancel)()
		replies := make(chan *pendingReply, streamWindow)
		var writer sync.WaitGroup
		writer.Add(1)
		go func() { // owned by this call: it returns after writer.Wait
			defer writer.Done()
			v.writeReplies(replies)
		}()
		defer writer.Wait()
		defer close(replies)

		lim := &recordLimit{r: v.r.Body, max: v.p.cfg.MaxRequestBytes}
		dec := json.NewDecoder(lim)
		dec.DisallowUnknownFields()
		for {
			var in v3ProduceRecord
			err := dec.Decode(&in)
			if errors.Is(err, io.EOF) {
				return nil
			}
			pr := &pendingReply{done: make(chan struct{})}
			if err != nil { // the stream cannot be resynchronised
				status := http.StatusBadRequest
				if errors.Is(err, errRecordTooLarge) {
					status = http.StatusRequestEntityTooLarge
				}
				pr.reply = v3ErrorReply(errf(status, status, "Could not parse the record: %v", err))
				close(pr.done)
				replies <- pr
				return nil
			}
			// The next record's limit starts with what the decoder read ahead.
			if br, ok := dec.Buffered().(interface{ Len() int }); ok {
				lim.read = int64(br.Len())
			}
			replies <- pr
			r, ki, vi, err := v.v3Record(topic, in)
			if err == nil {
				err = pl.place(r)
			}
			if err != nil {
				pr.reply = v3ErrorReply(err)
				close(pr.done)
				continue
			}
			uc.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					pr.reply = v3ErrorReply(err)
				} else {
					part, off := r.Partition, r.Offset
					pr.reply = v3ProduceReply{ErrorCode: http.StatusOK, ClusterID: v.md.Cluster, TopicName: r.Topic,
						PartitionID: &part, Offset: &off, Timestamp: r.Timestamp.UTC().Format(v3TimeFormat), Key: ki, Value: vi}
				}
				close(pr.done)
			})
		}
	})
}

// v3TimeFormat is how v3 replies write a record's timestamp.
const v3TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// topicPlacer returns the call's user client and a placer that knows
// topic's partition count (40401 when the topic does not exist).
func (v *v3Call) topicPlacer(topic string) (*userClient, *placer, error) {
	uc, err := v.client()
	if err != nil {
		return nil, nil, err
	}
	td, err := v.call.topic(topic)
	if err != nil {
		return nil, nil, err
	}
	pl := v.newPlacer()
	pl.counts[topic] = len(td.Partitions)
	return uc, pl, nil
}

func v3ErrorReply(err error) v3ProduceReply {
	re := kafkaError(err)
	return v3ProduceReply{ErrorCode: re.status, Message: re.msg}
}

// writeReplies writes each reply in order once it is ready, flushing
// after each, until replies is closed and drained. A write error (client
// gone) leaves the rest unwritten but still waits for them, so that no
// produce callback outlives the call.
func (v *v3Call) writeReplies(replies <-chan *pendingReply) {
	enc := json.NewEncoder(v.w)
	rc := http.NewResponseController(v.w)
	var failed bool
	for pr := range replies {
		<-pr.done // produce callbacks end at the latest when the call's context does
		if failed {
			continue
		}
		// A client that stops reading its replies ends its stream.
		_ = rc.SetWriteDeadline(time.Now().Add(v.p.cfg.RequestTimeout))
		if err := enc.Encode(pr.reply); err != nil {
			failed = true
			continue
		}
		if err := rc.Flush(); err != nil {
			failed = true
		}
	}
}

// recordLimit fails a read once more than max bytes were read since the
// last reset: one streamed record (with what the decoder reads ahead)
// may not exceed rest.proxy.max.request.bytes.
type recordLimit struct {
	r    io.Reader
	max  int64
	read int64
}

// errRecordTooLarge is the error of a streamed record over the limit.
var errRecordTooLarge = errors.New("a record exceeds rest.proxy.max.request.bytes")

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.read >= l.max {
		return 0, fmt.Errorf("%w (%d)", errRecordTooLarge, l.max)
	}
	if rest := l.max - l.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}
