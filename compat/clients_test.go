package compat

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// opTimeout bounds any single client operation in these tests.
const opTimeout = 30 * time.Second

// testCtx returns a context that ends after opTimeout or at test cleanup.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newKgo returns a franz-go client seeded with addr, closed at cleanup.
func newKgo(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		t.Fatalf("kgo.NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newAdmin returns a kadm client on its own franz-go client. kadm answers
// Metadata from the client's cache for up to MetadataMinAge (5s by default);
// tests that delete and re-create topics need fresh answers.
func newAdmin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newKgo(t, addr, kgo.MetadataMinAge(10*time.Millisecond)))
}

// createTopic creates topic with the given partition count (replication
// factor 1) and fails the test on any error.
func createTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	createTopicRF(t, adm, topic, partitions, 1, configs)
}

// createTopicRF is createTopic with replication factor rf.
func createTopicRF(t testing.TB, adm *kadm.Client, topic string, partitions int32, rf int16, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(testCtx(t), partitions, rf, configs, topic)
	if err != nil {
		t.Fatalf("CreateTopic %q: %v", topic, err)
	}
	if resp.Err != nil {
		t.Fatalf("CreateTopic %q: %v (%s)", topic, resp.Err, resp.ErrMessage)
	}
}

// consumeN reads exactly want records from every partition of topic
// (partitions 0..partitions-1) starting at offset 0, without a group. It
// fails the test if fewer arrive before the deadline or if more arrive.
func consumeN(t testing.TB, addr, topic string, partitions int32, want int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	offsets := make(map[int32]kgo.Offset, partitions)
	for p := int32(0); p < partitions; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	all := append([]kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}, opts...)
	cl := newKgo(t, addr, all...)
	defer cl.Close()
	ctx := testCtx(t)
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records from %q before the deadline", len(got), want, topic)
		}
		for _, fe := range fs.Errors() {
			t.Errorf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
		}
		if t.Failed() {
			t.FailNow()
		}
		got = append(got, fs.Records()...)
	}
	if len(got) != want {
		t.Fatalf("consumed %d records from %q, want exactly %d", len(got), topic, want)
	}
	return got
}

// byPartition groups records by partition, keeping their order.
func byPartition(rs []*kgo.Record) map[int32][]*kgo.Record {
	m := make(map[int32][]*kgo.Record)
	for _, r := range rs {
		m[r.Partition] = append(m[r.Partition], r)
	}
	return m
}

// checkDense fails the test unless each partition's records carry offsets
// 0, 1, 2, ... in order.
func checkDense(t testing.TB, parts map[int32][]*kgo.Record) {
	t.Helper()
	for p, rs := range parts {
		for i, r := range rs {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record #%d has offset %d, want %d (offsets must be dense from 0)", p, i, r.Offset, i)
			}
		}
	}
}

// sameRecord describes the first difference in key, value, headers,
// partition or offset between want and got, or returns "".
func sameRecord(want, got *kgo.Record) string {
	switch {
	case want.Partition != got.Partition:
		return fmt.Sprintf("partition %d, want %d", got.Partition, want.Partition)
	case want.Offset != got.Offset:
		return fmt.Sprintf("offset %d, want %d", got.Offset, want.Offset)
	case !bytes.Equal(want.Key, got.Key):
		return fmt.Sprintf("key %q, want %q", got.Key, want.Key)
	case !bytes.Equal(want.Value, got.Value):
		return fmt.Sprintf("value %.60q, want %.60q", got.Value, want.Value)
	case len(want.Headers) != len(got.Headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range want.Headers {
		w, g := want.Headers[i], got.Headers[i]
		if w.Key != g.Key || !bytes.Equal(w.Value, g.Value) {
			return fmt.Sprintf("header #%d %q=%q, want %q=%q", i, g.Key, g.Value, w.Key, w.Value)
		}
	}
	return ""
}

// compareByPartition checks that consumed holds exactly the produced records
// (which carry the partition and offset their produce returned), in order
// within each partition.
func compareByPartition(t testing.TB, produced, consumed []*kgo.Record) {
	t.Helper()
	want, got := byPartition(produced), byPartition(consumed)
	for p, ws := range want {
		gs := got[p]
		if len(gs) != len(ws) {
			t.Fatalf("partition %d: consumed %d records, produced %d", p, len(gs), len(ws))
		}
		for i := range ws {
			if diff := sameRecord(ws[i], gs[i]); diff != "" {
				t.Fatalf("partition %d record #%d: %s", p, i, diff)
			}
		}
	}
	for p, gs := range got {
		if _, ok := want[p]; !ok {
			t.Fatalf("partition %d: consumed %d records, produced none", p, len(gs))
		}
	}
}

// produceSync produces rs with cl and fails the test on any error. Each
// record gets its partition and offset filled in.
func produceSync(t testing.TB, cl *kgo.Client, rs []*kgo.Record) {
	t.Helper()
	if err := produceBounded(t, cl, rs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// produceBounded is cl.ProduceSync with a hard deadline. franz-go keeps
// retrying a record already sent by an idempotent producer even after its
// context ends, so a broker that never answers would hang the test; after
// opTimeout the test fails instead, and the client's Close at cleanup fails
// the outstanding records, which ends the waiting goroutine.
func produceBounded(t testing.TB, cl *kgo.Client, rs ...*kgo.Record) error {
	t.Helper()
	ctx := testCtx(t)
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, rs...).FirstErr() }()
	timer := time.NewTimer(opTimeout + 5*time.Second)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		t.Fatalf("produce of %d records not answered within %v", len(rs), opTimeout)
		return nil
	}
}

// keyedRecords makes n records for topic numbered from first, each with a
// key, a compressible value and two headers.
func keyedRecords(topic string, first, n int) []*kgo.Record {
	rs := make([]*kgo.Record, 0, n)
	for i := first; i < first+n; i++ {
		rs = append(rs, &kgo.Record{
			Topic: topic,
			Key:   fmt.Appendf(nil, "key-%d", i),
			Value: fmt.Appendf(nil, "value-%06d-%s", i, bytes.Repeat([]byte{'a' + byte(i%26)}, i%200)),
			Headers: []kgo.RecordHeader{
				{Key: "seq", Value: fmt.Appendf(nil, "%d", i)},
				{Key: "origin", Value: []byte("compat")},
			},
		})
	}
	return rs
}
