package compat

// The matrix (matrix_test.go) for the Go clients, which run in-process:
// franz-go (kgo + kadm), IBM/sarama, segmentio/kafka-go and
// confluent-kafka-go (librdkafka through cgo).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// adminTopicConfig is the topic config every admin step sets and reads back.
const adminRetentionMs = "3600000"

// ---------------------------------------------------------------- franz-go

func TestMatrixFranzGo(t *testing.T) {
	version := moduleVersion("github.com/twmb/franz-go") + " (kadm " + moduleVersion("github.com/twmb/franz-go/pkg/kadm") + ")"
	runMatrix(t, &franzClient{}, matrixCase{
		client: "franz-go (kgo, kadm)", version: version,
		codecs:   []string{"none", "gzip", "snappy", "lz4", "zstd"},
		hasAdmin: true, idempotent: true, static: true, kip848: true,
		txn: true, txnNoOffsets: true,
	})
}

type franzClient struct {
	addr      string
	k848      bool
	isolation string // "" (the client's default), "read_committed" or "read_uncommitted"
}

func (c *franzClient) use848(on bool) { c.k848 = on }

func (c *franzClient) setAddr(addr string) { c.addr = addr }

func (c *franzClient) admin(t *testing.T, topic string) {
	adm := newAdmin(t, c.addr)
	ctx := testCtx(t)
	ret := adminRetentionMs
	resp, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": &ret}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("CreateTopic: %v %v", err, resp.Err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil || len(td[topic].Partitions) != 2 {
		t.Fatalf("ListTopics %s: %v %+v", topic, err, td[topic])
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatalf("DescribeTopicConfigs %s: %v", topic, err)
	}
	found := false
	for _, cfg := range rc.Configs {
		if cfg.Key == "retention.ms" {
			found = cfg.MaybeValue() == ret
		}
	}
	if !found {
		t.Fatalf("retention.ms is not %s in %+v", ret, rc.Configs)
	}
	if _, err := adm.ListGroups(ctx); err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	dr, err := adm.DeleteTopics(ctx, topic)
	if err != nil || dr[topic].Err != nil {
		t.Fatalf("DeleteTopics: %v %+v", err, dr[topic])
	}
}

func (c *franzClient) createTopic(t *testing.T, topic string, partitions int, rf int16) {
	createTopicRF(t, newAdmin(t, c.addr), topic, int32(partitions), rf, nil)
}

var franzCodecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

func (c *franzClient) produce(t *testing.T, topic, codec string, idempotent bool, keys []string) []producedRec {
	opts := []kgo.Opt{kgo.ProducerBatchCompression(franzCodecs[codec]), kgo.RequiredAcks(kgo.AllISRAcks())}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl := newKgo(t, c.addr, opts...)
	defer cl.Close()
	rs := make([]*kgo.Record, len(keys))
	for i, k := range keys {
		r := &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(valueFor(k))}
		for _, h := range headersFor(codec, i) {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		rs[i] = r
	}
	produceSync(t, cl, rs)
	out := make([]producedRec, len(rs))
	for i, r := range rs {
		out[i] = producedRec{Key: string(r.Key), Partition: r.Partition, Offset: r.Offset}
	}
	return out
}

func (c *franzClient) consume(t *testing.T, topic, group, instanceID string, n int) []consumedRec {
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200 * time.Millisecond),
	}
	if instanceID != "" {
		opts = append(opts, kgo.InstanceID(instanceID))
	}
	if c.k848 {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if c.isolation != "" {
		opts = append(opts, kgo.FetchIsolationLevel(franzIsolation(c.isolation)))
	}
	cl := newKgo(t, c.addr, opts...)
	defer cl.Close()
	ctx := testCtx(t)
	var got []consumedRec
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the deadline", len(got), n)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			cr := consumedRec{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)}
			for _, h := range r.Headers {
				cr.Headers = append(cr.Headers, [2]string{h.Key, string(h.Value)})
			}
			got = append(got, cr)
		})
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("CommitUncommittedOffsets: %v", err)
	}
	if instanceID == "" {
		if err := cl.LeaveGroupContext(ctx); err != nil {
			t.Fatalf("LeaveGroup: %v", err)
		}
	}
	return got
}

// ---------------------------------------------------------------- sarama

func TestMatrixSarama(t *testing.T) {
	runMatrix(t, &saramaClient{}, matrixCase{
		client: "IBM/sarama", version: moduleVersion("github.com/IBM/sarama"),
		codecs:   []string{"none", "gzip", "snappy", "lz4", "zstd"},
		hasAdmin: true, idempotent: true, static: true, txn: true,
	})
}

type saramaClient struct {
	addr      string
	isolation string // "" (the client's default), "read_committed" or "read_uncommitted"
}

func (c *saramaClient) setAddr(addr string) { c.addr = addr }

func (c *saramaClient) config() *sarama.Config {
	cfg := saramaConfig(sarama.V3_0_0_0, sarama.CompressionNone, false)
	cfg.Admin.Timeout = opTimeout
	return cfg
}

func (c *saramaClient) admin(t *testing.T, topic string) {
	adm, err := sarama.NewClusterAdmin([]string{c.addr}, c.config())
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	ret := adminRetentionMs
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": &ret}}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	topics, err := adm.ListTopics()
	if err != nil || topics[topic].NumPartitions != 2 {
		t.Fatalf("ListTopics: %v %+v", err, topics[topic])
	}
	entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	found := false
	for _, e := range entries {
		found = found || (e.Name == "retention.ms" && e.Value == ret)
	}
	if !found {
		t.Fatalf("retention.ms is not %s in %+v", ret, entries)
	}
	if _, err := adm.ListConsumerGroups(); err != nil {
		t.Fatalf("ListConsumerGroups: %v", err)
	}
	if err := adm.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
}

func (c *saramaClient) createTopic(t *testing.T, topic string, partitions int, rf int16) {
	adm, err := sarama.NewClusterAdmin([]string{c.addr}, c.config())
	if err != nil {
		t.Fatalf("NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: rf}, false); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
}

var saramaCodecsByName = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
	"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
}

func (c *saramaClient) produce(t *testing.T, topic, codec string, idempotent bool, keys []string) []producedRec {
	cfg := saramaConfig(sarama.V3_0_0_0, saramaCodecsByName[codec], idempotent)
	prod, err := sarama.NewSyncProducer([]string{c.addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer: %v", err)
	}
	defer prod.Close()
	msgs := make([]*sarama.ProducerMessage, len(keys))
	for i, k := range keys {
		m := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(k), Value: sarama.StringEncoder(valueFor(k))}
		for _, h := range headersFor(codec, i) {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h[0]), Value: []byte(h[1])})
		}
		msgs[i] = m
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatalf("SendMessages: %v", err)
	}
	out := make([]producedRec, len(msgs))
	for i, m := range msgs {
		out[i] = producedRec{Key: keys[i], Partition: m.Partition, Offset: m.Offset}
	}
	return out
}

// saramaHandler collects claimed messages, marks them, and commits once n
// arrived.
type saramaHandler struct {
	n    int
	got  chan consumedRec
	done chan struct{}
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup runs when the session ends, after every ConsumeClaim returned:
// commit what was marked (auto-commit is off).
func (h *saramaHandler) Cleanup(sess sarama.ConsumerGroupSession) error {
	sess.Commit()
	return nil
}
func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			cr := consumedRec{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key), Value: string(m.Value)}
			for _, hd := range m.Headers {
				cr.Headers = append(cr.Headers, [2]string{string(hd.Key), string(hd.Value)})
			}
			sess.MarkMessage(m, "")
			select {
			case h.got <- cr:
			case <-sess.Context().Done():
				return nil
			}
		case <-sess.Context().Done():
			return nil
		}
	}
}

func (c *saramaClient) consume(t *testing.T, topic, group, instanceID string, n int) []consumedRec {
	cfg := c.config()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	if instanceID != "" {
		cfg.Consumer.Group.InstanceId = instanceID
	}
	if c.isolation != "" {
		cfg.Consumer.IsolationLevel = saramaIsolation(c.isolation)
	}
	cg, err := sarama.NewConsumerGroup([]string{c.addr}, group, cfg)
	if err != nil {
		t.Fatalf("NewConsumerGroup: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	h := &saramaHandler{n: n, got: make(chan consumedRec, n+100)}
	loopDone := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
				loopDone <- err
				return
			}
		}
		loopDone <- nil
	}()
	var got []consumedRec
	for len(got) < n {
		select {
		case r := <-h.got:
			got = append(got, r)
		case err := <-cg.Errors():
			t.Fatalf("consumer group error: %v", err)
		case err := <-loopDone:
			t.Fatalf("Consume ended after %d of %d records: %v", len(got), n, err)
		case <-ctx.Done():
			t.Fatalf("consumed %d of %d records before the deadline", len(got), n)
		}
	}
	cancel()
	if err := <-loopDone; err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if err := cg.Close(); err != nil {
		t.Fatalf("ConsumerGroup.Close: %v", err)
	}
	// Anything that arrived after the n-th record is extra.
	for {
		select {
		case r := <-h.got:
			got = append(got, r)
		default:
			return got
		}
	}
}
