package compat

// BenchmarkSoak runs kbroker under mixed load for a long time — an
// idempotent acks=all producer, consumer-group churn, transactions that
// commit and abort, topic create/delete churn, and hostile connections on
// the side — and checks at the end that the broker's memory and file
// descriptors stayed flat and that the history checker finds nothing lost,
// duplicated or moved. It is a benchmark, not a test: it runs only when
// asked, for KBROKER_SOAK (default 15m):
//
//	go test -run '^$' -bench Soak -benchtime 1x ./compat/

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func BenchmarkSoak(b *testing.B) {
	dur := 15 * time.Minute
	if s := os.Getenv("KBROKER_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("KBROKER_SOAK=%q: %v", s, err)
		}
		dur = d
	}
	p := startBroker(b, b.TempDir())
	defer p.Stop()
	addr := p.Addr()
	adm := kadm.NewClient(newKgo(b, addr))
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "soak"); err != nil {
		b.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "soak-txn"); err != nil {
		b.Fatal(err)
	}

	hist := history.New()
	txns := &txnLedger{committed: map[string]bool{}, aborted: map[string]bool{}}
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	run := func(name string, f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	run("producer", func(ctx context.Context) error { return soakProduce(ctx, addr, hist) })
	for i := range 2 {
		run("group churn", func(ctx context.Context) error { return soakGroupChurn(ctx, addr, i) })
	}
	run("transactions", func(ctx context.Context) error { return soakTransactions(ctx, addr, txns) })
	run("topic churn", func(ctx context.Context) error { return soakTopicChurn(ctx, adm) })
	run("hostile connections", func(ctx context.Context) error { return soakHostile(ctx, addr) })

	samples := soakSample(ctx, p.cmd.Process.Pid, dur/10)
	wg.Wait()
	close(errc)
	for err := range errc {
		b.Error(err)
	}

	base, last, peak := samples.baseline(), samples.last(), samples.peak()
	b.ReportMetric(float64(base.rss)/(1<<20), "rss-base-MiB")
	b.ReportMetric(float64(last.rss)/(1<<20), "rss-end-MiB")
	b.ReportMetric(float64(peak.rss)/(1<<20), "rss-peak-MiB")
	b.ReportMetric(float64(base.fds), "fds-base")
	b.ReportMetric(float64(last.fds), "fds-end")
	b.ReportMetric(float64(hist.AckedCount()), "acked-records")
	if last.rss > 2*base.rss+128<<20 {
		b.Errorf("RSS grew from %d MiB (after warm-up) to %d MiB", base.rss>>20, last.rss>>20)
	}
	if last.fds > base.fds+64 {
		b.Errorf("descriptors grew from %d (after warm-up) to %d", base.fds, last.fds)
	}

	readCtx, readCancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer readCancel()
	done, err := untilEnds(readCtx, adm, "soak")
	if err != nil {
		b.Fatal(err)
	}
	read, err := readTopic(readCtx, addr, "soak", kgo.ReadUncommitted(), 6, done)
	if err != nil {
		b.Fatal(err)
	}
	if rep := hist.Check(read, true); rep.Err() != nil {
		b.Errorf("history of %d acked / %d read records: %v", rep.Acked, rep.Read, rep.Err())
	}
	committed, err := readTopic(readCtx, addr, "soak-txn", kgo.ReadCommitted(), 3, func(r *kgo.Record) bool { return string(r.Value) == txnEnd })
	if err != nil {
		b.Fatal(err)
	}
	if err := txns.check(committed); err != nil {
		b.Error(err)
	}
}

// soakProduce writes 1,000 records a second of 512 bytes with an idempotent
// acks=all producer, recording every acknowledgement.
func soakProduce(ctx context.Context, addr string, hist *history.Checker) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("soak"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer cl.Close()
	pad := strings.Repeat("x", 512)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var failed error
	var mu sync.Mutex
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-tick.C:
			for range 10 {
				v := hist.Next("soak")
				cl.Produce(ctx, &kgo.Record{Value: []byte(v), Headers: []kgo.RecordHeader{{Key: "pad", Value: []byte(pad)}}}, func(r *kgo.Record, err error) {
					if err != nil {
						if ctx.Err() == nil {
							mu.Lock()
							failed = err
							mu.Unlock()
						}
						return
					}
					hist.Acked(history.TP{Topic: r.Topic, Partition: r.Partition}, r.Offset, string(r.Value))
				})
			}
		}
		mu.Lock()
		err := failed
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	flushCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cl.Flush(flushCtx)
}

// soakGroupChurn starts a group member, consumes for 2–10 s, and leaves,
// over and over.
func soakGroupChurn(ctx context.Context, addr string, n int) error {
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("soak-group"), kgo.ConsumeTopics("soak"),
			kgo.ClientID(fmt.Sprintf("churn-%d", n)), kgo.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			return err
		}
		stop := time.Now().Add(time.Duration(2+rand.IntN(8)) * time.Second)
		for ctx.Err() == nil && time.Now().Before(stop) {
			pollCtx, cancel := context.WithDeadline(ctx, stop)
			fs := cl.PollFetches(pollCtx)
			cancel()
			for _, e := range fs.Errors() {
				if !errors.Is(e.Err, context.DeadlineExceeded) && !errors.Is(e.Err, context.Canceled) {
					cl.Close()
					return fmt.Errorf("poll %s/%d: %w", e.Topic, e.Partition, e.Err)
				}
			}
		}
		cl.Close()
	}
	return nil
}

// txnLedger is what the transactional writer committed and aborted.
type txnLedger struct {
	mu                 sync.Mutex
	committed, aborted map[string]bool
}

// check asserts that a read_committed read holds every committed value
// exactly once and no aborted one.
func (l *txnLedger) check(read []history.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[string]int{}
	for _, r := range read {
		seen[r.Value]++
		if l.aborted[r.Value] {
			return fmt.Errorf("aborted value %q visible to read_committed at %s@%d", r.Value, r.TP, r.Offset)
		}
	}
	for v := range l.committed {
		if seen[v] != 1 {
			return fmt.Errorf("committed value %q read %d times", v, seen[v])
		}
	}
	return nil
}

// txnEnd is the value the transactional writer commits last to every
// partition of soak-txn, so that a reader knows where the data ends.
const txnEnd = "txn-end"

// soakTransactions writes transactions of 10 records, committing two of
// every three and aborting the third; when ctx ends it commits txnEnd to
// each of the 3 partitions.
func soakTransactions(ctx context.Context, addr string, l *txnLedger) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("soak-txn"), kgo.TransactionalID("soak-txn"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	defer func() {
		endCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.BeginTransaction(); err != nil {
			return
		}
		for p := range int32(3) {
			cl.Produce(endCtx, &kgo.Record{Value: []byte(txnEnd), Partition: p}, nil)
		}
		if err := cl.Flush(endCtx); err == nil {
			cl.EndTransaction(endCtx, kgo.TryCommit)
		}
	}()
	for i := 0; ctx.Err() == nil; i++ {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		var vals []string
		for j := range 10 {
			v := fmt.Sprintf("txn-%d-%d", i, j)
			vals = append(vals, v)
			cl.Produce(ctx, &kgo.Record{Value: []byte(v), Partition: int32(j % 3)}, nil)
		}
		commit := i%3 != 2
		endCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := cl.Flush(endCtx); err != nil {
			cancel()
			return err
		}
		err := cl.EndTransaction(endCtx, kgo.TransactionEndTry(commit))
		cancel()
		if err != nil {
			return err
		}
		l.mu.Lock()
		for _, v := range vals {
			if commit {
				l.committed[v] = true
			} else {
				l.aborted[v] = true
			}
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// soakTopicChurn creates a topic, writes to it and deletes it, every second.
func soakTopicChurn(ctx context.Context, adm *kadm.Client) error {
	for i := 0; ctx.Err() == nil; i++ {
		name := "churn-" + strconv.Itoa(i)
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, name); err != nil {
			return err
		}
		if _, err := adm.DeleteTopics(ctx, name); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// soakHostile opens, every two seconds, 50 connections that declare a
// 100 MiB frame and send 8 bytes of it, and 10 that send garbage, then
// closes them after a second.
func soakHostile(ctx context.Context, addr string) error {
	for ctx.Err() == nil {
		var conns []net.Conn
		for i := range 60 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				continue // the broker may refuse connections at its limit
			}
			frame := binary.BigEndian.AppendUint32(nil, 100<<20)
			frame = append(frame, 0, 0x12, 0, 3, 0, 0, 0, 1)
			if i >= 50 {
				frame = []byte{0, 0, 0, 12, 0xff, 0xfe, 0, 9, 1, 2, 3, 4, 0, 0, 0xde, 0xad}
			}
			c.Write(frame)
			conns = append(conns, c)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
		for _, c := range conns {
			c.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// procSample is the broker's resident memory and open descriptors.
type procSample struct {
	at  time.Time
	rss int64
	fds int
}

type procSamples struct {
	mu      sync.Mutex
	warmup  time.Time
	samples []procSample
}

// soakSample samples pid every five seconds until ctx ends; samples taken
// before warmup has passed do not count as the baseline.
func soakSample(ctx context.Context, pid int, warmup time.Duration) *procSamples {
	s := &procSamples{warmup: time.Now().Add(warmup)}
	take := func() {
		ps := procSample{at: time.Now(), rss: procRSS(pid)}
		if ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd")); err == nil {
			ps.fds = len(ents)
		}
		s.mu.Lock()
		s.samples = append(s.samples, ps)
		s.mu.Unlock()
	}
	take()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			take()
			return s
		case <-t.C:
			take()
		}
	}
}

func (s *procSamples) baseline() procSample {
	for _, ps := range s.samples {
		if !ps.at.Before(s.warmup) {
			return ps
		}
	}
	return s.last()
}

func (s *procSamples) last() procSample { return s.samples[len(s.samples)-1] }

func (s *procSamples) peak() procSample {
	p := s.samples[0]
	for _, ps := range s.samples {
		if ps.rss > p.rss {
			p = ps
		}
	}
	return p
}

// procRSS reads VmRSS of pid in bytes (0 if unknown).
func procRSS(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// readTopic reads every partition of topic from the start until done
// reports it finished, and returns the records in offset order per partition.
func readTopic(ctx context.Context, addr, topic string, iso kgo.IsolationLevel, parts int32, done func(r *kgo.Record) bool) ([]history.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []history.Record
	finished := map[int32]bool{}
	for int32(len(finished)) < parts {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w (%d of %d partitions read)", topic, err, len(finished), parts)
		}
		for _, e := range fs.Errors() {
			return nil, fmt.Errorf("reading %s/%d: %w", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, history.Record{TP: history.TP{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset, Value: string(r.Value)})
			if done(r) {
				finished[r.Partition] = true
			}
		})
	}
	return out, nil
}

// untilEnds is a done function for readTopic: each partition is read up to
// its log end offset now.
func untilEnds(ctx context.Context, adm *kadm.Client, topic string) (func(r *kgo.Record) bool, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	return func(r *kgo.Record) bool { return r.Offset+1 >= want[r.Partition] }, nil
}
