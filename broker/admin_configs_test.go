package broker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAdminAlterConfigs(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "ac", 1, nil)

	alter := func(validate bool, cs ...kadm.AlterConfig) error {
		t.Helper()
		f := adm.AlterTopicConfigs
		if validate {
			f = adm.ValidateAlterTopicConfigs
		}
		resp, err := f(ctx, cs, "ac")
		if err != nil {
			return err
		}
		return resp[0].Err
	}
	if err := alter(false, kadm.AlterConfig{Name: "max.message.bytes", Value: strp("200")},
		kadm.AlterConfig{Name: "retention.ms", Value: strp("1000")}); err != nil {
		t.Fatal(err)
	}
	if v, src := topicConfig(t, ctx, adm, "ac", "max.message.bytes"); v != "200" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("max.message.bytes %s from %v", v, src)
	}
	big := &kgo.Record{Topic: "ac", Value: make([]byte, 400)}
	if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce over the new max.message.bytes: %v", err)
	}
	if err := alter(false, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"}); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, big).FirstErr(); err != nil {
		t.Fatalf("produce after deleting the override: %v", err)
	}

	// APPEND and SUBTRACT on a list config start from its effective value.
	if err := alter(false, kadm.AlterConfig{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: strp("compact")}); err != nil {
		t.Fatal(err)
	}
	if v, _ := topicConfig(t, ctx, adm, "ac", "cleanup.policy"); v != "delete,compact" {
		t.Fatalf("cleanup.policy after append: %q", v)
	}
	if err := alter(false, kadm.AlterConfig{Op: kadm.SubtractConfig, Name: "cleanup.policy", Value: strp("delete")}); err != nil {
		t.Fatal(err)
	}
	if v, _ := topicConfig(t, ctx, adm, "ac", "cleanup.policy"); v != "compact" {
		t.Fatalf("cleanup.policy after subtract: %q", v)
	}
	// Now compacted: keyless records are refused.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ac", Value: []byte("x")}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v", err)
	}
	if err := alter(false, kadm.AlterConfig{Op: kadm.AppendConfig, Name: "retention.ms", Value: strp("5")}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("append to a non-list config: %v", err)
	}

	// Invalid names and values: INVALID_CONFIG naming the key; nothing changes.
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: strp("soon")}}, "ac")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(resp[0].Err, kerr.InvalidConfig) || !strings.Contains(resp[0].ErrMessage, "retention.ms") {
		t.Fatalf("invalid value: %v %q", resp[0].Err, resp[0].ErrMessage)
	}
	if err := alter(false, kadm.AlterConfig{Name: "no.such.config", Value: strp("1")}); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("unknown name: %v", err)
	}
	if err := alter(true, kadm.AlterConfig{Name: "segment.ms", Value: strp("12345")}); err != nil {
		t.Fatal(err)
	}
	if v, src := topicConfig(t, ctx, adm, "ac", "segment.ms"); v == "12345" || src == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("validate-only changed segment.ms to %s", v)
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: strp("1")}}, "missing"); err == nil {
		resp, _ := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: strp("1")}}, "missing")
		if !errors.Is(resp[0].Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("unknown topic: %v", resp[0].Err)
		}
	}

	// Legacy AlterConfigs replaces the whole set of overrides.
	sresp, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: strp("600000")}}, "ac")
	if err != nil || sresp[0].Err != nil {
		t.Fatalf("alter configs: %v %v", err, sresp)
	}
	if v, src := topicConfig(t, ctx, adm, "ac", "cleanup.policy"); v != "delete" || src == kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("cleanup.policy after legacy alter: %s (%v)", v, src)
	}

	// Static broker configs are read-only (dynamic ones: dynamic_configs_test.go).
	bresp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.dirs", Value: strp("/x")}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(bresp[0].Err, kerr.InvalidRequest) {
		t.Fatalf("broker config alter: %v", bresp[0].Err)
	}

	// compression.type=gzip recompresses what arrives uncompressed.
	if err := alter(false, kadm.AlterConfig{Name: "compression.type", Value: strp("gzip")}); err != nil {
		t.Fatal(err)
	}
	raw := newClient(t, b, kgo.ProducerBatchCompression(kgo.NoCompression()))
	rec := &kgo.Record{Topic: "ac", Value: []byte(strings.Repeat("compress me ", 20))}
	if err := raw.ProduceSync(ctx, rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	_, batches := fetchRaw(t, ctx, cl, "ac", 0, rec.Offset)
	h, recs, err := records.DecodeRecords(batches[len(batches)-lastBatchSize(t, batches):])
	if err != nil {
		t.Fatal(err)
	}
	if h.Compression() != records.CodecGzip || string(recs[0].Value) != string(rec.Value) {
		t.Fatalf("stored batch codec %v value %q", h.Compression(), recs[0].Value)
	}

	// min.insync.replicas above the single replica fails acks=all produces.
	if err := alter(false, kadm.AlterConfig{Name: "min.insync.replicas", Value: strp("2")}); err != nil {
		t.Fatal(err)
	}
	batch, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]records.Record{{Key: []byte("k"), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	preq := kmsg.NewPtrProduceRequest()
	preq.Acks, preq.TimeoutMillis = -1, 1000
	tds, err := adm.ListTopics(ctx, "ac")
	if err != nil {
		t.Fatal(err)
	}
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = "ac", tds["ac"].ID // v13 names topics by id
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	preq.Topics = append(preq.Topics, pt)
	kr, err := cl.Broker(int(b.cfg.NodeID)).Request(ctx, preq)
	if err != nil {
		t.Fatal(err)
	}
	if code := kr.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with min.insync.replicas=2: code %d", code)
	}

	// Overrides survive a restart.
	b.Close()
	b2 := startTestBroker(t, dir, nil)
	adm2, _ := newAdmin(t, b2)
	if v, src := topicConfig(t, ctx, adm2, "ac", "compression.type"); v != "gzip" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("compression.type after restart: %s (%v)", v, src)
	}
}

// lastBatchSize returns the size of the last batch in b.
func lastBatchSize(t *testing.T, b []byte) int {
	t.Helper()
	size := 0
	for len(b) > 0 {
		h, err := records.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		size = h.TotalSize()
		b = b[size:]
	}
	return size
}
