package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProducerStateSurvivesRestart: after a clean restart (state from the
// snapshot) the broker still knows the idempotent producer, its epoch and its
// last sequence, and an open transaction still holds the LSO back.
func TestProducerStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("snap"), kgo.AllowAutoTopicCreation())
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tx := newClient(t, b, kgo.DefaultProduceTopic("snap"), kgo.TransactionalID("snap-tx"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := describeProducers(t, ctx, cl)
	cl.Close()
	tx.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	if snaps, _ := filepath.Glob(filepath.Join(dir, "snap-0", "*.snapshot")); len(snaps) != 1 {
		t.Fatalf("snapshots after a clean shutdown: %v", snaps)
	}
	b2 := startTestBroker(t, dir, nil)
	p := b2.rm.PartitionOf("snap", 0)
	if p.LastStableOffset() != 20 || p.HighWatermark() != 21 {
		t.Fatalf("after restart LSO %d HW %d, want 20 and 21 (open transaction at 20)", p.LastStableOffset(), p.HighWatermark())
	}
	after := describeProducers(t, ctx, newClient(t, b2))
	if len(after) != len(before) || len(after) != 2 {
		t.Fatalf("producers before %v, after %v", before, after)
	}
	for i := range before {
		if fmt.Sprintf("%+v", before[i]) != fmt.Sprintf("%+v", after[i]) {
			t.Errorf("producer %d: before %+v, after %+v", i, before[i], after[i])
		}
	}
}

func describeProducers(t *testing.T, ctx context.Context, cl *kgo.Client) []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "snap", Partitions: []int32{0}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	ps := resp.Topics[0].Partitions[0]
	if ps.ErrorCode != 0 {
		t.Fatalf("DescribeProducers error %d", ps.ErrorCode)
	}
	return ps.ActiveProducers
}
