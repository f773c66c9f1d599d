package schemaregistry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sr"
)

// TestBrokerSideValidation: a topic with confluent.value.schema.validation
// (or .key.) takes a record only if it carries the id of a schema
// registered under the subject its strategy names; otherwise the batch is
// refused whole with INVALID_RECORD and one record error per bad record,
// and nothing is written. Null keys and values pass.
func TestBrokerSideValidation(t *testing.T) {
	rb := startRegistry(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(rb.b.Addrs()[0].String()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	create := func(topic string, configs map[string]*string) {
		t.Helper()
		res, err := adm.CreateTopic(ctx, 1, 1, configs, topic)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	on := kadm.StringPtr("true")
	create("v", map[string]*string{"confluent.value.schema.validation": on})
	create("k", map[string]*string{"confluent.key.schema.validation": on})
	create("rn", map[string]*string{"confluent.value.schema.validation": on,
		"confluent.value.subject.name.strategy": kadm.StringPtr("io.confluent.kafka.serializers.subject.RecordNameStrategy")})
	create("trn", map[string]*string{"confluent.value.schema.validation": on,
		"confluent.value.subject.name.strategy": kadm.StringPtr("TopicRecordNameStrategy")})

	reg, err := sr.NewClient(sr.URLs(rb.url))
	if err != nil {
		t.Fatal(err)
	}
	register := func(subject, schema string) int {
		t.Helper()
		ss, err := reg.CreateSchema(ctx, subject, sr.Schema{Schema: schema})
		if err != nil {
			t.Fatalf("registering under %s: %v", subject, err)
		}
		return ss.ID
	}
	user := `{"type":"record","name":"User","namespace":"kb","fields":[{"name":"n","type":"string"}]}`
	order := `{"type":"record","name":"Order","namespace":"kb","fields":[{"name":"q","type":"int"}]}`
	vID := register("v-value", user)     // TopicNameStrategy of v
	kID := register("k-key", `"string"`) // of k's keys
	otherID := register("other-value", order)
	rnID := register("kb.User", user) // RecordNameStrategy: the record's name
	trnID := register("trn-kb.Order", order)
	framed := func(id int, payload string) []byte {
		var h sr.ConfluentHeader
		b, _ := h.AppendEncode(nil, id, nil)
		return append(b, payload...)
	}

	produce := func(topic string, recs ...*kgo.Record) error {
		t.Helper()
		for _, r := range recs {
			r.Topic = topic
		}
		return cl.ProduceSync(ctx, recs...).FirstErr()
	}
	for _, c := range []struct {
		what, topic string
		rec         *kgo.Record
		ok          bool
	}{
		{"registered under v-value", "v", &kgo.Record{Value: framed(vID, "\x02a")}, true},
		{"a tombstone", "v", &kgo.Record{Key: []byte("x")}, true},
		{"no wire header", "v", &kgo.Record{Value: []byte("plain")}, false},
		{"an id of another subject", "v", &kgo.Record{Value: framed(otherID, "\x02")}, false},
		{"an unknown id", "v", &kgo.Record{Value: framed(9999, "")}, false},
		{"a key under k-key", "k", &kgo.Record{Key: framed(kID, "\x02k"), Value: []byte("anything")}, true},
		{"a null key", "k", &kgo.Record{Value: []byte("anything")}, true},
		{"a plain key", "k", &kgo.Record{Key: []byte("k"), Value: framed(kID, "")}, false},
		{"RecordNameStrategy: registered as kb.User", "rn", &kgo.Record{Value: framed(rnID, "\x02a")}, true},
		{"RecordNameStrategy: not under kb.Order", "rn", &kgo.Record{Value: framed(otherID, "\x02")}, false},
		{"TopicRecordNameStrategy: trn-kb.Order", "trn", &kgo.Record{Value: framed(trnID, "\x02")}, true},
		{"TopicRecordNameStrategy: kb.User not under trn-", "trn", &kgo.Record{Value: framed(rnID, "\x02a")}, false},
	} {
		err := produce(c.topic, c.rec)
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.what, err)
		}
		if !c.ok && !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: %v, want INVALID_RECORD", c.what, err)
		}
	}

	// One batch, one bad record in it: the whole batch is refused, the
	// answer names the record, and the log does not grow.
	ends := func() int64 {
		t.Helper()
		o, err := adm.ListEndOffsets(ctx, "v")
		if err != nil {
			t.Fatal(err)
		}
		l, _ := o.Lookup("v", 0)
		return l.Offset
	}
	before := ends()
	batch, err := records.Build(records.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, FirstTimestamp: time.Now().UnixMilli()}, []records.Record{
		{OffsetDelta: 0, Value: framed(vID, "\x02a")},
		{OffsetDelta: 1, Value: []byte("plain")},
		{OffsetDelta: 2, Value: framed(vID, "\x02b")},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "v"
	tds, err := adm.ListTopics(ctx, "v")
	if err != nil {
		t.Fatal(err)
	}
	rt.TopicID = tds["v"].ID // Produce v13 names topics by id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.InvalidRecord.Code || len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 ||
		p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "magic byte 0") {
		t.Fatalf("mixed batch: code %d, records %+v, message %v", p.ErrorCode, p.ErrorRecords, p.ErrorMessage)
	}
	if after := ends(); after != before {
		t.Errorf("the refused batch moved the end offset from %d to %d", before, after)
	}

	// The confluent.* configs are listed for a topic that sets them only.
	rcs, err := adm.DescribeTopicConfigs(ctx, "v", "rn")
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		names := map[string]string{}
		for _, c := range rc.Configs {
			names[c.Key] = c.MaybeValue()
		}
		if names["confluent.value.schema.validation"] != "true" {
			t.Errorf("%s: confluent.value.schema.validation = %q", rc.Name, names["confluent.value.schema.validation"])
		}
		if _, listed := names["confluent.key.schema.validation"]; listed {
			t.Errorf("%s lists confluent.key.schema.validation, which it does not set", rc.Name)
		}
	}
	res, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"confluent.value.subject.name.strategy": kadm.StringPtr("Nope")}, "bad")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("an unknown strategy: %v, want INVALID_CONFIG", err)
	}
}
