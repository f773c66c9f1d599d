package compat

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzAdminTopics covers CreateTopics, Metadata, DescribeCluster and
// DeleteTopics through kadm, including Kafka's error codes for bad requests.
func TestFranzAdminTopics(t *testing.T) {
	b := startBroker(t, t.TempDir(), "broker.id=7")
	adm := newAdmin(t, b.Addr())
	ctx := testCtx(t)

	createTopic(t, adm, "admin-a", 3, nil)
	md, err := adm.Metadata(ctx, "admin-a")
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].NodeID != 7 || md.Brokers[0].Port != int32(b.port) {
		t.Fatalf("Metadata brokers = %+v, want one broker, id 7, port %d", md.Brokers, b.port)
	}
	td, ok := md.Topics["admin-a"]
	if !ok || td.Err != nil || len(td.Partitions) != 3 {
		t.Fatalf("Metadata topic admin-a = %+v, want 3 partitions and no error", td)
	}
	for p, pd := range td.Partitions {
		if pd.Err != nil || pd.Leader != 7 || len(pd.Replicas) != 1 || len(pd.ISR) != 1 {
			t.Fatalf("partition %d = %+v, want leader 7, one replica in ISR", p, pd)
		}
	}

	createErr := func(partitions int32, rf int16, topic string) error {
		resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
		if resp.Err != nil {
			return resp.Err // kadm returns the topic's error as err too
		}
		return err
	}
	if err := createErr(1, 1, "admin-a"); !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating admin-a twice: %v, want TOPIC_ALREADY_EXISTS", err)
	}
	for _, bad := range []string{"bad/name", "has space", "..", ".", strings.Repeat("x", 250)} {
		if err := createErr(1, 1, bad); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("creating %.20q: %v, want INVALID_TOPIC_EXCEPTION", bad, err)
		}
	}
	if err := createErr(0, 1, "zero-partitions"); !errors.Is(err, kerr.InvalidPartitions) {
		t.Errorf("creating with 0 partitions: %v, want INVALID_PARTITIONS", err)
	}
	if err := createErr(1, 3, "three-replicas"); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Errorf("creating with replication factor 3 on one broker: %v, want INVALID_REPLICATION_FACTOR", err)
	}

	// -1 partitions means num.partitions.
	createTopic(t, adm, "admin-default", -1, nil)
	if md, err := adm.Metadata(ctx, "admin-default"); err != nil || len(md.Topics["admin-default"].Partitions) != 1 {
		t.Errorf("topic created with -1 partitions: %v, %d partitions, want 1 (num.partitions)", err, len(md.Topics["admin-default"].Partitions))
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dcResp, err := dc.RequestWith(ctx, newKgo(t, b.Addr()))
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	if dcResp.ErrorCode != 0 || dcResp.ClusterID == "" || len(dcResp.Brokers) != 1 || dcResp.Brokers[0].NodeID != 7 || dcResp.ControllerID != 7 {
		t.Errorf("DescribeCluster = error %d, cluster %q, controller %d, brokers %+v; want no error, a cluster id, controller 7, one broker 7",
			dcResp.ErrorCode, dcResp.ClusterID, dcResp.ControllerID, dcResp.Brokers)
	}

	del, err := adm.DeleteTopics(ctx, "admin-a")
	if err != nil || del["admin-a"].Err != nil {
		t.Fatalf("DeleteTopics admin-a: %v / %+v", err, del["admin-a"])
	}
	waitFor(t, 10*time.Second, "admin-a to disappear from metadata", func() bool {
		md, err := adm.Metadata(ctx, "admin-a")
		return err == nil && errors.Is(md.Topics["admin-a"].Err, kerr.UnknownTopicOrPartition)
	})
	del, err = adm.DeleteTopics(ctx, "never-existed")
	if err != nil || !errors.Is(del["never-existed"].Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("deleting an unknown topic: %v / %v, want UNKNOWN_TOPIC_OR_PARTITION", err, del["never-existed"].Err)
	}
	// A deleted topic can be created again, empty. A fresh client, since
	// the old one may still cache the old topic's three partitions.
	createTopic(t, adm, "admin-a", 2, nil)
	ends, err := newAdmin(t, b.Addr()).ListEndOffsets(ctx, "admin-a")
	if err != nil || ends.Error() != nil {
		t.Fatalf("ListEndOffsets on re-created topic: %v / %v", err, ends.Error())
	}
	ends.Each(func(lo kadm.ListedOffset) {
		if lo.Offset != 0 {
			t.Errorf("re-created topic partition %d end offset %d, want 0", lo.Partition, lo.Offset)
		}
	})
}

// waitFor polls cond every 50ms until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}

// TestFranzAutoCreate checks that producing to an unknown topic creates it
// with num.partitions partitions when auto.create.topics.enable is on.
func TestFranzAutoCreate(t *testing.T) {
	b := startBroker(t, t.TempDir(), "num.partitions=3")
	prod := newKgo(t, b.Addr(), kgo.AllowAutoTopicCreation())
	rs := keyedRecords("auto-created", 0, 50)
	produceSync(t, prod, rs)
	md, err := newAdmin(t, b.Addr()).Metadata(testCtx(t), "auto-created")
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if n := len(md.Topics["auto-created"].Partitions); n != 3 {
		t.Fatalf("auto-created topic has %d partitions, want 3 (num.partitions)", n)
	}
	compareByPartition(t, rs, consumeN(t, b.Addr(), "auto-created", 3, 50))
}

// TestFranzAutoCreateDisabled checks UNKNOWN_TOPIC_OR_PARTITION for produce
// and metadata when auto.create.topics.enable=false.
func TestFranzAutoCreateDisabled(t *testing.T) {
	b := startBroker(t, t.TempDir(), "auto.create.topics.enable=false")
	cl := newKgo(t, b.Addr(), kgo.AllowAutoTopicCreation(), kgo.UnknownTopicRetries(1))
	ctx := testCtx(t)

	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("no-such-topic")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("Metadata for unknown topic with auto-create off = %+v, want error 3", resp.Topics)
	}

	err = produceBounded(t, cl, &kgo.Record{Topic: "no-such-topic", Value: []byte("x")})
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	md, err := newAdmin(t, b.Addr()).ListTopics(ctx)
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if md.Has("no-such-topic") {
		t.Fatalf("topic was created although auto.create.topics.enable=false")
	}
}

// TestFranzListOffsets checks earliest, latest and by-timestamp offsets.
func TestFranzListOffsets(t *testing.T) {
	b := startBroker(t, t.TempDir())
	const topic = "offsets"
	adm := newAdmin(t, b.Addr())
	createTopic(t, adm, topic, 1, nil)
	ctx := testCtx(t)

	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	var rs []*kgo.Record
	for i := 0; i < 10; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	produceSync(t, newKgo(t, b.Addr()), rs)

	check := func(name string, lo kadm.ListedOffsets, err error, wantOffset, wantTS int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, ok := lo.Lookup(topic, 0)
		if !ok || got.Err != nil || got.Offset != wantOffset || (wantTS != 0 && got.Timestamp != wantTS) {
			t.Errorf("%s = %+v, want offset %d timestamp %d", name, got, wantOffset, wantTS)
		}
	}
	lo, err := adm.ListStartOffsets(ctx, topic)
	check("earliest", lo, err, 0, 0)
	lo, err = adm.ListEndOffsets(ctx, topic)
	check("latest", lo, err, 10, 0)
	ms := base.UnixMilli()
	lo, err = adm.ListOffsetsAfterMilli(ctx, ms+3500, topic)
	check("after base+3.5s", lo, err, 4, ms+4000)
	lo, err = adm.ListOffsetsAfterMilli(ctx, ms-1, topic)
	check("before everything", lo, err, 0, ms)
	lo, err = adm.ListOffsetsAfterMilli(ctx, ms+9000, topic)
	check("exactly the last", lo, err, 9, ms+9000)

	// Raw: a timestamp after every record answers offset -1, timestamp -1.
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = 0
	rp.Timestamp = ms + 60_000
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, newKgo(t, b.Addr()))
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets response shape = %+v", resp.Topics)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.Offset != -1 || p.Timestamp != -1 {
		t.Errorf("ListOffsets after the last timestamp = error %d offset %d ts %d, want 0, -1, -1", p.ErrorCode, p.Offset, p.Timestamp)
	}
	unknown, err := adm.ListEndOffsets(ctx, "no-such-topic")
	if err != nil {
		t.Fatalf("ListEndOffsets unknown topic: %v", err)
	}
	if lo, ok := unknown.Lookup("no-such-topic", -1); !ok || !errors.Is(lo.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("ListEndOffsets unknown topic = %+v, want UNKNOWN_TOPIC_OR_PARTITION", unknown)
	}
}

// TestFranzDescribeConfigs checks topic and broker configs, their values and
// their sources, through kadm.
func TestFranzDescribeConfigs(t *testing.T) {
	b := startBroker(t, t.TempDir(), "broker.id=3", "num.partitions=2", "log.segment.bytes=2097152")
	adm := newAdmin(t, b.Addr())
	ctx := testCtx(t)
	retention := "3600000"
	createTopic(t, adm, "configured", 1, map[string]*string{"retention.ms": &retention})

	rcs, err := adm.DescribeTopicConfigs(ctx, "configured")
	if err != nil {
		t.Fatalf("DescribeTopicConfigs: %v", err)
	}
	rc, err := rcs.On("configured", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("DescribeTopicConfigs configured: %v / %v", err, rc.Err)
	}
	expectConfigs(t, "topic", rc, map[string]configWant{
		"retention.ms":        {"3600000", kmsg.ConfigSourceDynamicTopicConfig},
		"segment.bytes":       {"2097152", kmsg.ConfigSourceStaticBrokerConfig},
		"cleanup.policy":      {"delete", kmsg.ConfigSourceDefaultConfig},
		"max.message.bytes":   {"1048588", kmsg.ConfigSourceDefaultConfig},
		"min.insync.replicas": {"1", kmsg.ConfigSourceDefaultConfig},
		"compression.type":    {"producer", kmsg.ConfigSourceDefaultConfig},
	})

	rcs, err = adm.DescribeBrokerConfigs(ctx, 3)
	if err != nil {
		t.Fatalf("DescribeBrokerConfigs: %v", err)
	}
	if len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("DescribeBrokerConfigs 3 = %+v", rcs)
	}
	expectConfigs(t, "broker", rcs[0], map[string]configWant{
		"num.partitions":            {"2", kmsg.ConfigSourceStaticBrokerConfig},
		"log.segment.bytes":         {"2097152", kmsg.ConfigSourceStaticBrokerConfig},
		"message.max.bytes":         {"1048588", kmsg.ConfigSourceDefaultConfig},
		"auto.create.topics.enable": {"true", kmsg.ConfigSourceDefaultConfig},
	})

	rcs, err = adm.DescribeTopicConfigs(ctx, "no-such-topic")
	if err == nil {
		rc, _ := rcs.On("no-such-topic", nil)
		err = rc.Err
	}
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("DescribeTopicConfigs unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

// configWant is an expected config value and source.
type configWant struct {
	value  string
	source kmsg.ConfigSource
}

// expectConfigs reports every config in want that is missing or differs.
func expectConfigs(t testing.TB, what string, rc kadm.ResourceConfig, want map[string]configWant) {
	t.Helper()
	have := make(map[string]kadm.Config, len(rc.Configs))
	for _, c := range rc.Configs {
		have[c.Key] = c
	}
	for k, w := range want {
		c, ok := have[k]
		switch {
		case !ok:
			t.Errorf("%s config %q missing (got %d configs)", what, k, len(rc.Configs))
		case c.MaybeValue() != w.value:
			t.Errorf("%s config %q = %q, want %q", what, k, c.MaybeValue(), w.value)
		case c.Source != w.source:
			t.Errorf("%s config %q source = %v, want %v", what, k, c.Source, w.source)
		}
	}
}
