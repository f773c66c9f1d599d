package restproxy_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

type produceReply struct {
	KeySchemaID   *int `json:"key_schema_id"`
	ValueSchemaID *int `json:"value_schema_id"`
	Offsets       []struct {
		Partition *int32  `json:"partition"`
		Offset    *int64  `json:"offset"`
		ErrorCode *int    `json:"error_code"`
		Error     *string `json:"error"`
	} `json:"offsets"`
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestV2Produce: binary and json records to a topic and to a partition get
// their partition and offset, in order, and a native consumer reads them
// back byte for byte; keys pick partitions as Kafka's murmur2 does.
func TestV2Produce(t *testing.T) {
	e := start(t, nil)
	e.createTopic("events", 3)

	var pr produceReply
	r := e.must(http.StatusOK, &pr, "POST", "/topics/events", ctBinary,
		`{"records":[{"key":"`+b64("k1")+`","value":"`+b64("v1")+`"},{"value":"`+b64("v2")+`","partition":2},{"value":null}]}`)
	if ct := r.header.Get("Content-Type"); ct != ctV2 {
		t.Errorf("content type %q, want %q", ct, ctV2)
	}
	if !strings.Contains(r.String(), `"key_schema_id":null`) || !strings.Contains(r.String(), `"error_code":null`) {
		t.Errorf("reply lacks Confluent's null fields: %s", r)
	}
	if len(pr.Offsets) != 3 {
		t.Fatalf("offsets: %s", r)
	}
	for i, o := range pr.Offsets {
		if o.Partition == nil || o.Offset == nil || o.ErrorCode != nil || o.Error != nil {
			t.Fatalf("record %d: %s", i, r)
		}
	}
	if *pr.Offsets[1].Partition != 2 {
		t.Errorf("record with partition 2 went to %d", *pr.Offsets[1].Partition)
	}
	// Kafka's default partitioner: murmur2 of the key.
	want := int32(kgo.StickyKeyPartitioner(nil).ForTopic("events").Partition(&kgo.Record{Key: []byte("k1")}, 3))
	if *pr.Offsets[0].Partition != want {
		t.Errorf("key k1 went to partition %d, Kafka's partitioner says %d: %s", *pr.Offsets[0].Partition, want, r)
	}

	e.createTopic("jsonev", 2)
	e.must(http.StatusOK, &pr, "POST", "/topics/jsonev/partitions/1", ctJSON,
		`{"records":[{"key":{"id":1},"value":{"name":"a","n":[1,2]}},{"value":"text"}]}`)
	if len(pr.Offsets) != 2 || *pr.Offsets[0].Partition != 1 || *pr.Offsets[0].Offset != 0 || *pr.Offsets[1].Offset != 1 {
		t.Fatalf("json to partition 1: %+v", pr.Offsets)
	}

	// A missing topic is created, as v2's producer has the broker do.
	e.must(http.StatusOK, &pr, "POST", "/topics/fresh", ctBinary, `{"records":[{"value":"`+b64("new")+`"}]}`)
	if len(pr.Offsets) != 1 || pr.Offsets[0].ErrorCode != nil || *pr.Offsets[0].Offset != 0 {
		t.Errorf("produce to a new topic: %+v", pr)
	}
	e.must(http.StatusOK, nil, "GET", "/topics/fresh", "", "")

	cl := e.kafka(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"jsonev": {1: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(e.ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Key)+"="+string(r.Value)) })
	}
	if got[0] != `{"id":1}={"name":"a","n":[1,2]}` || got[1] != `="text"` {
		t.Errorf("native consumer read %q", got)
	}
}

// TestV2ProduceErrors: Confluent's answers to an unknown topic or
// partition, a wrong content type, an unsupported format, bad base64 and
// malformed or oversized bodies; the proxy keeps serving after each.
func TestV2ProduceErrors(t *testing.T) {
	e := start(t, map[string]string{"rest.proxy.max.request.bytes": "4096", "auto.create.topics.enable": "false"})
	e.createTopic("t", 1)
	rec := `{"records":[{"value":"` + b64("x") + `"}]}`
	for _, tc := range []struct {
		name, path, ct, body string
		status, code         int
	}{
		{"unknown topic", "/topics/nope", ctBinary, rec, 404, 40401},
		{"unknown partition", "/topics/t/partitions/7", ctBinary, rec, 404, 40402},
		{"partition field out of range", "/topics/t", ctBinary, `{"records":[{"value":"eA==","partition":5}]}`, 404, 40402},
		{"plain json content type", "/topics/t", "application/json", rec, 415, 415},
		{"no content type", "/topics/t", "", rec, 415, 415},
		{"unknown format", "/topics/t", "application/vnd.kafka.xml.v2+json", rec, 415, 415},
		{"avro without a registry", "/topics/t", "application/vnd.kafka.avro.v2+json", rec, 500, 50002},
		{"invalid base64", "/topics/t", ctBinary, `{"records":[{"value":"%%%"}]}`, 422, 42203},
		{"binary value not a string", "/topics/t", ctBinary, `{"records":[{"value":{"a":1}}]}`, 422, 42203},
		{"malformed json", "/topics/t", ctBinary, `{"records":[`, 422, 42203},
		{"unknown field", "/topics/t", ctBinary, `{"recs":[]}`, 422, 42203},
		{"empty body", "/topics/t", ctBinary, ``, 422, 42206},
		{"huge body", "/topics/t", ctBinary, `{"records":[{"value":"` + strings.Repeat("A", 8192) + `"}]}`, 413, 413},
	} {
		r := e.do("POST", tc.path, tc.ct, tc.body)
		wantError(t, tc.name, r, tc.status, tc.code)
		if ct := r.header.Get("Content-Type"); ct != ctV2 {
			t.Errorf("%s: content type %q", tc.name, ct)
		}
	}
	wantError(t, "unknown path", e.do("GET", "/nothing/here", "", ""), 404, 404)
	var pr produceReply
	e.must(http.StatusOK, &pr, "POST", "/topics/t", ctBinary, rec)
	if len(pr.Offsets) != 1 || *pr.Offsets[0].Offset != 0 {
		t.Errorf("produce after the bad calls: %+v", pr)
	}
}

// TestV2Metadata: /topics, /topics/{t}, its partitions and /brokers in
// Confluent's shapes.
func TestV2Metadata(t *testing.T) {
	e := start(t, nil)
	e.createTopic("meta", 2)
	var topics []string
	e.must(http.StatusOK, &topics, "GET", "/topics", "", "")
	if !slices.Contains(topics, "meta") {
		t.Errorf("/topics: %q", topics)
	}
	type partition struct {
		Partition int32 `json:"partition"`
		Leader    int32 `json:"leader"`
		Replicas  []struct {
			Broker int32 `json:"broker"`
			Leader bool  `json:"leader"`
			InSync bool  `json:"in_sync"`
		} `json:"replicas"`
	}
	var topic struct {
		Name       string            `json:"name"`
		Configs    map[string]string `json:"configs"`
		Partitions []partition       `json:"partitions"`
	}
	e.must(http.StatusOK, &topic, "GET", "/topics/meta", "", "")
	if topic.Name != "meta" || len(topic.Partitions) != 2 || topic.Configs["cleanup.policy"] != "delete" {
		t.Errorf("/topics/meta: %+v", topic)
	}
	for i, p := range topic.Partitions {
		if p.Partition != int32(i) || len(p.Replicas) != 1 || !p.Replicas[0].Leader || !p.Replicas[0].InSync || p.Replicas[0].Broker != p.Leader {
			t.Errorf("partition %d: %+v", i, p)
		}
	}
	var parts []partition
	e.must(http.StatusOK, &parts, "GET", "/topics/meta/partitions", "", "")
	if len(parts) != 2 {
		t.Errorf("/topics/meta/partitions: %+v", parts)
	}
	var one partition
	e.must(http.StatusOK, &one, "GET", "/topics/meta/partitions/1", "", "")
	if one.Partition != 1 {
		t.Errorf("/topics/meta/partitions/1: %+v", one)
	}
	wantError(t, "missing partition", e.do("GET", "/topics/meta/partitions/9", "", ""), 404, 40402)
	wantError(t, "missing topic", e.do("GET", "/topics/nope", "", ""), 404, 40401)
	wantError(t, "missing topic's partitions", e.do("GET", "/topics/nope/partitions", "", ""), 404, 40401)
	var brokers struct {
		Brokers []int32 `json:"brokers"`
	}
	e.must(http.StatusOK, &brokers, "GET", "/brokers", "", "")
	if fmt.Sprint(brokers.Brokers) != "[0]" && len(brokers.Brokers) != 1 {
		t.Errorf("/brokers: %+v", brokers)
	}
}
