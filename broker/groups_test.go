package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupConsumeCommitRestart: two group members share a topic, commit,
// the broker restarts, and a new member resumes exactly after the commits.
func TestGroupConsumeCommitRestart(t *testing.T) {
	dir := t.TempDir()
	over := map[string]string{"num.partitions": "4", "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "5"}
	b := startTestBroker(t, dir, over)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	prod := newClient(t, b, kgo.DefaultProduceTopic("g-events"), kgo.AllowAutoTopicCreation())
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 200)

	seen := make(chan string, 1000)
	member := func(b *Broker) *kgo.Client {
		return newClient(t, b, kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("g-events"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	}
	poll := func(cl *kgo.Client, stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := cl.PollFetches(pctx)
			pcancel()
			if err := cl.CommitRecords(ctx, fs.Records()...); err != nil {
				continue // a rebalance revoked them: another member gets them again
			}
			fs.EachRecord(func(r *kgo.Record) { seen <- string(r.Value) })
		}
	}
	m1, m2 := member(b), member(b)
	stop := make(chan struct{})
	done := make(chan struct{}, 2)
	for _, m := range []*kgo.Client{m1, m2} {
		go func(m *kgo.Client) { poll(m, stop); done <- struct{}{} }(m)
	}
	got := map[string]int{}
	for len(got) < 200 {
		select {
		case v := <-seen:
			got[v]++
		case <-ctx.Done():
			t.Fatalf("consumed %d of 200", len(got))
		}
	}
	close(stop)
	<-done
	<-done
	m1.Close()
	m2.Close()
	prod.Close()
	for len(seen) > 0 {
		got[<-seen]++
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := startTestBroker(t, dir, over)
	prod = newClient(t, b2, kgo.DefaultProduceTopic("g-events"))
	produce(200, 250)
	m3 := member(b2)
	for n := 0; n < 50; {
		fs := m3.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after restart consumed %d of 50", n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			var i int
			fmt.Sscan(string(r.Value), &i)
			if i < 200 {
				t.Fatalf("record %d consumed again after its offset was committed", i)
			}
			n++
		})
	}
}
