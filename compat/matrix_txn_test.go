package compat

// The matrix's transactions step (matrix_test.go, matrixCase.txn) and each
// client's transactional producer:
//
//   - franz-go: a client with kgo.TransactionalID, BeginTransaction and
//     EndTransaction (it sends offsets only through GroupTransactSession,
//     which TestTxnConsumeTransformProduceExactlyOnce covers);
//   - sarama: a SyncProducer with Producer.Transaction.ID, BeginTxn,
//     AddOffsetsToTxn, CommitTxn/AbortTxn;
//   - confluent-kafka-go and confluent-kafka python: InitTransactions,
//     BeginTransaction, SendOffsetsToTransaction with a consumer's group
//     metadata, CommitTransaction/AbortTransaction;
//   - kafkajs: producer.transaction(), send, sendOffsets, commit/abort.
//
// One producer (one transactional id) runs two transactions on a new
// topic: the first sends its records and the offset 7 for the matrix
// topic's partition 0 to a group and commits; the second sends other
// records and the offset 11 and aborts. Then franz-go writes one plain
// record to every partition, after the aborted transaction. The client's
// own consumer, read_committed, must then get exactly the committed
// records and those plain ones (a consumer that delivered aborted records
// or stopped at the open or aborted transaction would fail), and
// read_uncommitted every record; the group's committed offset must be 7.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// txnSpec is one transaction of a transact call.
type txnSpec struct {
	Keys   []string
	Commit bool  // commit, else abort
	Offset int64 // offset to send for the offsets topic's partition 0; -1 for none
}

// txnClient is a matrix client with a transactional producer.
type txnClient interface {
	// transact runs txns in order with one transactional producer
	// (transactional id txnID, acks=all): each produces its keys to topic
	// (value valueFor(key), headers headersFor(txnCodec, i), no
	// compression), sends {offsetsTopic partition 0: Offset} for group
	// through the client's send-offsets call when Offset >= 0, and
	// commits or aborts. It returns what was acknowledged, for every
	// transaction.
	transact(t *testing.T, topic, txnID, group, offsetsTopic string, txns []txnSpec) []producedRec
	// setIsolation makes later consume calls read with isolation level
	// "read_committed" or "read_uncommitted" ("" for the client's default).
	setIsolation(level string)
}

// txnCodec is the codec label of transactional records' headers.
const txnCodec = "txn"

// Offsets the step's transactions send for the group.
const (
	txnCommittedOffset = 7
	txnAbortedOffset   = 11
)

// runTxnStep is the transactions step of runMatrix for client c.
func runTxnStep(t *testing.T, mc matrixClient, c matrixCase, addr, base, offsetsTopic string) {
	tc, ok := mc.(txnClient)
	if !ok {
		t.Fatalf("%T does not implement txnClient", mc)
	}
	topic := base + "-txn"
	group := base + "-txn-offsets"
	mc.createTopic(t, topic, matrixPartitions, 1)

	commitKeys := matrixKeys("tc", txnCodec, 30)
	abortKeys := matrixKeys("ta", txnCodec, 30)
	offC, offA := int64(txnCommittedOffset), int64(txnAbortedOffset)
	if c.txnNoOffsets {
		offC, offA = -1, -1
	}
	start := time.Now()
	acks := tc.transact(t, topic, base+"-txn-id", group, offsetsTopic, []txnSpec{
		{Keys: commitKeys, Commit: true, Offset: offC},
		{Keys: abortKeys, Commit: false, Offset: offA},
	})
	t.Logf("two transactions in %v", time.Since(start).Round(time.Millisecond))

	// Split the acknowledgements by transaction.
	isCommit := map[string]bool{}
	for _, k := range commitKeys {
		isCommit[k] = true
	}
	var commitAcks, abortAcks []producedRec
	for _, a := range acks {
		if isCommit[a.Key] {
			commitAcks = append(commitAcks, a)
		} else {
			abortAcks = append(abortAcks, a)
		}
	}
	produced := map[string]expectedRec{}
	addProduced(t, mc, produced, commitAcks, commitKeys, txnCodec)
	addProduced(t, mc, produced, abortAcks, abortKeys, txnCodec)

	// One plain record per partition after the aborted transaction.
	plain := produceAfterTxn(t, addr, topic, produced)

	if !c.txnNoOffsets {
		waitCommittedOffset(t, addr, group, offsetsTopic, 0, txnCommittedOffset)
	}

	defer tc.setIsolation("")
	tc.setIsolation("read_committed")
	want := append(append([]string{}, commitKeys...), plain...)
	got := mc.consume(t, topic, base+"-txn-rc", "", len(want))
	for _, r := range got {
		if !isCommit[r.Key] && !strings.HasPrefix(r.Key, "plain-") {
			t.Fatalf("the read_committed consumer got %q (partition %d offset %d) of the aborted transaction", r.Key, r.Partition, r.Offset)
		}
	}
	checkConsumed(t, got, produced, want, nil)

	tc.setIsolation("read_uncommitted")
	want = append(want, abortKeys...)
	got = mc.consume(t, topic, base+"-txn-ru", "", len(want))
	checkConsumed(t, got, produced, want, nil)
}

// produceAfterTxn writes one non-transactional record to each partition of
// topic with franz-go, adds them to produced and returns their keys.
func produceAfterTxn(t *testing.T, addr, topic string, produced map[string]expectedRec) []string {
	t.Helper()
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	var rs []*kgo.Record
	for p := int32(0); p < matrixPartitions; p++ {
		k := fmt.Sprintf("plain-%d", p)
		r := &kgo.Record{Topic: topic, Partition: p, Key: []byte(k), Value: []byte(valueFor(k))}
		for _, h := range headersFor("plain", int(p)) {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		rs = append(rs, r)
	}
	produceSync(t, cl, rs)
	var keys []string
	for _, r := range rs {
		k := string(r.Key)
		produced[k] = expectedRec{
			producedRec: producedRec{Key: k, Partition: r.Partition, Offset: r.Offset},
			Value:       valueFor(k), Headers: headersFor("plain", int(r.Partition)),
		}
		keys = append(keys, k)
	}
	return keys
}

// waitCommittedOffset waits until group's committed offset for
// topic/partition is want. Transactional offsets become visible when the
// commit marker reaches __consumer_offsets, just after EndTxn is answered.
func waitCommittedOffset(t *testing.T, addr, group, topic string, partition int32, want int64) {
	t.Helper()
	adm := newAdmin(t, addr)
	ctx := testCtx(t)
	var last string
	deadline := time.Now().Add(10 * time.Second)
	for {
		committed, err := adm.FetchOffsets(ctx, group)
		switch {
		case err != nil:
			last = err.Error()
		default:
			o, ok := committed.Lookup(topic, partition)
			switch {
			case !ok:
				last = "no committed offset"
			case o.Err != nil:
				last = o.Err.Error()
			case o.At == want:
				return
			default:
				last = fmt.Sprintf("committed offset %d", o.At)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s %s[%d]: %s, want %d (the committed transaction's, not the aborted one's %d)",
				group, topic, partition, last, want, txnAbortedOffset)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// txnRecordsFor is the records of one transaction: key, value and headers
// as runTxnStep expects them.
func txnRecordsFor(keys []string) []jsonRec {
	out := make([]jsonRec, len(keys))
	for i, k := range keys {
		out[i] = jsonRec{K: k, V: valueFor(k), H: headersFor(txnCodec, i)}
	}
	return out
}

// ---------------------------------------------------------------- franz-go

func franzIsolation(level string) kgo.IsolationLevel {
	if level == "read_committed" {
		return kgo.ReadCommitted()
	}
	return kgo.ReadUncommitted()
}

func (c *franzClient) setIsolation(level string) { c.isolation = level }

func (c *franzClient) transact(t *testing.T, topic, txnID, group, offsetsTopic string, txns []txnSpec) []producedRec {
	cl := newKgo(t, c.addr, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionTimeout(30*time.Second))
	defer cl.Close()
	ctx := testCtx(t)
	var out []producedRec
	for _, spec := range txns {
		if spec.Offset >= 0 {
			t.Fatal("franz-go sends transactional offsets only through GroupTransactSession")
		}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("BeginTransaction: %v", err)
		}
		var rs []*kgo.Record
		for i, jr := range txnRecordsFor(spec.Keys) {
			r := &kgo.Record{Key: []byte(jr.K), Value: []byte(jr.V)}
			for _, h := range headersFor(txnCodec, i) {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
			}
			rs = append(rs, r)
		}
		produceSync(t, cl, rs)
		for _, r := range rs {
			out = append(out, producedRec{Key: string(r.Key), Partition: r.Partition, Offset: r.Offset})
		}
		end := kgo.TryAbort
		if spec.Commit {
			end = kgo.TryCommit
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			t.Fatalf("EndTransaction(commit=%v): %v", spec.Commit, err)
		}
	}
	return out
}

// ---------------------------------------------------------------- sarama

func saramaIsolation(level string) sarama.IsolationLevel {
	if level == "read_committed" {
		return sarama.ReadCommitted
	}
	return sarama.ReadUncommitted
}

func (c *saramaClient) setIsolation(level string) { c.isolation = level }

func (c *saramaClient) transact(t *testing.T, topic, txnID, group, offsetsTopic string, txns []txnSpec) []producedRec {
	cfg := saramaConfig(sarama.V3_0_0_0, sarama.CompressionNone, true)
	cfg.Producer.Transaction.ID = txnID
	cfg.Producer.Transaction.Timeout = 30 * time.Second
	prod, err := sarama.NewSyncProducer([]string{c.addr}, cfg)
	if err != nil {
		t.Fatalf("NewSyncProducer (transactional): %v", err)
	}
	defer prod.Close()
	var out []producedRec
	for _, spec := range txns {
		if err := prod.BeginTxn(); err != nil {
			t.Fatalf("BeginTxn: %v", err)
		}
		msgs := make([]*sarama.ProducerMessage, len(spec.Keys))
		for i, jr := range txnRecordsFor(spec.Keys) {
			m := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(jr.K), Value: sarama.StringEncoder(jr.V)}
			for _, h := range jr.H {
				m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h[0]), Value: []byte(h[1])})
			}
			msgs[i] = m
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatalf("SendMessages in a transaction: %v", err)
		}
		for i, m := range msgs {
			out = append(out, producedRec{Key: spec.Keys[i], Partition: m.Partition, Offset: m.Offset})
		}
		if spec.Offset >= 0 {
			offsets := map[string][]*sarama.PartitionOffsetMetadata{offsetsTopic: {{Partition: 0, Offset: spec.Offset}}}
			if err := prod.AddOffsetsToTxn(offsets, group); err != nil {
				t.Fatalf("AddOffsetsToTxn: %v", err)
			}
		}
		if spec.Commit {
			err = prod.CommitTxn()
		} else {
			err = prod.AbortTxn()
		}
		if err != nil {
			t.Fatalf("end transaction (commit=%v): %v (status %v)", spec.Commit, err, prod.TxnStatus())
		}
	}
	return out
}

// ---------------------------------------------------------------- confluent-kafka-go

func (c *confluentGoClient) setIsolation(level string) { c.isolation = level }

func (c *confluentGoClient) transact(t *testing.T, topic, txnID, group, offsetsTopic string, txns []txnSpec) []producedRec {
	p, err := ckafka.NewProducer(c.config(t, ckafka.ConfigMap{
		"transactional.id": txnID, "acks": "all", "linger.ms": 5, "transaction.timeout.ms": 30000,
	}))
	if err != nil {
		t.Fatalf("NewProducer (transactional): %v", err)
	}
	defer p.Close()
	defer drainLogs(t, p.Logs())()
	// The group metadata a consume-transform-produce loop takes from its
	// consumer; this one never joins (generation -1, no member id).
	cons, err := ckafka.NewConsumer(c.config(t, ckafka.ConfigMap{"group.id": group}))
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	defer cons.Close()
	defer drainLogs(t, cons.Logs())()
	gmd, err := cons.GetConsumerGroupMetadata()
	if err != nil {
		t.Fatalf("GetConsumerGroupMetadata: %v", err)
	}
	ctx := testCtx(t)
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatalf("InitTransactions: %v", err)
	}
	var out []producedRec
	for _, spec := range txns {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("BeginTransaction: %v", err)
		}
		dr := make(chan ckafka.Event, len(spec.Keys))
		for _, jr := range txnRecordsFor(spec.Keys) {
			m := &ckafka.Message{
				TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny},
				Key:            []byte(jr.K), Value: []byte(jr.V),
			}
			for _, h := range jr.H {
				m.Headers = append(m.Headers, ckafka.Header{Key: h[0], Value: []byte(h[1])})
			}
			if err := p.Produce(m, dr); err != nil {
				t.Fatalf("Produce: %v", err)
			}
		}
		out = append(out, confluentDeliveries(t, dr, len(spec.Keys))...)
		if spec.Offset >= 0 {
			offs := []ckafka.TopicPartition{{Topic: &offsetsTopic, Partition: 0, Offset: ckafka.Offset(spec.Offset)}}
			if err := p.SendOffsetsToTransaction(ctx, offs, gmd); err != nil {
				t.Fatalf("SendOffsetsToTransaction: %v", err)
			}
		}
		if spec.Commit {
			err = p.CommitTransaction(ctx)
		} else {
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatalf("end transaction (commit=%v): %v", spec.Commit, err)
		}
	}
	return out
}

// confluentDeliveries waits for n delivery reports on dr.
func confluentDeliveries(t *testing.T, dr chan ckafka.Event, n int) []producedRec {
	t.Helper()
	var out []producedRec
	deadline := time.NewTimer(opTimeout)
	defer deadline.Stop()
	for len(out) < n {
		select {
		case ev := <-dr:
			m, ok := ev.(*ckafka.Message)
			if !ok {
				t.Fatalf("unexpected delivery event %v", ev)
			}
			if m.TopicPartition.Error != nil {
				t.Fatalf("delivery of %q failed: %v", m.Key, m.TopicPartition.Error)
			}
			out = append(out, producedRec{Key: string(m.Key), Partition: m.TopicPartition.Partition, Offset: int64(m.TopicPartition.Offset)})
		case <-deadline.C:
			t.Fatalf("%d of %d delivery reports before the deadline", len(out), n)
		}
	}
	return out
}

// ---------------------------------------------------------------- scripts

func (c *scriptClient) setIsolation(level string) { c.isolation = level }

func (c *scriptClient) transact(t *testing.T, topic, txnID, group, offsetsTopic string, txns []txnSpec) []producedRec {
	type txnLine struct {
		Commit bool      `json:"commit"`
		Offset int64     `json:"offset"`
		Recs   []jsonRec `json:"recs"`
	}
	var in strings.Builder
	for _, spec := range txns {
		line, err := jsonLine(txnLine{Commit: spec.Commit, Offset: spec.Offset, Recs: txnRecordsFor(spec.Keys)})
		if err != nil {
			t.Fatal(err)
		}
		in.WriteString(line)
	}
	out := c.run(t, in.String(), "transact", c.addr, topic, txnID, group, offsetsTopic)
	var acks []producedRec
	for _, r := range parseJSONLines(t, out) {
		acks = append(acks, producedRec{Key: r.K, Partition: r.P, Offset: r.O})
	}
	return acks
}

// jsonLine is v as one line of JSON.
func jsonLine(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b) + "\n", err
}
