package compat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnConsumeTransformProduceExactlyOnce runs a consume-transform-produce
// chain with franz-go's GroupTransactSession, kills the broker (SIGKILL) in
// the middle, then abandons the transforming client inside an open
// transaction and lets a new one with the same transactional id fence it.
// The output read with read_committed must hold every input exactly once.
func TestTxnConsumeTransformProduceExactlyOnce(t *testing.T) {
	recordCap(t, "franz-go (kgo, kadm)", moduleVersion("github.com/twmb/franz-go")+" (kadm "+moduleVersion("github.com/twmb/franz-go/pkg/kadm")+")", capTxn)
	b := startBroker(t, t.TempDir(), "group.initial.rebalance.delay.ms=0", "num.partitions=3")
	const n = 600
	adm := newAdmin(t, b.Addr())
	createTopic(t, adm, "eos-in", 3, nil)
	createTopic(t, adm, "eos-out", 3, nil)
	prod := newKgo(t, b.Addr(), kgo.DefaultProduceTopic("eos-in"))
	var in []*kgo.Record
	for i := 0; i < n; i++ {
		in = append(in, &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte(strconv.Itoa(i))})
	}
	produceSync(t, prod, in)
	prod.Close()

	var transformed atomic.Int64
	transformer := func(ctx context.Context, stopAfter int64) error {
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(b.Addr()),
			kgo.TransactionalID("eos-transformer"),
			kgo.ConsumerGroup("eos-group"),
			kgo.ConsumeTopics("eos-in"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.DefaultProduceTopic("eos-out"),
			kgo.TransactionTimeout(20*time.Second),
			kgo.FetchMaxWait(200*time.Millisecond),
		)
		if err != nil {
			return err
		}
		defer sess.Close()
		for ctx.Err() == nil {
			fs := sess.PollRecords(ctx, 50)
			if fs.Empty() {
				continue
			}
			if err := sess.Begin(); err != nil {
				return fmt.Errorf("begin: %w", err)
			}
			for _, r := range fs.Records() {
				sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, nil)
			}
			if stopAfter > 0 && transformed.Load() >= stopAfter {
				// Abandon the open transaction: the next session fences it.
				sess.Client().Close()
				return nil
			}
			committed, err := sess.End(ctx, kgo.TryCommit)
			if err != nil {
				continue // aborted (broker restart, rebalance): the records come again
			}
			if committed {
				transformed.Add(int64(len(fs.Records())))
			}
		}
		return nil
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- transformer(ctx, n/2) }()
	waitFor(t, 60*time.Second, "a third of the input transformed", func() bool { return transformed.Load() >= n/3 })
	b.KillAndRestart()
	if err := <-errc; err != nil {
		t.Fatalf("first transformer: %v", err)
	}

	go func() { errc <- transformer(ctx, 0) }()
	out := consumeN(t, b.Addr(), "eos-out", 3, n, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("second transformer: %v", err)
	}
	seen := map[string]int{}
	for _, r := range out {
		seen[string(r.Value)]++
	}
	for i := 0; i < n; i++ {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("input %d appears %d times in the committed output", i, c)
		}
	}
	if t.Failed() {
		t.Logf("broker output:\n%s", b.Output())
	}
}

// TestTxnAbortedInvisibleToReadCommitted: an aborted transaction's records
// are dropped by read_committed consumers and seen by read_uncommitted ones;
// a committed one is seen by both.
func TestTxnAbortedInvisibleToReadCommitted(t *testing.T) {
	b := startBroker(t, t.TempDir())
	adm := newAdmin(t, b.Addr())
	createTopic(t, adm, "vis", 1, nil)
	cl := newKgo(t, b.Addr(), kgo.TransactionalID("vis-producer"), kgo.DefaultProduceTopic("vis"))
	ctx := testCtx(t)
	run := func(prefix string, count int, commit kgo.TransactionEndTry) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < count; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(prefix + strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end transaction: %v", err)
		}
	}
	run("aborted-", 10, kgo.TryAbort)
	run("committed-", 5, kgo.TryCommit)

	committed := consumeN(t, b.Addr(), "vis", 1, 5, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for _, r := range committed {
		if string(r.Value[:len("committed-")]) != "committed-" {
			t.Errorf("read_committed consumer saw %q", r.Value)
		}
	}
	all := consumeN(t, b.Addr(), "vis", 1, 15, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	aborted := 0
	for _, r := range all {
		if len(r.Value) > 8 && string(r.Value[:8]) == "aborted-" {
			aborted++
		}
	}
	if aborted != 10 {
		t.Errorf("read_uncommitted consumer saw %d aborted records, want 10", aborted)
	}
	// Latest offset under read_committed is the LSO: all 17 offsets (15 records, 2 markers) are stable.
	ends, err := adm.ListEndOffsets(ctx, "vis")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("vis", 0); o.Offset != 17 {
		t.Errorf("end offset %d, want 17 (15 records and 2 markers)", o.Offset)
	}
}

// TestIdempotentProducerConnectionCut produces through a proxy that cuts
// connections in the middle of broker responses. The idempotent producer
// retries; every record must be in the log exactly once.
func TestIdempotentProducerConnectionCut(t *testing.T) {
	px := newCuttingProxy(t)
	b := startBroker(t, t.TempDir(), "advertised.listeners=PLAINTEXT://"+px.addr())
	px.setTarget(b.Addr())
	px.passThrough.Store(true) // set-up through the advertised address, uncut
	adm := newAdmin(t, b.Addr())
	createTopic(t, adm, "cut", 2, nil)
	adm.Close()
	px.passThrough.Store(false)

	cl := newKgo(t, px.addr(), kgo.DefaultProduceTopic("cut"), kgo.RecordRetries(1000), kgo.ProducerLinger(0))
	ctx := testCtx(t)
	const n = 800
	var failed atomic.Int64
	for i := 0; i < n; i += 4 {
		// Four records in flight at a time: many small requests, so many answers are cut.
		var wg sync.WaitGroup
		for j := i; j < i+4; j++ {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(j % 7)), Value: []byte(strconv.Itoa(j))}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
				wg.Done()
			})
		}
		wg.Wait()
	}
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d records failed", f)
	}
	if px.cuts.Load() == 0 {
		t.Fatal("the proxy never cut a connection: the test proved nothing")
	}
	px.passThrough.Store(true) // read back through the same advertised address, uncut
	got := consumeN(t, b.Addr(), "cut", 2, n)
	seen := map[string]int{}
	for _, r := range got {
		seen[string(r.Value)]++
	}
	for i := 0; i < n; i++ {
		if c := seen[strconv.Itoa(i)]; c != 1 {
			t.Errorf("record %d written %d times", i, c)
		}
	}
	checkDense(t, byPartition(got))
	t.Logf("%d connections cut", px.cuts.Load())
}

// cuttingProxy forwards loopback TCP to a target and cuts every connection
// after it has carried cutAfter bytes back to the client: past the
// handshake and a few produce answers, usually in the middle of one.
type cuttingProxy struct {
	ln     net.Listener
	target atomic.Value // string
	cuts   atomic.Int64
	// passThrough stops the cutting for connections made after it is set.
	passThrough atomic.Bool
	wg          sync.WaitGroup
}

// cutAfter is how many response bytes a proxied connection carries.
const cutAfter = 1000

func newCuttingProxy(t *testing.T) *cuttingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &cuttingProxy{ln: ln}
	px.wg.Add(1)
	go px.serve()
	t.Cleanup(func() { ln.Close(); px.wg.Wait() })
	return px
}

func (px *cuttingProxy) addr() string          { return px.ln.Addr().String() }
func (px *cuttingProxy) setTarget(addr string) { px.target.Store(addr) }

func (px *cuttingProxy) serve() {
	defer px.wg.Done()
	for {
		c, err := px.ln.Accept()
		if err != nil {
			return
		}
		px.wg.Add(1)
		go func() {
			defer px.wg.Done()
			px.pipe(c)
		}()
	}
}

func (px *cuttingProxy) pipe(c net.Conn) {
	defer c.Close()
	target, _ := px.target.Load().(string)
	if target == "" {
		return
	}
	s, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer s.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(s, c); done <- struct{}{} }()
	go func() {
		if px.passThrough.Load() {
			io.Copy(c, s)
		} else if n, _ := io.CopyN(c, s, cutAfter); n == cutAfter {
			px.cuts.Add(1)
		}
		done <- struct{}{}
	}()
	<-done
}
