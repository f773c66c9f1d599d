package compat

// The transactional side of the rolling migration (issue 24): a
// transactional producer writes through the whole roll while the
// transaction coordinators and the partition leaders move between Kafka
// 3.9 and kbroker, and a read_committed read at the end must show every
// committed transaction whole and no aborted one.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/integration/history"
)

// rollingTxnTopic is written only in transactions, one record per
// partition each, with rollingTopic's replica assignment.
const rollingTxnTopic = "rolling-txn"

// rollingTxnWriter runs transactions until stopped: each writes one
// record to every partition of rollingTxnTopic, then commits, except one
// in four that aborts on purpose. A failed transaction is aborted (or, if
// its commit's answer was an error, left of unknown outcome) and the
// client is replaced by one with the same transactional id, which fences
// the old epoch.
type rollingTxnWriter struct {
	seeds  func() []string // where to bootstrap a new client
	log    *syncBuffer     // every client's log, at info level
	tc     *history.TxnChecker
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	errs []error
	cl   *kgo.Client // the current client, closed by a cleanup that finds run stuck
}

// startRollingTxnWriter starts the writer; it is stopped at test cleanup
// if the test did not stop it.
func startRollingTxnWriter(t *testing.T, seeds func() []string) *rollingTxnWriter {
	t.Helper()
	w := &rollingTxnWriter{seeds: seeds, log: &syncBuffer{}, tc: history.NewTxnChecker(), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx)
	t.Cleanup(w.halt)
	keepRollingOutput(t, "txn-writer", w.log.String) // runs before halt
	return w
}

func (w *rollingTxnWriter) newClient() (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(w.seeds()...), kgo.TransactionalID("rolling-txn-writer"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(30*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.WithLogger(kgo.BasicLogger(w.log, kgo.LogLevelInfo, func() string { return time.Now().UTC().Format("15:04:05.000 ") })))
}

// run writes transactions, about one every 20 ms, until ctx ends.
func (w *rollingTxnWriter) run(ctx context.Context) {
	defer close(w.done)
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for n := 0; ctx.Err() == nil; n++ {
		if cl == nil {
			var err error
			if cl, err = w.newClient(); err != nil {
				w.fail(err)
				return
			}
			w.mu.Lock()
			w.cl = cl
			w.mu.Unlock()
		}
		if err := w.one(ctx, cl, n%4 == 3); err != nil {
			fmt.Fprintf(w.log, "%s writer: %v\n", time.Now().UTC().Format("15:04:05.000"), err)
			if ctx.Err() == nil {
				w.fail(err)
			}
			cl.Close()
			cl = nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// one runs one transaction, aborting it if abort, and records how it
// ended.
func (w *rollingTxnWriter) one(ctx context.Context, cl *kgo.Client, abort bool) error {
	id := w.tc.Begin("tw")
	if err := cl.BeginTransaction(); err != nil {
		w.tc.End(id, history.Aborted)
		return fmt.Errorf("%s: begin: %w", id, err)
	}
	var recs []*kgo.Record
	for p := range int32(rollingPartitions) {
		v := w.tc.Value(id, int(p), history.TP{Topic: rollingTxnTopic, Partition: p})
		recs = append(recs, &kgo.Record{Topic: rollingTxnTopic, Partition: p, Value: []byte(v)})
	}
	perr := cl.ProduceSync(ctx, recs...).FirstErr()
	ectx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if perr != nil || abort {
		if perr != nil {
			_ = cl.AbortBufferedRecords(ectx)
		}
		err := cl.EndTransaction(ectx, kgo.TryAbort)
		w.tc.End(id, history.Aborted)
		if perr != nil || err != nil {
			var errs []error
			if perr != nil {
				errs = append(errs, fmt.Errorf("produce: %w", perr))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("abort: %w", err))
			}
			return fmt.Errorf("%s: %w", id, errors.Join(errs...))
		}
		return nil
	}
	if err := cl.EndTransaction(ectx, kgo.TryCommit); err != nil {
		w.tc.End(id, history.Unknown)
		return fmt.Errorf("%s: commit: %w", id, err)
	}
	w.tc.End(id, history.Committed)
	return nil
}

func (w *rollingTxnWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

// committed is the number of transactions committed so far.
func (w *rollingTxnWriter) committed() int { return w.tc.Counts()[history.Committed] }

// waitProgress waits until n more transactions committed.
func (w *rollingTxnWriter) waitProgress(t *testing.T, what string, n int) {
	t.Helper()
	from := w.committed()
	waitFor(t, kafkaStartTimeout, fmt.Sprintf("%d more committed transactions %s", n, what), func() bool {
		return w.committed() >= from+n
	})
}

// halt stops run and waits for it; closing the current client fails
// what is in flight, so a stuck transaction cannot keep run blocked.
func (w *rollingTxnWriter) halt() {
	w.cancel()
	w.mu.Lock()
	if w.cl != nil {
		w.cl.Close()
	}
	w.mu.Unlock()
	<-w.done
}

// stop ends the writer and checks the transactions against a
// read_committed read of rollingTxnTopic through the broker at addr: no
// aborted or open record visible, every committed transaction whole, none
// twice. Errors that Kafka calls retriable (a coordinator or leader moving)
// are logged; any other fails the test.
func (w *rollingTxnWriter) stop(t *testing.T, addr string) {
	t.Helper()
	w.halt()
	w.mu.Lock()
	errs := w.errs
	w.mu.Unlock()
	for _, err := range errs {
		if retriableTxnErr(err) {
			t.Logf("transactional producer (retriable): %v", err)
		} else {
			t.Errorf("transactional producer: %v", err)
		}
	}
	final := readCommittedAll(t, addr, rollingTxnTopic)
	rep := w.tc.Check(final)
	t.Logf("transactions through the roll: %v, %d committed records read", rep.Txns, len(final))
	if err := rep.Err(); err != nil {
		t.Errorf("transactions: %v", err)
	}
	if rep.Txns[history.Committed] == 0 || rep.Txns[history.Aborted] == 0 {
		t.Errorf("the writer committed %d and aborted %d transactions; want both", rep.Txns[history.Committed], rep.Txns[history.Aborted])
	}
}

// retriableTxnErr reports whether err is one a client should expect while
// brokers restart: a Kafka error marked retriable, a timeout, or a
// network error (a restarted broker listens on a new port, so a client
// that still dials the old address is refused until it refreshes its
// metadata).
func retriableTxnErr(err error) bool {
	var ke *kerr.Error
	var ne net.Error
	return errors.As(err, &ke) && ke.Retriable || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, kerr.ConcurrentTransactions) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
		errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		// franz-go's (unexported) error for a coordinator or leader id that
		// the Metadata it just got does not list: Kafka lists live brokers
		// only, so one that is restarting is missing for a moment.
		strings.Contains(err.Error(), "unknown broker")
}

// readCommittedAll reads topic from the start to its end offsets with
// isolation read_committed through the broker at addr, in offset order
// per partition.
func readCommittedAll(t *testing.T, addr, topic string) []history.Record {
	t.Helper()
	adm := newAdmin(t, addr)
	var ends map[int32]int64
	waitFor(t, opTimeout, "the last stable offsets of "+topic, func() bool {
		lso, err := adm.ListEndOffsets(testCtx(t), topic)
		if err == nil {
			err = lso.Error()
		}
		if err != nil {
			return false
		}
		ends = map[int32]int64{}
		lso.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
		return true
	})
	offs := map[int32]kgo.Offset{}
	for p := range ends {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	defer cl.Close()
	var out []history.Record
	at := map[int32]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := func() bool {
		for p, end := range ends {
			if at[p] < end {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			at[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			out = append(out, history.Record{TP: history.TP{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset, Value: string(r.Value)})
		})
	}
	if !done() {
		t.Fatalf("reading %s read_committed through %s: at %v, ends %v", topic, addr, at, ends)
	}
	return out
}

// TestRetriableTxnErr pins which writer errors the rolling migration
// only logs: a refused dial, as franz-go wraps it, is one; a fenced epoch
// is not.
func TestRetriableTxnErr(t *testing.T) {
	_, dial := net.Dial("tcp", "127.0.0.1:1")
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("tw.22: commit: %w", fmt.Errorf("unable to dial: %w", dial)), true},
		{fmt.Errorf("tw.1: commit: %w", kerr.NotCoordinator), true},
		{fmt.Errorf("tw.1: commit: %w", context.DeadlineExceeded), true},
		{errors.New("tw.495: produce: unknown broker; abort: <nil>"), true},
		{fmt.Errorf("tw.424: %w", errors.Join(fmt.Errorf("produce: %w", kerr.CoordinatorNotAvailable))), true},
		{fmt.Errorf("tw.1: commit: %w", kerr.InvalidProducerEpoch), false},
		{fmt.Errorf("tw.1: commit: %w", kerr.ProducerFenced), false},
	} {
		if got := retriableTxnErr(c.err); got != c.want {
			t.Errorf("retriableTxnErr(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
