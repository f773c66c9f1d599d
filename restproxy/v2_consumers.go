package restproxy

// v2 consumer instance calls under /consumers/{group}: create, delete,
// subscription, assignments, positions (seek), records, offsets (commit and
// committed), in the shapes of Confluent's ConsumersResource.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Confluent's defaults of a records read.
const (
	defaultRequestTimeout = time.Second // consumer.request.timeout.ms
	maxRequestTimeout     = 60 * time.Second
)

// flexString is a JSON string, number or boolean, as Jackson coerces them
// into a String field.
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = flexString(s)
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v.(type) {
	case bool, float64:
		*f = flexString(strings.TrimSpace(string(b)))
		return nil
	case nil:
		return nil
	}
	return fmt.Errorf("%s is not a string, number or boolean", b)
}

type createInstanceRequest struct {
	Name            *flexString `json:"name"`
	ID              *flexString `json:"id"`
	Format          *flexString `json:"format"`
	AutoOffsetReset *flexString `json:"auto.offset.reset"`
	AutoCommit      *flexString `json:"auto.commit.enable"`
	FetchMinBytes   *flexString `json:"fetch.min.bytes"`
	RequestTimeout  *flexString `json:"consumer.request.timeout.ms"`
}

type createInstanceResponse struct {
	InstanceID string `json:"instance_id"`
	BaseURI    string `json:"base_uri"`
}

type subscriptionRequest struct {
	Topics       []string `json:"topics"`
	TopicPattern *string  `json:"topic_pattern"`
}

type partitionsRequest struct {
	Partitions []topicPartition `json:"partitions"`
}

type offsetMetadata struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata"`
}

type offsetsRequest struct {
	Offsets []offsetMetadata `json:"offsets"`
}

type consumerRecord struct {
	Topic     string          `json:"topic"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
}

func (p *Proxy) routesV2Consumers() {
	p.handle("POST /consumers/{group}", ctV2, (*call).v2CreateInstance)
	p.handle("DELETE /consumers/{group}/instances/{instance}", ctV2, func(c *call) error {
		if _, err := c.p.instances.acquire(c.r.PathValue("group"), c.r.PathValue("instance"), c.login.user); err != nil {
			return err
		}
		if in := c.p.instances.remove(c.r.PathValue("group"), c.r.PathValue("instance")); in != nil {
			in.release()
			in.close()
		}
		c.w.WriteHeader(http.StatusNoContent)
		return nil
	})
	p.instanceCall("POST", "subscription", func(c *call, in *instance) error {
		var req subscriptionRequest
		if err := c.decodeV2(&req, true); err != nil {
			return err
		}
		switch {
		case req.TopicPattern != nil && len(req.Topics) > 0:
			return errIllegalState("Subscription to topics, partitions and pattern are mutually exclusive")
		case req.TopicPattern != nil:
			return in.subscribeLocked([]string{*req.TopicPattern}, true)
		case len(req.Topics) > 0:
			return in.subscribeLocked(req.Topics, false)
		}
		return errPayload("A list (of Topics type) or a topic_pattern must be specified.")
	})
	p.instanceCall("GET", "subscription", func(c *call, in *instance) error {
		topics := []string{}
		if in.mode == modeSubscribed && !in.pattern {
			topics = append(topics, in.topics...)
		} else if in.mode == modeSubscribed {
			for _, tp := range in.assignmentLocked() {
				if len(topics) == 0 || topics[len(topics)-1] != tp.Topic {
					topics = append(topics, tp.Topic)
				}
			}
		}
		return c.reply(struct {
			Topics []string `json:"topics"`
		}{topics})
	})
	p.instanceCall("DELETE", "subscription", func(c *call, in *instance) error {
		if in.mode == modeSubscribed {
			in.resetLocked()
		}
		return nil
	})
	p.instanceCall("POST", "assignments", func(c *call, in *instance) error {
		var req partitionsRequest
		if err := c.decodeV2(&req, true); err != nil {
			return err
		}
		return in.assignLocked(c.ctx, req.Partitions)
	})
	p.instanceCall("GET", "assignments", func(c *call, in *instance) error {
		return c.reply(partitionsRequest{Partitions: in.assignmentLocked()})
	})
	p.instanceCall("POST", "positions", func(c *call, in *instance) error {
		var req offsetsRequest
		if err := c.decodeV2(&req, true); err != nil {
			return err
		}
		to := map[topicPartition]int64{}
		for _, o := range req.Offsets {
			to[topicPartition{o.Topic, o.Partition}] = o.Offset
		}
		return in.seekLocked(to)
	})
	for _, end := range []string{"beginning", "end"} {
		p.instanceCall("POST", "positions/"+end, func(c *call, in *instance) error {
			var req partitionsRequest
			if err := c.decodeV2(&req, true); err != nil {
				return err
			}
			if err := in.checkAssignedLocked(req.Partitions); err != nil {
				return err
			}
			return c.seekToEnd(in, req.Partitions, end == "end")
		})
	}
	p.instanceCall("GET", "records", (*call).v2Records)
	p.instanceCall("POST", "offsets", (*call).v2Commit)
	p.instanceCall("GET", "offsets", (*call).v2Committed)
}

// instanceCall registers method /consumers/{group}/instances/{instance}/<sub>:
// h runs under the instance's lock; a call with no reply written answers 204.
func (p *Proxy) instanceCall(method, sub string, h func(c *call, in *instance) error) {
	p.handle(method+" /consumers/{group}/instances/{instance}/"+sub, ctV2, func(c *call) error {
		in, err := c.p.instances.acquire(c.r.PathValue("group"), c.r.PathValue("instance"), c.login.user)
		if err != nil {
			return err
		}
		defer in.release()
		in.mu.Lock()
		defer in.mu.Unlock()
		if in.closed {
			return errInstanceNotFound
		}
		rw := &replyWriter{ResponseWriter: c.w}
		c.w = rw
		if err := h(c, in); err != nil {
			return err
		}
		if !rw.wrote {
			rw.WriteHeader(http.StatusNoContent)
		}
		return nil
	})
}

// replyWriter records whether a reply was written.
type replyWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *replyWriter) WriteHeader(status int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(status)
}

func (c *call) reply(v any) error {
	writeJSON(c.w, http.StatusOK, ctV2, v)
	return nil
}

// decodeV2 decodes a v2 JSON body, refusing a content type that is not
// v2's (415) when there is a body.
func (c *call) decodeV2(v any, required bool) error {
	if c.r.ContentLength != 0 && !v2JSONTypes[c.mediaType()] {
		return errUnsupportedMedia
	}
	return c.decode(v, required)
}

func (c *call) v2CreateInstance() error {
	var req createInstanceRequest
	if err := c.decodeV2(&req, false); err != nil {
		return err
	}
	str := func(f *flexString, def string) string {
		if f == nil || *f == "" {
			return def
		}
		return string(*f)
	}
	invalid := func(format string, args ...any) error {
		return errf(http.StatusUnprocessableEntity, codeInvalidConsumerCfg, "Invalid consumer configuration: "+format, args...)
	}
	in := &instance{
		group:   c.r.PathValue("group"),
		owner:   c.login.user,
		format:  strings.ToLower(str(req.Format, formatBinary)),
		reset:   strings.ToLower(str(req.AutoOffsetReset, "latest")),
		timeout: defaultRequestTimeout,
	}
	in.name = str(req.Name, str(req.ID, ""))
	if in.name == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		in.name = "rest-consumer-" + hex.EncodeToString(b[:])
	}
	if !knownFormat(in.format) {
		return invalid("unknown format %q", in.format)
	}
	switch in.reset {
	case "earliest", "latest", "none":
	case "smallest", "largest": // the old consumer's names
		in.reset = map[string]string{"smallest": "earliest", "largest": "latest"}[in.reset]
	default:
		return invalid("auto.offset.reset %q is not earliest, latest or none", in.reset)
	}
	var err error
	if in.autoCommit, err = strconv.ParseBool(str(req.AutoCommit, "false")); err != nil {
		return invalid("auto.commit.enable %q is not true or false", *req.AutoCommit)
	}
	if v := str(req.FetchMinBytes, ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return invalid("fetch.min.bytes %q", v)
		}
		in.minBytes = int32(n)
	}
	if v := str(req.RequestTimeout, ""); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return invalid("consumer.request.timeout.ms %q", v)
		}
		in.timeout = min(time.Duration(n)*time.Millisecond, maxRequestTimeout)
	}
	seed, err := c.p.cfg.Bootstrap()
	if err != nil {
		return kafkaError(err)
	}
	in.login = c.login
	in.login.seed = seed
	in.position = map[topicPartition]int64{}
	in.own.m = map[topicPartition]bool{}
	if err := c.p.instances.add(in); err != nil {
		return err
	}
	return c.reply(createInstanceResponse{
		InstanceID: in.name,
		BaseURI:    c.baseURL() + "/consumers/" + in.group + "/instances/" + in.name,
	})
}

// seekToEnd seeks tps to their log start offsets, or end offsets when end.
func (c *call) seekToEnd(in *instance, tps []topicPartition, end bool) error {
	topics := map[string]bool{}
	for _, tp := range tps {
		topics[tp.Topic] = true
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	adm := kadm.NewClient(in.cl)
	list := adm.ListStartOffsets
	if end {
		list = adm.ListEndOffsets
	}
	listed, err := list(c.ctx, names...)
	if err != nil {
		return kafkaError(err)
	}
	to := map[topicPartition]int64{}
	for _, tp := range tps {
		lo, ok := listed.Lookup(tp.Topic, tp.Partition)
		if !ok {
			return errPartitionNotFound
		}
		if lo.Err != nil {
			return kafkaError(lo.Err)
		}
		to[tp] = lo.Offset
	}
	return in.seekLocked(to)
}

// v2Records reads records, waiting up to ?timeout= (or the instance's
// consumer.request.timeout.ms) for the first, and returns at most about
// ?max_bytes= of keys and values (at least one record).
func (c *call) v2Records(in *instance) error {
	if f := acceptFormat(c.r); f != "" && f != in.format {
		return errFormatMismatch
	}
	wait := in.timeout
	if v := c.r.URL.Query().Get("timeout"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return errf(http.StatusBadRequest, http.StatusBadRequest, "HTTP 400 Bad Request: timeout %q", v)
		}
		wait = min(time.Duration(n)*time.Millisecond, maxRequestTimeout)
	}
	maxBytes := c.p.cfg.MaxRequestBytes
	if v := c.r.URL.Query().Get("max_bytes"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return errf(http.StatusBadRequest, http.StatusBadRequest, "HTTP 400 Bad Request: max_bytes %q", v)
		}
		maxBytes = min(n, maxBytes)
	}
	if in.mode == modeNone {
		return errIllegalState("Consumer is not subscribed to any topics or assigned any partitions")
	}
	var dec func([]byte) (json.RawMessage, error) // schema formats
	if _, ok := formatSchemaType[in.format]; ok {
		reg, err := c.registry()
		if err != nil {
			return err
		}
		dec = func(b []byte) (json.RawMessage, error) { return reg.decodeWire(c.ctx, b) }
	}
	ctx, cancel := context.WithTimeout(c.ctx, wait)
	defer cancel()
	out := []consumerRecord{}
	var size int64
	fs := in.cl.PollRecords(ctx, 1)
	for {
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			// The poll's own deadline, or the call ending, is no error.
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil && len(out) == 0 {
			return kafkaError(ferr)
		}
		n := 0
		for _, r := range fs.Records() {
			cr, err := in.record(r, dec)
			if err != nil {
				return err
			}
			out = append(out, cr)
			size += int64(len(r.Key) + len(r.Value))
			in.position[topicPartition{r.Topic, r.Partition}] = r.Offset + 1
			n++
		}
		if n == 0 || size >= maxBytes {
			break
		}
		//lint:ignore SA1012 a nil context takes only what is buffered, without waiting
		fs = in.cl.PollRecords(nil, 1)
	}
	return c.reply(out)
}

// record is r in the instance's format; dec decodes the schema formats.
func (in *instance) record(r *kgo.Record, dec func([]byte) (json.RawMessage, error)) (consumerRecord, error) {
	cr := consumerRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: json.RawMessage("null"), Value: json.RawMessage("null")}
	enc := func(b []byte) (json.RawMessage, error) {
		if b == nil {
			return json.RawMessage("null"), nil
		}
		if dec != nil {
			j, err := dec(b)
			var re *restError
			if errors.As(err, &re) {
				return nil, re
			}
			if err != nil {
				return nil, errf(http.StatusInternalServerError, codeKafkaError, "Kafka error: record %s-%d@%d cannot be read as %s: %v", r.Topic, r.Partition, r.Offset, in.format, err)
			}
			return j, nil
		}
		if in.format == formatBinary {
			return json.Marshal(base64.StdEncoding.EncodeToString(b))
		}
		if !json.Valid(b) {
			return nil, errf(http.StatusInternalServerError, codeKafkaError, "Kafka error: record %s-%d@%d is not JSON; read it with the binary format", r.Topic, r.Partition, r.Offset)
		}
		return json.RawMessage(b), nil
	}
	var err error
	if cr.Key, err = enc(r.Key); err != nil {
		return cr, err
	}
	cr.Value, err = enc(r.Value)
	return cr, err
}

// v2Commit commits the body's offsets (each the last read, so offset+1 is
// committed, as Confluent does) or, without a body, every position read.
func (c *call) v2Commit(in *instance) error {
	var req offsetsRequest
	if err := c.decodeV2(&req, false); err != nil {
		return err
	}
	if in.mode == modeNone {
		return errIllegalState("Consumer is not subscribed to any topics or assigned any partitions")
	}
	offs := kadm.Offsets{}
	if req.Offsets == nil {
		// As Kafka's commitSync(): the positions of the partitions the
		// instance consumes now, never of one a rebalance moved away.
		for _, tp := range in.assignmentLocked() {
			if next, ok := in.position[tp]; ok {
				offs.Add(kadm.Offset{Topic: tp.Topic, Partition: tp.Partition, At: next, LeaderEpoch: -1})
			}
		}
	}
	for _, o := range req.Offsets {
		offs.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset + 1, LeaderEpoch: -1, Metadata: o.Metadata})
	}
	if in.mode == modeAssigned {
		resp, err := kadm.NewClient(in.cl).CommitOffsets(c.ctx, in.group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			return kafkaError(err)
		}
		return c.reply([]struct{}{})
	}
	var commitErr error
	eos := map[string]map[int32]kgo.EpochOffset{}
	offs.Each(func(o kadm.Offset) {
		if eos[o.Topic] == nil {
			eos[o.Topic] = map[int32]kgo.EpochOffset{}
		}
		eos[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.At}
	})
	// kgo commits its member id as the metadata; the body's metadata (""
	// without one, as Java's commitSync) is set on the request just before
	// it is sent, keeping the generation and member id that kgo fills in.
	ctx := kgo.PreCommitFnContext(c.ctx, func(req *kmsg.OffsetCommitRequest) error {
		for i := range req.Topics {
			t := &req.Topics[i]
			for j := range t.Partitions {
				p := &t.Partitions[j]
				if o, ok := offs.Lookup(t.Topic, p.Partition); ok {
					md := o.Metadata
					p.Metadata = &md
				}
			}
		}
		return nil
	})
	in.cl.CommitOffsetsSync(ctx, eos, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if e := kerr.ErrorForCode(p.ErrorCode); e != nil && commitErr == nil {
					commitErr = e
				}
			}
		}
	})
	if commitErr != nil {
		return kafkaError(commitErr)
	}
	return c.reply([]struct{}{})
}

// v2Committed answers the group's committed offsets of the body's
// partitions (those with a commit).
func (c *call) v2Committed(in *instance) error {
	var req partitionsRequest
	if err := c.decodeV2(&req, true); err != nil {
		return err
	}
	adm, err := c.admin()
	if err != nil {
		return err
	}
	committed, err := adm.FetchOffsets(c.ctx, in.group)
	if err != nil {
		return kafkaError(err)
	}
	out := []offsetMetadata{}
	for _, tp := range req.Partitions {
		if o, ok := committed.Lookup(tp.Topic, tp.Partition); ok && o.Err == nil && o.At >= 0 {
			out = append(out, offsetMetadata{Topic: tp.Topic, Partition: tp.Partition, Offset: o.At, Metadata: o.Metadata})
		}
	}
	return c.reply(struct {
		Offsets []offsetMetadata `json:"offsets"`
	}{out})
}
