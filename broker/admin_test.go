package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newAdmin(t *testing.T, b *Broker) (*kadm.Client, *kgo.Client) {
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	return kadm.NewClient(cl), cl
}

func mustCreateTopic(t *testing.T, ctx context.Context, adm *kadm.Client, name string, parts int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(ctx, parts, 1, configs, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

func produceN(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32, n int, value func(i int) *kgo.Record) {
	t.Helper()
	for i := 0; i < n; i++ {
		r := value(i)
		r.Topic, r.Partition = topic, partition
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d to %s/%d: %v", i, topic, partition, err)
		}
	}
}

func strp(s string) *string { return &s }

// topicConfig returns a topic config's value and source as DescribeConfigs reports them.
func topicConfig(t *testing.T, ctx context.Context, adm *kadm.Client, topic, key string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return *c.Value, c.Source
		}
	}
	t.Fatalf("config %s not described", key)
	return "", 0
}

// fetchRaw fetches one partition from offset with a raw request and returns
// the partition's error and record bytes.
func fetchRaw(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partition int32, offset int64) (int16, []byte) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxWaitMillis = 0
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	if tp := topicByNameForTest(cl, topic); tp != nil {
		rt.TopicID = *tp
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.RecordBatches
}

// topicByNameForTest looks a topic's id up with a Metadata request.
func topicByNameForTest(cl *kgo.Client, topic string) *[16]byte {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = &topic
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil || len(resp.Topics) != 1 {
		return nil
	}
	return &resp.Topics[0].TopicID
}

func TestAdminDeleteRecords(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "dr", 1, nil)
	produceN(t, ctx, cl, "dr", 0, 10, func(i int) *kgo.Record { return &kgo.Record{Value: []byte{byte(i)}} })

	del := func(at int64) kadm.DeleteRecordsResponse {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "dr", Partition: 0, At: at})
		resp, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := resp.Lookup("dr", 0)
		return r
	}
	if r := del(4); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete to 4: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 4 {
		t.Fatalf("start offset %d, want 4", o.Offset)
	}
	if code, _ := fetchRaw(t, ctx, cl, "dr", 0, 2); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below log start: code %d", code)
	}
	if r := del(2); r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete below start: %+v", r)
	}
	if r := del(11); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete beyond HW: %+v", r)
	}
	if r := del(-1); r.Err != nil || r.LowWatermark != 10 {
		t.Fatalf("delete to HW: %+v", r)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "nope", Partition: 0, At: 1})
	resp, err := adm.DeleteRecords(ctx, os)
	if r, _ := resp.Lookup("nope", 0); !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %+v %v", r, err)
	}

	// The log start offset survives a restart (log-start-offset-checkpoint).
	b.Close()
	b2 := startTestBroker(t, dir, nil)
	adm2, _ := newAdmin(t, b2)
	starts, err = adm2.ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 10 {
		t.Fatalf("start offset after restart %d, want 10", o.Offset)
	}
}

func TestAdminCreatePartitions(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "cp", 1, nil)

	resp, err := adm.ValidateCreatePartitions(ctx, 2, "cp")
	if err != nil || resp["cp"].Err != nil {
		t.Fatalf("validate: %v %v", err, resp)
	}
	if n := len(b.rm.TopicByName("cp").Partitions); n != 1 {
		t.Fatalf("validate-only created partitions: %d", n)
	}
	resp, err = adm.UpdatePartitions(ctx, 3, "cp")
	if err != nil || resp["cp"].Err != nil {
		t.Fatalf("grow: %v %v", err, resp)
	}
	for _, n := range []int{3, 2} {
		resp, err = adm.UpdatePartitions(ctx, n, "cp")
		if err != nil || !errors.Is(resp["cp"].Err, kerr.InvalidPartitions) {
			t.Fatalf("set to %d: %v %v", n, err, resp)
		}
	}
	resp, err = adm.CreatePartitions(ctx, 1, "missing")
	if err != nil || !errors.Is(resp["missing"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("missing topic: %v %v", err, resp)
	}
	cl.ForceMetadataRefresh()
	produceN(t, ctx, cl, "cp", 2, 5, func(i int) *kgo.Record { return &kgo.Record{Value: []byte("v")} })

	b.Close()
	b2 := startTestBroker(t, dir, nil)
	adm2, _ := newAdmin(t, b2)
	md, err := adm2.Metadata(ctx, "cp")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(md.Topics["cp"].Partitions); n != 3 {
		t.Fatalf("%d partitions after restart", n)
	}
	ends, err := adm2.ListEndOffsets(ctx, "cp")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("cp", 2); o.Offset != 5 {
		t.Fatalf("partition 2 end offset %d", o.Offset)
	}
}

func TestAdminDescribeLogDirs(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "ld", 2, nil)
	produceN(t, ctx, cl, "ld", 1, 10, func(i int) *kgo.Record { return &kgo.Record{Value: make([]byte, 100)} })
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[b.cfg.NodeID]
	if len(dirs) != 1 {
		t.Fatalf("%d log dirs", len(dirs))
	}
	p1, ok := dirs.LookupPartition("ld", 1)
	p0, ok0 := dirs.LookupPartition("ld", 0)
	if !ok || !ok0 || p1.Size < 1000 || p0.Size != 0 {
		t.Fatalf("partition sizes %+v %+v", p1, p0)
	}
	for _, d := range dirs {
		if d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Fatalf("volume sizes %d %d", d.TotalBytes, d.UsableBytes)
		}
	}
	some, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"ld": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := some[b.cfg.NodeID].LookupPartition("ld", 1); ok {
		t.Fatal("partition 1 described though not requested")
	}
}

func TestAdminDescribeTopicPartitionsPaged(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	for _, n := range []string{"dtp-a", "dtp-b", "dtp-c"} {
		mustCreateTopic(t, ctx, adm, n, 3, nil)
	}
	var got []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("too many pages")
		}
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, n := range []string{"dtp-c", "dtp-a", "dtp-b", "dtp-missing"} {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = n
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, rt := range resp.Topics {
			if *rt.Topic == "dtp-missing" {
				if rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
					t.Fatalf("missing topic code %d", rt.ErrorCode)
				}
				got = append(got, "missing")
				continue
			}
			for _, p := range rt.Partitions {
				if p.LeaderID != b.cfg.NodeID || len(p.ISR) != 1 {
					t.Fatalf("partition %+v", p)
				}
				got = append(got, fmt.Sprintf("%s/%d", *rt.Topic, p.Partition))
			}
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := "dtp-a/0 dtp-a/1 dtp-a/2 dtp-b/0 dtp-b/1 dtp-b/2 dtp-c/0 dtp-c/1 dtp-c/2 missing"
	if strings.Join(got, " ") != want {
		t.Fatalf("pages gave %v", got)
	}
}

func TestAdminElectLeaders(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	adm, _ := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "el", 2, nil)
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"el": {0: {}, 1: {}, 7: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]error{0: kerr.ElectionNotNeeded, 1: kerr.ElectionNotNeeded, 7: kerr.UnknownTopicOrPartition} {
		if r := res["el"][p]; !errors.Is(r.Err, want) {
			t.Fatalf("partition %d: %v, want %v", p, r.Err, want)
		}
	}
	res, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("all partitions: %v %v", res, err)
	}
}

func TestAdminOffsetForLeaderEpoch(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "ofle", 1, nil)
	adm = kadm.NewClient(newClient(t, b)) // a client that has not cached metadata yet
	var req kadm.OffsetForLeaderEpochRequest
	req.Add("ofle", 0, 0)
	resp, err := adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp["ofle"][0]; r.Err != nil || r.EndOffset != 0 || r.LeaderEpoch != 0 {
		t.Fatalf("empty log: %+v", r)
	}
	produceN(t, ctx, cl, "ofle", 0, 7, func(i int) *kgo.Record { return &kgo.Record{Value: []byte("v")} })
	resp, err = adm.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp["ofle"][0]; r.Err != nil || r.EndOffset != 7 || r.LeaderEpoch != 0 {
		t.Fatalf("after produce: %+v", r)
	}
	raw := kmsg.NewPtrOffsetForLeaderEpochRequest()
	raw.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "ofle"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, 3, 0
	rt.Partitions = append(rt.Partitions, rp)
	rp.Partition, rp.CurrentLeaderEpoch = 9, -1
	rt.Partitions = append(rt.Partitions, rp)
	raw.Topics = append(raw.Topics, rt)
	kr, err := cl.Broker(int(b.cfg.NodeID)).Request(ctx, raw) // direct: no client-side sharding or retries
	if err != nil {
		t.Fatal(err)
	}
	ps := kr.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions
	if ps[0].ErrorCode != kerr.UnknownLeaderEpoch.Code || ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("codes %d %d", ps[0].ErrorCode, ps[1].ErrorCode)
	}
}

// TestRetentionAndCompactionBoundDisk produces steadily into a topic with
// retention.ms=1000 and into a compacted one, with the broker's background
// tasks on short intervals, and checks both stay small.
func TestRetentionAndCompactionBoundDisk(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"log.retention.check.interval.ms": "50",
		"log.cleaner.backoff.ms":          "50",
	})
	ctx := testCtx(t)
	adm, cl := newAdmin(t, b)
	mustCreateTopic(t, ctx, adm, "ret", 1, map[string]*string{
		"retention.ms": strp("1000"), "segment.ms": strp("100"), "segment.bytes": strp("65536"),
	})
	mustCreateTopic(t, ctx, adm, "cmp", 1, map[string]*string{
		"cleanup.policy": strp("compact"), "segment.ms": strp("100"), "segment.bytes": strp("65536"),
		"min.cleanable.dirty.ratio": strp("0.01"),
	})
	const keys = 20
	value := make([]byte, 500)
	written := int64(0)
	last := map[string]string{}
	start := time.Now()
	for i := 0; time.Since(start) < 2500*time.Millisecond || i < 2000; i++ {
		k := fmt.Sprintf("key-%02d", i%keys)
		v := fmt.Sprintf("%d-%s", i, value)
		last[k] = v
		rs := []*kgo.Record{
			{Topic: "ret", Value: []byte(v)},
			{Topic: "cmp", Key: []byte(k), Value: []byte(v)},
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		written += int64(len(v))
		if i%50 == 0 {
			time.Sleep(10 * time.Millisecond) // pace the producer so segments roll by time
		}
	}
	ret, cmp := b.rm.PartitionOf("ret", 0).Log, b.rm.PartitionOf("cmp", 0).Log
	deadline := time.Now().Add(20 * time.Second)
	for {
		// One more record each so the active segments roll past old data.
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ret", Value: []byte("tick")}, &kgo.Record{Topic: "cmp", Key: []byte("tick"), Value: []byte("tick")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if ret.Size() < 64<<10 && cmp.Size() < 96<<10 && ret.LogStartOffset() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("disk use not bounded: wrote %d bytes per topic; retention topic holds %d (start %d), compacted topic %d",
				written, ret.Size(), ret.LogStartOffset(), cmp.Size())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The compacted topic still has every key's latest value.
	cons := newClient(t, b, kgo.ConsumeTopics("cmp"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	hwm := cmp.LogEndOffset()
	for seen := int64(-1); seen < hwm-1; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming compacted topic: %v (at %d of %d)", ctx.Err(), seen, hwm)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Key)] = string(r.Value)
			seen = r.Offset
		})
	}
	for k, v := range last {
		if got[k] != v {
			t.Fatalf("key %s: latest value lost (got %.20q)", k, got[k])
		}
	}
	// The retention topic's log start moved and was checkpointed.
	starts, err := storage.ReadOffsetCheckpoint(b.rm.Dirs()[0].Path() + "/" + storage.LogStartOffsetCheckpointFile)
	if err != nil {
		t.Fatal(err)
	}
	if starts[storage.TopicPartition{Topic: "ret", Partition: 0}] == 0 {
		t.Fatalf("log start offset not checkpointed: %v", starts)
	}
}
