package compat

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupOffsetsSurviveKill: three group members (one leaves, one joins
// mid-stream) consume and commit; the broker is killed with SIGKILL and
// restarted; a fresh member of the group resumes exactly after the committed
// offsets: every record is consumed, and none committed before the kill is
// consumed again.
func TestGroupOffsetsSurviveKill(t *testing.T) {
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0")
	adm := newAdmin(t, b.Addr())
	createTopic(t, adm, "gk", 4, nil)
	prod := newKgo(t, b.Addr(), kgo.DefaultProduceTopic("gk"))
	const n = 400
	produceSync(t, prod, keyedRecords("gk", 0, n))

	var mu sync.Mutex
	committed := map[string]bool{} // keys of records whose offsets were committed
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(committed) }
	member := func(ctx context.Context, stop <-chan struct{}) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup("gk-group"), kgo.ConsumeTopics("gk"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			if count() >= n/2 {
				<-stop // leave half for after the restart
				return
			}
			pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			fs := cl.PollRecords(pctx, 20)
			cancel()
			rs := fs.Records()
			if len(rs) == 0 {
				continue
			}
			if err := cl.CommitRecords(ctx, rs...); err != nil {
				continue // revoked in a rebalance: another member consumes them again
			}
			mu.Lock()
			for _, r := range rs {
				committed[string(r.Key)] = true
			}
			mu.Unlock()
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	stops := []chan struct{}{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	run := func(i int) {
		wg.Add(1)
		go func() { defer wg.Done(); member(ctx, stops[i]) }()
	}
	run(0)
	run(1)
	waitFor(t, 60*time.Second, "a quarter committed", func() bool { return count() >= n/4 })
	close(stops[0]) // a member leaves
	run(2)          // another joins
	waitFor(t, 60*time.Second, "half committed", func() bool { return count() >= n/2 })
	close(stops[1])
	close(stops[2])
	wg.Wait()

	before := count()
	if before >= n {
		t.Fatalf("all %d records committed before the kill: nothing left to resume", n)
	}
	b.KillAndRestart()

	cl := newKgo(t, b.Addr(), kgo.ConsumerGroup("gk-group"), kgo.ConsumeTopics("gk"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	got := map[string]bool{}
	for len(got) < n-before {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("after the restart consumed %d of the %d uncommitted records", len(got), n-before)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if committed[string(r.Key)] {
				t.Fatalf("record %s was committed before the kill and consumed again", r.Key)
			}
			got[string(r.Key)] = true
		})
	}
	for i := 0; i < n; i++ {
		v := "key-" + strconv.Itoa(i)
		if !committed[v] && !got[v] {
			t.Errorf("record %s never consumed", v)
		}
	}
}
