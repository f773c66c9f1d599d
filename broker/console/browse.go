package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxShown bounds the bytes of one key, header or value a page shows.
const maxShown = 4096

// valueView is a key, header value or record value as the browser shows it.
type valueView struct {
	Kind string // "null", "text", "json" (pretty-printed), "hex" (a dump) or "schema" (decoded JSON)
	Text string
	Size int
	Cut  int // bytes not shown
	// SchemaID is the schema id of a value the Schema Registry decoded.
	SchemaID int
	raw      []byte // the bytes, for decoding with a schema
}

// renderValue shows b as JSON (pretty-printed) when it is a JSON object or
// array, as text when it is printable UTF-8, otherwise as a hex dump.
func renderValue(b []byte) valueView {
	if b == nil {
		return valueView{Kind: "null", Text: "null"}
	}
	v := valueView{Size: len(b), raw: b}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed) {
		var out bytes.Buffer
		if json.Indent(&out, trimmed, "", "  ") == nil {
			v.Kind, v.Text = "json", out.String()
			if len(v.Text) > maxShown*2 {
				v.Cut = len(v.Text) - maxShown*2
				v.Text = v.Text[:maxShown*2]
			}
			return v
		}
	}
	shown := b
	if len(shown) > maxShown {
		shown, v.Cut = shown[:maxShown], len(b)-maxShown
	}
	if printable(b) {
		v.Kind, v.Text = "text", string(shown)
		return v
	}
	v.Kind, v.Text = "hex", hex.Dump(shown)
	return v
}

// printable reports whether b is UTF-8 text without control characters
// other than tab, newline and carriage return.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}

// headerView is one record header.
type headerView struct {
	Key   string
	Value valueView
}

// recordView is one record in the browser.
type recordView struct {
	Offset    int64
	Timestamp time.Time
	Key       valueView
	Headers   []headerView
	Value     valueView
}

// browseQuery is the message browser's form.
type browseQuery struct {
	Topic     string
	Partition int32
	Offset    string // empty: the last Limit records (or from Timestamp)
	Timestamp string // milliseconds since the epoch or RFC 3339
	Limit     int
}

// browseData is the message browser page.
type browseData struct {
	Q          browseQuery
	Topics     []string
	From       int64 // first offset asked for
	Start, End int64
	Records    []recordView
	Searched   bool
}

// parseBrowse reads the form; a bad number is an error to show.
func parseBrowse(r *http.Request) (browseQuery, error) {
	q := browseQuery{Topic: r.FormValue("topic"), Offset: strings.TrimSpace(r.FormValue("offset")),
		Timestamp: strings.TrimSpace(r.FormValue("timestamp")), Limit: 20}
	if s := r.FormValue("partition"); s != "" {
		p, err := strconv.ParseInt(s, 10, 32)
		if err != nil || p < 0 {
			return q, fmt.Errorf("partition %q is not a partition number", s)
		}
		q.Partition = int32(p)
	}
	if s := r.FormValue("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return q, fmt.Errorf("limit %q is not a positive number", s)
		}
		q.Limit = min(n, 500)
	}
	return q, nil
}

// timestampMillis parses milliseconds since the epoch or an RFC 3339 time
// (a browser's datetime-local value is read as UTC).
func timestampMillis(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("timestamp %q is neither milliseconds since the epoch nor RFC 3339", s)
}

func (c *Console) messages(w http.ResponseWriter, r *http.Request) {
	q, err := parseBrowse(r)
	d := browseData{Q: q}
	adm, seed, aerr := c.admin()
	if aerr != nil {
		c.render(w, "messages", "Messages", nil, aerr)
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	if ts, lerr := adm.ListTopics(ctx); lerr == nil {
		d.Topics = ts.Names()
	}
	if err != nil || q.Topic == "" {
		c.render(w, "messages", "Messages", d, err)
		return
	}
	d.Searched = true
	starts, err1 := adm.ListStartOffsets(ctx, q.Topic)
	ends, err2 := adm.ListEndOffsets(ctx, q.Topic)
	so, ok1 := starts.Lookup(q.Topic, q.Partition)
	eo, ok2 := ends.Lookup(q.Topic, q.Partition)
	lerr := errors.Join(err1, err2)
	if lerr == nil && (!ok1 || !ok2) {
		lerr = fmt.Errorf("topic %q has no partition %d", q.Topic, q.Partition)
	}
	if lerr = errors.Join(lerr, so.Err, eo.Err); lerr != nil {
		c.render(w, "messages", "Messages", d, lerr)
		return
	}
	d.Start, d.End = so.Offset, eo.Offset
	switch {
	case q.Offset != "":
		d.From, err = strconv.ParseInt(q.Offset, 10, 64)
		if err != nil {
			c.render(w, "messages", "Messages", d, fmt.Errorf("offset %q is not a number", q.Offset))
			return
		}
	case q.Timestamp != "":
		ms, err := timestampMillis(q.Timestamp)
		if err != nil {
			c.render(w, "messages", "Messages", d, err)
			return
		}
		at, err := adm.ListOffsetsAfterMilli(ctx, ms, q.Topic)
		o, ok := at.Lookup(q.Topic, q.Partition)
		if err != nil || !ok || o.Err != nil {
			c.render(w, "messages", "Messages", d, errors.Join(err, o.Err))
			return
		}
		d.From = o.Offset
	default:
		d.From = max(d.End-int64(q.Limit), d.Start)
	}
	d.From = max(d.From, d.Start)
	d.Records, err = readRecords(ctx, seed, q.Topic, q.Partition, d.From, d.End, q.Limit)
	dec := c.decoder(r) // schemas.go: nil without a registry
	for i := range d.Records {
		dec.view(ctx, &d.Records[i].Key)
		dec.view(ctx, &d.Records[i].Value)
	}
	c.render(w, "messages", "Messages", d, err)
}

// readRecords reads up to limit records of one partition from offset from,
// stopping at end (the high watermark), with a consumer of its own that
// joins no group and commits nothing (read_uncommitted: records of open
// transactions show too).
func readRecords(ctx context.Context, seed Endpoint, topic string, partition int32, from, end int64, limit int) ([]recordView, error) {
	if from >= end {
		return nil, nil
	}
	cl, err := kgo.NewClient(append(seed.opts(), kgo.ClientID("kbroker-console-browser"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return nil, fmt.Errorf("console: consumer: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out []recordView
	for len(out) < limit {
		fs := cl.PollRecords(ctx, limit-len(out))
		if err := ctx.Err(); err != nil {
			if len(out) > 0 { // the tail was control records or aborted data
				return out, nil
			}
			return out, fmt.Errorf("reading %s from offset %d: %w", tpString(topic, partition), from, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		if ferr != nil {
			return out, ferr
		}
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			if len(out) >= limit || r.Offset >= end {
				return
			}
			rv := recordView{Offset: r.Offset, Timestamp: r.Timestamp.UTC(), Key: renderValue(r.Key), Value: renderValue(r.Value)}
			for _, h := range r.Headers {
				rv.Headers = append(rv.Headers, headerView{Key: h.Key, Value: renderValue(h.Value)})
			}
			out = append(out, rv)
		})
		if last >= end-1 {
			break
		}
	}
	return out, nil
}
