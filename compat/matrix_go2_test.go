package compat

// The matrix for segmentio/kafka-go and confluent-kafka-go (librdkafka,
// statically linked through cgo).

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	segkafka "github.com/segmentio/kafka-go"
)

// ---------------------------------------------------------------- kafka-go

func TestMatrixKafkaGo(t *testing.T) {
	runMatrix(t, &kafkaGoClient{}, matrixCase{
		client: "segmentio/kafka-go", version: moduleVersion("github.com/segmentio/kafka-go"),
		codecs:   []string{"none", "gzip", "snappy", "lz4", "zstd"},
		hasAdmin: true,
	})
}

type kafkaGoClient struct{ addr string }

func (c *kafkaGoClient) setAddr(addr string) { c.addr = addr }

func (c *kafkaGoClient) client() *segkafka.Client {
	return &segkafka.Client{Addr: segkafka.TCP(c.addr), Timeout: opTimeout}
}

func (c *kafkaGoClient) admin(t *testing.T, topic string) {
	ctx := testCtx(t)
	cl := c.client()
	cr, err := cl.CreateTopics(ctx, &segkafka.CreateTopicsRequest{Topics: []segkafka.TopicConfig{{
		Topic: topic, NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: []segkafka.ConfigEntry{{ConfigName: "retention.ms", ConfigValue: adminRetentionMs}},
	}}})
	if err != nil || cr.Errors[topic] != nil {
		t.Fatalf("CreateTopics: %v %v", err, cr.Errors)
	}
	md, err := cl.Metadata(ctx, &segkafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) != 2 {
		t.Fatalf("Metadata: %v %+v", err, md)
	}
	dc, err := cl.DescribeConfigs(ctx, &segkafka.DescribeConfigsRequest{Resources: []segkafka.DescribeConfigRequestResource{{
		ResourceType: segkafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"retention.ms"},
	}}})
	if err != nil || len(dc.Resources) != 1 || dc.Resources[0].Error != nil {
		t.Fatalf("DescribeConfigs: %v %+v", err, dc)
	}
	found := false
	for _, e := range dc.Resources[0].ConfigEntries {
		found = found || (e.ConfigName == "retention.ms" && e.ConfigValue == adminRetentionMs)
	}
	if !found {
		t.Fatalf("retention.ms is not %s in %+v", adminRetentionMs, dc.Resources[0].ConfigEntries)
	}
	if lg, err := cl.ListGroups(ctx, &segkafka.ListGroupsRequest{}); err != nil || lg.Error != nil {
		t.Fatalf("ListGroups: %v %+v", err, lg)
	}
	dr, err := cl.DeleteTopics(ctx, &segkafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil || dr.Errors[topic] != nil {
		t.Fatalf("DeleteTopics: %v %v", err, dr.Errors)
	}
}

func (c *kafkaGoClient) createTopic(t *testing.T, topic string, partitions int, rf int16) {
	cr, err := c.client().CreateTopics(testCtx(t), &segkafka.CreateTopicsRequest{Topics: []segkafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: int(rf),
	}}})
	if err != nil || cr.Errors[topic] != nil {
		t.Fatalf("CreateTopics: %v %v", err, cr.Errors)
	}
}

var kafkaGoCodecs = map[string]segkafka.Compression{
	"none": 0, "gzip": segkafka.Gzip, "snappy": segkafka.Snappy, "lz4": segkafka.Lz4, "zstd": segkafka.Zstd,
}

func (c *kafkaGoClient) produce(t *testing.T, topic, codec string, idempotent bool, keys []string) []producedRec {
	if idempotent {
		t.Fatal("kafka-go has no idempotent producer")
	}
	var mu sync.Mutex
	var out []producedRec
	w := &segkafka.Writer{
		Addr: segkafka.TCP(c.addr), Topic: topic, Balancer: &segkafka.Hash{},
		RequiredAcks: segkafka.RequireAll, Compression: kafkaGoCodecs[codec],
		BatchTimeout: 5 * time.Millisecond, BatchSize: len(keys), WriteTimeout: opTimeout,
		// kafka-go learns a new leader only from its metadata, refreshed
		// every 6 s (Transport.MetadataTTL): over a leader's SIGKILL on a
		// cluster it needs more than its default 10 attempts.
		MaxAttempts: 40,
		Completion: func(msgs []segkafka.Message, err error) {
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				out = append(out, producedRec{Key: string(m.Key), Partition: int32(m.Partition), Offset: m.Offset})
			}
		},
	}
	msgs := make([]segkafka.Message, len(keys))
	for i, k := range keys {
		msgs[i] = segkafka.Message{Key: []byte(k), Value: []byte(valueFor(k))}
		for _, h := range headersFor(codec, i) {
			msgs[i].Headers = append(msgs[i].Headers, segkafka.Header{Key: h[0], Value: []byte(h[1])})
		}
	}
	if err := w.WriteMessages(testCtx(t), msgs...); err != nil {
		w.Close()
		t.Fatalf("WriteMessages: %v", err)
	}
	if err := w.Close(); err != nil { // waits for the Completion calls
		t.Fatalf("Writer.Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return out
}

func (c *kafkaGoClient) consume(t *testing.T, topic, group, instanceID string, n int) []consumedRec {
	if instanceID != "" {
		t.Fatal("kafka-go has no group.instance.id")
	}
	r := segkafka.NewReader(segkafka.ReaderConfig{
		Brokers: []string{c.addr}, GroupID: group, Topic: topic,
		StartOffset: segkafka.FirstOffset, MaxWait: 200 * time.Millisecond,
		CommitInterval:    0, // synchronous commits in CommitMessages
		HeartbeatInterval: 500 * time.Millisecond, JoinGroupBackoff: 200 * time.Millisecond,
	})
	closed := false
	defer func() {
		if !closed {
			r.Close()
		}
	}()
	ctx := testCtx(t)
	var got []consumedRec
	for len(got) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("FetchMessage after %d of %d records: %v", len(got), n, err)
		}
		cr := consumedRec{Partition: int32(m.Partition), Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)}
		for _, h := range m.Headers {
			cr.Headers = append(cr.Headers, [2]string{h.Key, string(h.Value)})
		}
		got = append(got, cr)
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatalf("CommitMessages: %v", err)
		}
	}
	closed = true
	if err := r.Close(); err != nil {
		t.Fatalf("Reader.Close: %v", err)
	}
	return got
}

// ---------------------------------------------------------------- confluent-kafka-go

func TestMatrixConfluentKafkaGo(t *testing.T) {
	runMatrix(t, &confluentGoClient{}, matrixCase{
		client: "confluent-kafka-go", version: confluentGoVersion(),
		codecs:   []string{"none", "gzip", "snappy", "lz4", "zstd"},
		hasAdmin: true, idempotent: true, static: true, kip848: true, txn: true,
	})
}

type confluentGoClient struct {
	addr      string
	k848      bool
	isolation string // "" (the client's default), "read_committed" or "read_uncommitted"
}

func (c *confluentGoClient) use848(on bool) { c.k848 = on }

func (c *confluentGoClient) setAddr(addr string) { c.addr = addr }

// logs collects librdkafka's log lines, printed when the test fails.
func (c *confluentGoClient) config(t *testing.T, extra ckafka.ConfigMap) *ckafka.ConfigMap {
	cm := ckafka.ConfigMap{
		"bootstrap.servers":      c.addr,
		"broker.address.family":  "v4",
		"client.id":              "kbroker-compat",
		"go.logs.channel.enable": true,
		"log_level":              6,
	}
	for k, v := range extra {
		cm[k] = v
	}
	return &cm
}

// drainLogs prints librdkafka's log channel into the test log on failure.
func drainLogs(t *testing.T, ch chan ckafka.LogEvent) func() {
	var mu sync.Mutex
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range ch {
			mu.Lock()
			if len(lines) < 2000 {
				lines = append(lines, fmt.Sprintf("%s %s|%s: %s", ev.Timestamp.Format("15:04:05.000"), ev.Name, ev.Tag, ev.Message))
			}
			mu.Unlock()
		}
	}()
	return func() {
		if t.Failed() {
			mu.Lock()
			t.Logf("--- librdkafka log ---\n%s", strings.Join(lines, "\n"))
			mu.Unlock()
		}
	}
}

func (c *confluentGoClient) newAdmin(t *testing.T) *ckafka.AdminClient {
	cfg := c.config(t, nil)
	delete(*cfg, "go.logs.channel.enable")
	a, err := ckafka.NewAdminClient(cfg)
	if err != nil {
		t.Fatalf("NewAdminClient: %v", err)
	}
	t.Cleanup(a.Close)
	return a
}

func (c *confluentGoClient) admin(t *testing.T, topic string) {
	a := c.newAdmin(t)
	ctx := testCtx(t)
	res, err := a.CreateTopics(ctx, []ckafka.TopicSpecification{{
		Topic: topic, NumPartitions: 2, ReplicationFactor: 1, Config: map[string]string{"retention.ms": adminRetentionMs},
	}}, ckafka.SetAdminOperationTimeout(opTimeout))
	if err != nil || len(res) != 1 || res[0].Error.Code() != ckafka.ErrNoError {
		t.Fatalf("CreateTopics: %v %v", err, res)
	}
	md, err := a.GetMetadata(&topic, false, int(opTimeout/time.Millisecond))
	if err != nil || md.Topics[topic].Error.Code() != ckafka.ErrNoError || len(md.Topics[topic].Partitions) != 2 {
		t.Fatalf("GetMetadata: %v %+v", err, md)
	}
	dc, err := a.DescribeConfigs(ctx, []ckafka.ConfigResource{{Type: ckafka.ResourceTopic, Name: topic}})
	if err != nil || len(dc) != 1 || dc[0].Error.Code() != ckafka.ErrNoError {
		t.Fatalf("DescribeConfigs: %v %v", err, dc)
	}
	if e := dc[0].Config["retention.ms"]; e.Value != adminRetentionMs {
		t.Fatalf("retention.ms = %q, want %s", e.Value, adminRetentionMs)
	}
	if _, err := a.ListConsumerGroups(ctx); err != nil {
		t.Fatalf("ListConsumerGroups: %v", err)
	}
	dr, err := a.DeleteTopics(ctx, []string{topic}, ckafka.SetAdminOperationTimeout(opTimeout))
	if err != nil || len(dr) != 1 || dr[0].Error.Code() != ckafka.ErrNoError {
		t.Fatalf("DeleteTopics: %v %v", err, dr)
	}
}

func (c *confluentGoClient) createTopic(t *testing.T, topic string, partitions int, rf int16) {
	res, err := c.newAdmin(t).CreateTopics(testCtx(t), []ckafka.TopicSpecification{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: int(rf),
	}}, ckafka.SetAdminOperationTimeout(opTimeout))
	if err != nil || len(res) != 1 || res[0].Error.Code() != ckafka.ErrNoError {
		t.Fatalf("CreateTopics: %v %v", err, res)
	}
}

func (c *confluentGoClient) produce(t *testing.T, topic, codec string, idempotent bool, keys []string) []producedRec {
	p, err := ckafka.NewProducer(c.config(t, ckafka.ConfigMap{
		"compression.type": codec, "acks": "all", "enable.idempotence": idempotent, "linger.ms": 5,
	}))
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	defer p.Close()
	defer drainLogs(t, p.Logs())()
	dr := make(chan ckafka.Event, len(keys))
	for i, k := range keys {
		m := &ckafka.Message{
			TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny},
			Key:            []byte(k), Value: []byte(valueFor(k)),
		}
		for _, h := range headersFor(codec, i) {
			m.Headers = append(m.Headers, ckafka.Header{Key: h[0], Value: []byte(h[1])})
		}
		if err := p.Produce(m, dr); err != nil {
			t.Fatalf("Produce: %v", err)
		}
	}
	var out []producedRec
	deadline := time.NewTimer(opTimeout)
	defer deadline.Stop()
	for len(out) < len(keys) {
		select {
		case ev := <-dr:
			m, ok := ev.(*ckafka.Message)
			if !ok {
				t.Fatalf("unexpected delivery event %v", ev)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("delivery of %q failed: %v", m.Key, m.TopicPartition.Error)
			}
			out = append(out, producedRec{Key: string(m.Key), Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)})
		case <-deadline.C:
			t.Fatalf("%d of %d delivery reports before the deadline", len(out), len(keys))
		}
	}
	return out
}

func (c *confluentGoClient) consume(t *testing.T, topic, group, instanceID string, n int) []consumedRec {
	extra := ckafka.ConfigMap{
		"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": false,
		"fetch.wait.max.ms": 200,
	}
	if instanceID != "" {
		extra["group.instance.id"] = instanceID
	}
	if c.k848 {
		// KIP-848: the broker assigns; session settings are the broker's.
		extra["group.protocol"] = "consumer"
	}
	if c.isolation != "" {
		extra["isolation.level"] = c.isolation
	}
	cons, err := ckafka.NewConsumer(c.config(t, extra))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			cons.Close()
		}
	}()
	defer drainLogs(t, cons.Logs())()
	if err := cons.Subscribe(topic, nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	deadline := time.Now().Add(opTimeout)
	var got []consumedRec
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("consumed %d of %d records before the deadline", len(got), n)
		}
		m, err := cons.ReadMessage(500 * time.Millisecond)
		if err != nil {
			if ke, ok := err.(ckafka.Error); ok && ke.IsTimeout() {
				continue
			}
			t.Fatalf("ReadMessage: %v", err)
		}
		cr := consumedRec{Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset), Key: string(m.Key), Value: string(m.Value)}
		for _, h := range m.Headers {
			cr.Headers = append(cr.Headers, [2]string{h.Key, string(h.Value)})
		}
		got = append(got, cr)
	}
	if _, err := cons.Commit(); err != nil { // synchronous
		t.Fatalf("Commit: %v", err)
	}
	closed = true
	if err := cons.Close(); err != nil {
		t.Fatalf("Consumer.Close: %v", err)
	}
	return got
}
