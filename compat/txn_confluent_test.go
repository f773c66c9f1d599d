package compat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTxnConfluentGoConsumeTransformProduce is the consume-transform-produce
// chain of TestTxnKafkaJSConsumeTransformProduce with confluent-kafka-go
// (librdkafka) in-process, written as librdkafka's transactions example
// does it: a read_committed consumer without auto-commit, a transactional
// producer, SendOffsetsToTransaction with the consumer's group metadata,
// and on an abortable error AbortTransaction and a rewind to the committed
// offsets. The first transformer leaves a transaction open (records
// flushed, offsets sent) and is closed; the second, with the same
// transactional id, fences it and runs through a broker SIGKILL and
// restart between one transaction's writes and its commit. The read_committed output must hold every input exactly once.
func TestTxnConfluentGoConsumeTransformProduce(t *testing.T) {
	_, lib := ckafka.LibraryVersion()
	recordCap(t, "confluent-kafka-go", moduleVersion("github.com/confluentinc/confluent-kafka-go/v2")+" (librdkafka "+lib+")", capTxn)
	b := startBroker(t, t.TempDir(), matrixOverrides...)
	adm := newAdmin(t, b.Addr())
	const (
		in, out, group, txnID = "ck-eos-in", "ck-eos-out", "ck-eos-group", "ck-eos-transformer"
		parts                 = 3
		n                     = 600
	)
	createTopic(t, adm, in, parts, nil)
	createTopic(t, adm, out, parts, nil)
	produceInput := func(from, to int) {
		cl := newKgo(t, b.Addr(), kgo.DefaultProduceTopic(in), kgo.ProducerLinger(0))
		defer cl.Close()
		for i := from; i < to; i += 10 {
			var rs []*kgo.Record
			for j := i; j < min(i+10, to); j++ {
				rs = append(rs, &kgo.Record{Key: []byte("k" + strconv.Itoa(j)), Value: []byte(strconv.Itoa(j))})
			}
			produceSync(t, cl, rs)
		}
	}
	produceInput(0, n/2)
	c := &confluentGoClient{addr: b.Addr()}
	start := time.Now()

	// 1. Transform a third, then abandon an open transaction.
	tr1 := newConfluentTransformer(t, c, in, out, group, txnID)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for tr1.transformed < n/3 {
		if err := tr1.step(ctx, false); err != nil {
			t.Fatalf("first transformer: %v", err)
		}
	}
	var openN int
	for openN == 0 {
		var err error
		if openN, err = tr1.openAndAbandon(ctx); err != nil {
			t.Fatalf("first transformer: %v", err)
		}
	}
	tr1.close()
	t.Logf("first transformer: %d records committed, %d left in an open transaction after %v", tr1.transformed, openN, time.Since(start).Round(time.Millisecond))

	// 2. Same transactional id: fences the first; the broker is killed
	// and restarted inside one of its transactions, then more input arrives.
	tr2 := newConfluentTransformer(t, c, in, out, group, txnID)
	defer tr2.close()
	killed := false
	for !killed {
		if tr2.transformed >= 30 && tr2.beforeCommit == nil {
			// Kill the broker inside a transaction: records and offsets
			// written, commit not yet asked for.
			tr2.beforeCommit = func(records int) {
				b.KillAndRestart()
				killed = true
				t.Logf("broker killed and restarted inside a transaction of %d records (%d committed before)", records, tr2.transformed)
			}
		}
		if err := tr2.step(ctx, true); err != nil {
			t.Fatalf("second transformer: %v", err)
		}
	}
	produceInput(n/2, n)
	ends := endOffsets(t, adm, in)
	fetchCtx := testCtx(t)
	done := func() bool {
		committed, err := adm.FetchOffsets(fetchCtx, group)
		if err != nil {
			return false
		}
		for p, end := range ends {
			o, ok := committed.Lookup(in, p)
			if !ok || o.Err != nil || o.At != end {
				return false
			}
		}
		return true
	}
	for !done() {
		if err := tr2.step(ctx, true); err != nil {
			t.Fatalf("second transformer (%d records committed, %d aborts): %v", tr2.transformed, tr2.aborts, err)
		}
	}
	tr2.close()
	t.Logf("input transformed %v after the start; second transformer committed %d records, aborted %d transactions",
		time.Since(start).Round(time.Millisecond), tr2.transformed, tr2.aborts)

	checkExactlyOnceOutput(t, b.Addr(), out, parts, n, openN)
	b.Alive()
}

// confluentTransformer is one consume-transform-produce instance.
type confluentTransformer struct {
	t           *testing.T
	out         string
	cons        *ckafka.Consumer
	prod        *ckafka.Producer
	transformed int // records in committed transactions
	aborts      int
	// beforeCommit, when set, runs once between a transaction's flushed
	// records and offsets and its CommitTransaction.
	beforeCommit func(records int)
	closed       bool
	flushLogs    []func()
}

func newConfluentTransformer(t *testing.T, c *confluentGoClient, in, out, group, txnID string) *confluentTransformer {
	t.Helper()
	tr := &confluentTransformer{t: t, out: out}
	cons, err := ckafka.NewConsumer(c.config(t, ckafka.ConfigMap{
		"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": false,
		"isolation.level": "read_committed", "fetch.wait.max.ms": 100,
		"session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
	}))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	tr.cons = cons
	tr.flushLogs = append(tr.flushLogs, drainLogs(t, cons.Logs()))
	prod, err := ckafka.NewProducer(c.config(t, ckafka.ConfigMap{
		"transactional.id": txnID, "transaction.timeout.ms": 30000, "linger.ms": 5,
		"go.delivery.reports": false,
	}))
	if err != nil {
		cons.Close()
		t.Fatalf("NewProducer: %v", err)
	}
	tr.prod = prod
	tr.flushLogs = append(tr.flushLogs, drainLogs(t, prod.Logs()))
	t.Cleanup(tr.close)
	// InitTransactions fences an earlier producer with this id and
	// aborts its open transaction.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := prod.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	if err := cons.Subscribe(in, nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return tr
}

func (tr *confluentTransformer) close() {
	if tr.closed {
		return
	}
	tr.closed = true
	tr.cons.Close()
	tr.prod.Close()
	for _, f := range tr.flushLogs {
		f()
	}
}

// poll reads up to 25 messages, returning early when none arrives for
// 100ms.
func (tr *confluentTransformer) poll() ([]*ckafka.Message, error) {
	var ms []*ckafka.Message
	for len(ms) < 25 {
		m, err := tr.cons.ReadMessage(100 * time.Millisecond)
		if err != nil {
			var ke ckafka.Error
			if errors.As(err, &ke) && (ke.IsTimeout() || ke.IsRetriable() || ke.Code() == ckafka.ErrTransport || ke.Code() == ckafka.ErrAllBrokersDown) {
				break
			}
			return nil, fmt.Errorf("ReadMessage: %w", err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// begin starts a transaction with copies of ms and their offsets.
func (tr *confluentTransformer) begin(ctx context.Context, ms []*ckafka.Message) error {
	if err := tr.prod.BeginTransaction(); err != nil {
		return fmt.Errorf("BeginTransaction: %w", err)
	}
	next := map[int32]ckafka.TopicPartition{}
	for _, m := range ms {
		if err := tr.prod.Produce(&ckafka.Message{
			TopicPartition: ckafka.TopicPartition{Topic: &tr.out, Partition: ckafka.PartitionAny},
			Key:            m.Key, Value: m.Value,
		}, nil); err != nil {
			return fmt.Errorf("Produce: %w", err)
		}
		tp := m.TopicPartition
		tp.Offset++
		next[tp.Partition] = tp
	}
	var offsets []ckafka.TopicPartition
	for _, tp := range next {
		offsets = append(offsets, tp)
	}
	md, err := tr.cons.GetConsumerGroupMetadata()
	if err != nil {
		return fmt.Errorf("GetConsumerGroupMetadata: %w", err)
	}
	if err := tr.prod.SendOffsetsToTransaction(ctx, offsets, md); err != nil {
		return fmt.Errorf("SendOffsetsToTransaction: %w", err)
	}
	return nil
}

// step transforms one batch in one transaction. With recover set, an
// abortable error aborts the transaction and rewinds the consumer to the
// committed offsets, and a retriable commit error retries the commit, as
// librdkafka documents; otherwise every error is returned.
func (tr *confluentTransformer) step(ctx context.Context, recover bool) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ms, err := tr.poll()
	if err != nil || len(ms) == 0 {
		return err
	}
	err = tr.begin(ctx, ms)
	if err == nil && tr.beforeCommit != nil {
		if left := tr.prod.Flush(int(opTimeout / time.Millisecond)); left != 0 {
			return fmt.Errorf("%d records not flushed", left)
		}
		tr.beforeCommit(len(ms))
		tr.beforeCommit = nil
	}
	for err == nil {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = tr.prod.CommitTransaction(cctx)
		cancel()
		if err == nil {
			tr.transformed += len(ms)
			return nil
		}
		var ke ckafka.Error
		if !recover || !errors.As(err, &ke) || !ke.IsRetriable() || ke.TxnRequiresAbort() {
			err = fmt.Errorf("CommitTransaction: %w", err)
			break
		}
		err = nil // retriable: commit again
	}
	var ke ckafka.Error
	if !recover || !errors.As(err, &ke) || !ke.TxnRequiresAbort() {
		return err
	}
	tr.t.Logf("transaction of %d records aborted: %v", len(ms), err)
	tr.aborts++
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		aerr := tr.prod.AbortTransaction(actx)
		cancel()
		if aerr == nil {
			break
		}
		if !errors.As(aerr, &ke) || !ke.IsRetriable() || ctx.Err() != nil {
			return fmt.Errorf("AbortTransaction: %w (after %v)", aerr, err)
		}
	}
	return tr.rewind()
}

// rewind seeks every assigned partition to its committed offset.
func (tr *confluentTransformer) rewind() error {
	asg, err := tr.cons.Assignment()
	if err != nil {
		return fmt.Errorf("Assignment: %w", err)
	}
	committed, err := tr.cons.Committed(asg, 10000)
	if err != nil {
		return fmt.Errorf("Committed: %w", err)
	}
	for _, tp := range committed {
		if tp.Offset < 0 {
			tp.Offset = ckafka.OffsetBeginning
		}
		if err := tr.cons.Seek(tp, -1); err != nil {
			return fmt.Errorf("Seek %v: %w", tp, err)
		}
	}
	return nil
}

// openAndAbandon begins a transaction with the next batch, flushes its
// records to the broker and sends its offsets, and returns how many
// records it holds (0 if none arrived), leaving it open.
func (tr *confluentTransformer) openAndAbandon(ctx context.Context) (int, error) {
	ms, err := tr.poll()
	if err != nil || len(ms) == 0 {
		return 0, err
	}
	if err := tr.begin(ctx, ms); err != nil {
		return 0, err
	}
	if left := tr.prod.Flush(int(opTimeout / time.Millisecond)); left != 0 {
		return 0, fmt.Errorf("%d records not flushed", left)
	}
	return len(ms), nil
}
