package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionsFranz consumes with franz-go (sessions by default) across
// produce bursts, adding and removing partitions while consuming.
func TestFetchSessionsFranz(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), map[string]string{"num.partitions": "4"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := newClient(t, b, kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(topic string, round int) {
		t.Helper()
		for p := int32(0); p < 4; p++ {
			for i := 0; i < 5; i++ {
				r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s-%d-%d-%d", topic, round, p, i))}
				if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	produce("fs-a", 0)
	produce("fs-b", 0)

	cons := newClient(t, b, kgo.FetchMaxWait(time.Second), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"fs-a": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	next := map[string]int64{}
	consume := func(want map[string]int) {
		t.Helper()
		got := map[string]int{}
		for {
			done := true
			for k, n := range want {
				if got[k] < n {
					done = false
				}
			}
			if done {
				break
			}
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("got %v, want %v", got, want)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				k := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
				if r.Offset != next[k] {
					t.Fatalf("%s: offset %d, want %d", k, r.Offset, next[k])
				}
				next[k]++
				got[k]++
			})
		}
		for k, n := range got {
			if n != want[k] {
				t.Fatalf("%s: %d records, want %d (got %v)", k, n, want[k], got)
			}
		}
	}
	consume(map[string]int{"fs-a/0": 5, "fs-a/1": 5})
	if b.rm.FetchSessionCount() == 0 {
		t.Fatal("franz-go consumed without a fetch session")
	}
	for round := 1; round <= 3; round++ {
		produce("fs-a", round)
		consume(map[string]int{"fs-a/0": 5, "fs-a/1": 5})
	}
	// Add partitions of another topic and the rest of the first.
	cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{
		"fs-a": {2: kgo.NewOffset().AtStart()},
		"fs-b": {0: kgo.NewOffset().AtStart(), 3: kgo.NewOffset().AtStart()},
	})
	consume(map[string]int{"fs-a/2": 20, "fs-b/0": 5, "fs-b/3": 5})
	produce("fs-b", 1)
	produce("fs-a", 4)
	consume(map[string]int{"fs-a/0": 5, "fs-a/1": 5, "fs-a/2": 5, "fs-b/0": 5, "fs-b/3": 5})
	// Remove some; records produced to them are no longer returned.
	cons.RemoveConsumePartitions(map[string][]int32{"fs-a": {0, 1}, "fs-b": {0}})
	produce("fs-a", 5)
	produce("fs-b", 2)
	consume(map[string]int{"fs-a/2": 5, "fs-b/3": 5})
	if b.rm.FetchSessionCount() == 0 {
		t.Fatal("no fetch session at the end")
	}
}

// TestFetchSessionsRaw drives session epochs and errors with raw requests,
// including a parked incremental fetch woken by an append.
func TestFetchSessionsRaw(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), map[string]string{"num.partitions": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("fs-raw"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	topicID := b.rm.TopicByName("fs-raw").Meta.ID

	fetch := func(id, epoch int32, wait int32, parts map[int32]int64, forget []int32) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SessionID, req.SessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = id, epoch, wait, 1, 1<<20
		if len(parts) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = "fs-raw", topicID
			for p, off := range parts {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		if len(forget) > 0 {
			req.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{{Topic: "fs-raw", TopicID: topicID, Partitions: forget}}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	parts := func(resp *kmsg.FetchResponse) map[int32]int {
		out := map[int32]int{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out[rp.Partition] = len(rp.RecordBatches)
			}
		}
		return out
	}

	full := fetch(0, 0, 0, map[int32]int64{0: 0, 1: 0}, nil)
	id := full.SessionID
	if full.ErrorCode != 0 || id == 0 || len(parts(full)) != 2 || parts(full)[0] == 0 {
		t.Fatalf("full: %+v", full)
	}
	// Caught up: empty incremental answer after MaxWait.
	inc := fetch(id, 1, 10, map[int32]int64{0: 1}, nil)
	if inc.ErrorCode != 0 || inc.SessionID != id || len(parts(inc)) != 0 {
		t.Fatalf("idle incremental: %+v", parts(inc))
	}
	// Parked incremental fetch woken by an append to a partition it does not list.
	done := make(chan *kmsg.FetchResponse, 1)
	go func() { done <- fetch(id, 2, 20000, nil, nil) }()
	// The produce may land before the fetch parks; either way the fetch
	// must answer with partition 1's record well before MaxWait.
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	woken := <-done
	if time.Since(start) > 10*time.Second || len(parts(woken)) != 1 || parts(woken)[1] == 0 {
		t.Fatalf("parked incremental: %v after %v", parts(woken), time.Since(start))
	}
	// Wrong epoch, unknown id.
	if r := fetch(id, 2, 0, nil, nil); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("old epoch: %+v", r)
	}
	if r := fetch(id+1, 1, 0, nil, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("unknown id: %+v", r)
	}
	// Forget partition 0, then an unknown topic id is reported.
	if r := fetch(id, 3, 0, map[int32]int64{1: 1}, []int32{0}); r.ErrorCode != 0 || len(parts(r)) != 0 {
		t.Fatalf("forget: %+v", parts(r))
	}
	if n := b.rm.FetchSessionPartitions(id); n != 1 {
		t.Fatalf("session has %d partitions, want 1", n)
	}
	// FINAL closes it.
	if r := fetch(id, -1, 0, map[int32]int64{1: 0}, nil); r.SessionID != 0 || len(parts(r)) != 1 {
		t.Fatalf("final: %+v", r)
	}
	if r := fetch(id, 5, 0, nil, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: %+v", r)
	}
	// v13+: a partition of an unknown topic id stays in the session with UNKNOWN_TOPIC_ID.
	topicID = [16]byte{9, 9}
	r := fetch(0, 0, 0, map[int32]int64{0: 0}, nil)
	if r.SessionID == 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %+v", r)
	}
	if r = fetch(r.SessionID, 1, 0, nil, nil); len(r.Topics) != 1 || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id, incremental: %+v", r)
	}
	b.Close()
	if b.rm.FetchSessionCount() != 0 {
		t.Fatal("sessions kept after Close")
	}
}
