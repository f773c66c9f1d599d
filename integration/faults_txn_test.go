package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration/history"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnWriter runs transactions, each writing one record to every partition
// of a topic and then committing (four in five) or aborting, and tells a
// TxnChecker how each ended. After an error it drops its client and makes
// a new one with the same transactional id, which fences the old epoch
// and aborts whatever it left open.
type txnWriter struct {
	name, topic string
	partitions  int32
	seeds       []string
	tc          *history.TxnChecker
	rng         *rand.Rand
	cl          *kgo.Client
	committed   *atomic.Int64
	// probe, when set, stamps every record (consume availability).
	probe *consumeProbe
}

func (w *txnWriter) client() (*kgo.Client, error) {
	if w.cl == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(w.seeds...), kgo.TransactionalID(w.name),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(20*time.Second),
			kgo.RequestTimeoutOverhead(5*time.Second), kgo.MetadataMinAge(100*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
		if err != nil {
			return nil, fmt.Errorf("transactional client %s: %w", w.name, err)
		}
		w.cl = cl
	}
	return w.cl, nil
}

func (w *txnWriter) reset() {
	if w.cl != nil {
		w.cl.Close()
		w.cl = nil
	}
}

// one runs one transaction; its error says why it did not commit.
func (w *txnWriter) one(ctx context.Context) error {
	cl, err := w.client()
	if err != nil {
		return err
	}
	id := w.tc.Begin(w.name)
	if err := cl.BeginTransaction(); err != nil {
		w.tc.End(id, history.Aborted)
		w.reset()
		return fmt.Errorf("begin: %w", err)
	}
	var recs []*kgo.Record
	for p := range w.partitions {
		v := w.tc.Value(id, int(p), history.TP{Topic: w.topic, Partition: p})
		r := &kgo.Record{Topic: w.topic, Partition: p, Value: []byte(v)}
		if w.probe != nil {
			w.probe.stamp(r)
		}
		recs = append(recs, r)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	perr := cl.ProduceSync(pctx, recs...).FirstErr()
	cancel()
	ectx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if perr != nil || w.rng.IntN(5) == 0 {
		// Not a commit: whatever happens next, these records never commit.
		if perr != nil {
			_ = cl.AbortBufferedRecords(ectx)
		}
		err := cl.EndTransaction(ectx, kgo.TryAbort)
		w.tc.End(id, history.Aborted)
		if err != nil || perr != nil {
			w.reset()
			return fmt.Errorf("produce: %v; abort: %v", perr, err)
		}
		return nil
	}
	if err := cl.EndTransaction(ectx, kgo.TryCommit); err != nil {
		w.tc.End(id, history.Unknown)
		w.reset()
		return fmt.Errorf("commit: %w", err)
	}
	w.tc.End(id, history.Committed)
	w.committed.Add(1)
	return nil
}

// txnProcessor is a read_process_write chain: a franz-go
// GroupTransactSession in group, reading topic read_committed, that for
// each poll holding writers' records (values of transactions of
// producers named "tw…") runs one transaction writing one record to
// every partition of topic and sending the group's offsets in it; it
// commits (four in five) or aborts, which rewinds the session to the
// committed offsets. Its own records, in the same topic, it skips. It
// tells tc what each transaction read (ReadIn, for the G1c and
// processed-twice checks), wrote and how it ended. After an error it
// drops its session and makes a new one with the same transactional id.
type txnProcessor struct {
	name, group, topic string
	partitions         int32
	seeds              []string
	tc                 *history.TxnChecker
	rng                *rand.Rand
	s                  *kgo.GroupTransactSession
	committed          *atomic.Int64
}

func (p *txnProcessor) session() (*kgo.GroupTransactSession, error) {
	if p.s == nil {
		s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(p.seeds...), kgo.TransactionalID(p.name),
			kgo.ConsumerGroup(p.group), kgo.ConsumeTopics(p.topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequireStableFetchOffsets(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(20*time.Second),
			kgo.SessionTimeout(10*time.Second), kgo.RequestTimeoutOverhead(5*time.Second),
			kgo.MetadataMinAge(100*time.Millisecond), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
		if err != nil {
			return nil, fmt.Errorf("transact session %s: %w", p.name, err)
		}
		p.s = s
	}
	return p.s, nil
}

func (p *txnProcessor) reset() {
	if p.s != nil {
		p.s.Close()
		p.s = nil
	}
}

// one polls once and, if it got writers' records, processes them in one
// transaction; its error says why that did not commit.
func (p *txnProcessor) one() error {
	s, err := p.session()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	fs := s.PollFetches(ctx)
	cancel()
	var in []string
	fs.EachRecord(func(r *kgo.Record) {
		if strings.HasPrefix(string(r.Value), "tw") {
			in = append(in, string(r.Value))
		}
	})
	if len(in) == 0 {
		return nil
	}
	if err := s.Begin(); err != nil {
		p.reset()
		return fmt.Errorf("begin: %w", err)
	}
	id := p.tc.Begin(p.name)
	p.tc.ReadIn(id, in...)
	var recs []*kgo.Record
	for part := range p.partitions {
		v := p.tc.Value(id, int(part), history.TP{Topic: p.topic, Partition: part})
		recs = append(recs, &kgo.Record{Topic: p.topic, Partition: part, Value: []byte(v)})
	}
	pctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	perr := s.ProduceSync(pctx, recs...).FirstErr()
	cancel()
	try := kgo.TryCommit
	if perr != nil || p.rng.IntN(5) == 0 {
		try = kgo.TryAbort
	}
	ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	committed, err := s.End(ectx, try)
	switch {
	case committed:
		p.tc.End(id, history.Committed)
		p.committed.Add(1)
	case err != nil && try == kgo.TryCommit:
		p.tc.End(id, history.Unknown)
	default:
		p.tc.End(id, history.Aborted)
	}
	if err != nil || perr != nil {
		p.reset()
		return fmt.Errorf("produce: %v; end (commit %v): %v", perr, try == kgo.TryCommit, err)
	}
	return nil
}

// readCommittedConsumer reads every partition of topic from the start with
// isolation read_committed and reports each record to tc as name; opts
// are added to the client's (hooks).
func readCommittedConsumer(t *testing.T, seeds []string, topic string, partitions int32, name string, tc *history.TxnChecker, stop <-chan struct{}, wg *sync.WaitGroup, opts ...kgo.Opt) {
	t.Helper()
	tailConsumer(t, seeds, topic, partitions, name, func(r *kgo.Record) {
		tc.Read(name, history.Record{TP: history.TP{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset, Value: string(r.Value)})
	}, stop, wg, append([]kgo.Opt{kgo.FetchIsolationLevel(kgo.ReadCommitted())}, opts...)...)
}

// tailConsumer reads every partition of topic from the start, assigned
// directly, and passes each record to onRecord (nil: none) until stop
// closes; opts are added to the client's. It logs the client's data-loss
// notices as name.
func tailConsumer(t *testing.T, seeds []string, topic string, partitions int32, name string, onRecord func(*kgo.Record), stop <-chan struct{}, wg *sync.WaitGroup, opts ...kgo.Opt) {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.MetadataMinAge(100 * time.Millisecond), kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cl.Close()
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(topic string, p int32, err error) {
				// The client moved its position because the broker
				// answered as if data were lost (OFFSET_OUT_OF_RANGE,
				// a truncated epoch): the checker will see where.
				if _, ok := errors.AsType[*kgo.ErrDataLoss](err); ok {
					t.Logf("%s: %s/%d: %v", name, topic, p, err)
				}
			})
			if onRecord != nil {
				fs.EachRecord(onRecord)
			}
		}
	}()
}

// TestFaultsTransactions runs two transactional writers (each transaction
// writes every partition, then commits or, one time in five, aborts), a
// read_process_write processor (txnProcessor: a group transact session
// that reads the writers' records read_committed and writes the same
// topic, sending its offsets in the transaction) and two read_committed
// consumers while the nemesis injects faults (same seed and environment
// as TestFaultsNemesis; KBROKER_FAULTS_DURATION is halved here). When all
// is healed and every transaction closed, a final read_committed read of
// the topic goes to the transaction checker, with what the consumers saw
// and what the processor read: no aborted or uncommitted read, no
// committed write lost, no transaction visible in only some partitions,
// no consumer going back in a partition, no duplicate, no input processed
// by two visible transactions, no G1c cycle.
func TestFaultsTransactions(t *testing.T) {
	if !inNetns(t) {
		return
	}
	const topic, partitions = "txns", 3
	c, seed, duration, kinds := startFaultCluster(t, topic, 2)
	seeds := addrsOf(c.Brokers)

	tc := history.NewTxnChecker()
	var committed atomic.Int64
	probe := &consumeProbe{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		readCommittedConsumer(t, seeds, topic, partitions, fmt.Sprintf("reader%d", i), tc, stop, &wg, kgo.WithHooks(probe))
	}
	var werrs sync.Map // error text → count, for the log
	for i := range 2 {
		w := &txnWriter{name: fmt.Sprintf("tw%d", i), topic: topic, partitions: partitions, seeds: seeds, tc: tc,
			rng: rand.New(rand.NewPCG(seed, uint64(i))), committed: &committed, probe: probe}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.reset()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := w.one(context.Background()); err != nil {
					n, _ := werrs.LoadOrStore(err.Error(), new(atomic.Int64))
					n.(*atomic.Int64).Add(1)
				}
			}
		}()
	}
	var processed atomic.Int64
	proc := &txnProcessor{name: "proc0", group: "txn-proc", topic: topic, partitions: partitions, seeds: seeds, tc: tc,
		rng: rand.New(rand.NewPCG(seed, 99)), committed: &processed}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer proc.reset()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := proc.one(); err != nil {
				n, _ := werrs.LoadOrStore("processor: "+err.Error(), new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		}
	}()
	progress := func() int { return int(committed.Load()) }
	waitFor(t, time.Minute, "20 committed transactions before the first fault", func() (bool, error) {
		return progress() >= 20, errNotYet
	})
	stats := runNemesis(t, c, NewNemesis(c, seed, kinds), duration, topic, workload{progress, probe})
	close(stop)
	wg.Wait()
	werrs.Range(func(k, v any) bool {
		t.Logf("transactions not committed: %d× %s", v.(*atomic.Int64).Load(), k)
		return true
	})
	waitStable(t, c.Brokers, topic)
	rep := tc.Check(readAllCommitted(t, c.Brokers, topic))
	t.Logf("transactions %v (%d committed by the processor), %d records read by consumers, %d read by visible processor transactions, %d G0 write cycles (allowed)",
		rep.Txns, processed.Load(), rep.Reads, rep.ReadIns, rep.G0)
	if err := rep.Err(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if rep.Txns[history.Committed] == 0 || rep.Reads == 0 || processed.Load() == 0 || rep.ReadIns == 0 {
		t.Fatalf("seed %d: nothing committed, read or processed", seed)
	}
	t.Logf("seed %d faults:\n%s", seed, faultsTable(stats))
}

// readAllCommitted reads every partition of topic from the start to its
// high watermark with isolation read_committed (control records are kept
// to see where the end is and then dropped), after waitStable.
func readAllCommitted(t *testing.T, bs []*BrokerProc, topic string) []history.Record {
	t.Helper()
	return readAllOpts(t, bs, topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
}
