package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestAbandonedTransactionIsAborted: a producer that opens a transaction and
// goes away leaves the LSO stuck until the coordinator aborts the
// transaction at its timeout; then the LSO moves past the abort marker and
// read_committed consumers see none of its records.
func TestAbandonedTransactionIsAborted(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx := newClient(t, b, kgo.DefaultProduceTopic("abandon"), kgo.AllowAutoTopicCreation(),
		kgo.TransactionalID("abandoner"), kgo.TransactionTimeout(time.Second))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := tx.ProduceSync(ctx, &kgo.Record{Value: []byte("lost")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p := b.rm.PartitionOf("abandon", 0)
	if lso := p.LastStableOffset(); lso != 0 {
		t.Fatalf("LSO %d with the transaction open, want 0", lso)
	}
	// Walk away without ending the transaction. Close would abort it, so
	// only stop using the client; its session ends with the test.
	for {
		arrived := p.WaitArrival() // taken before the check: the abort marker is an append
		if p.LastStableOffset() != 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the coordinator never aborted the timed-out transaction")
		case <-arrived:
		}
	}
	if lso, hw := p.LastStableOffset(), p.HighWatermark(); lso != hw || hw != 6 {
		t.Fatalf("after the abort LSO %d HW %d, want both 6 (5 records and the marker)", lso, hw)
	}
	if got := p.AbortedBetween(0, 6); len(got) != 1 || got[0].FirstOffset != 0 {
		t.Fatalf("aborted transactions %+v", got)
	}
}

// TestTxnOffsetCommitUnknownPartition: offsets for a partition that does not
// exist are refused per partition, as OffsetCommit refuses them: by name
// (v3) UNKNOWN_TOPIC_OR_PARTITION, by an unknown id (v6) UNKNOWN_TOPIC_ID.
func TestTxnOffsetCommitUnknownPartition(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range []struct {
		version int16
		want    *kerr.Error
	}{{3, kerr.UnknownTopicOrPartition}, {6, kerr.UnknownTopicID}} {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.TxnOffsetCommit.Int16(), tt.version)
		cl := newClient(t, b, kgo.MaxVersions(vs))
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx", "g", 1, 0, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "no-such-topic", [16]byte{1}
		rt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5, LeaderEpoch: -1}}
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != tt.version || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != tt.want.Code {
			t.Fatalf("v%d answer %+v, want %s", resp.Version, resp.Topics, tt.want.Message)
		}
	}
}

// TestProduceV12AddsPartitionToTransaction: under transaction.version 2 a
// transactional Produce v12 adds its partition to the transaction itself
// (KIP-890 part 2); an older Produce for a partition never added is refused.
func TestProduceV12AddsPartitionToTransaction(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), map[string]string{"num.partitions": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.AllowAutoTopicCreation())
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "v12"); err != nil {
		t.Fatal(err)
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 4
	txnID := "v12-tx"
	init.TransactionalID = &txnID
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %+v", err, ir)
	}
	produce := func(version int16, partition int32) int16 {
		batch, err := records.Build(records.BatchSpec{Attributes: 0x10, ProducerID: ir.ProducerID, ProducerEpoch: ir.ProducerEpoch, FirstTimestamp: time.Now().UnixMilli()},
			[]records.Record{{Value: []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version = version
		req.TransactionID = &txnID
		req.Acks = -1
		req.TimeoutMillis = 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "v12", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: partition, Records: batch}}}}
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = version
		conn := rawConn(t, b)
		if err := conn.roundTrip(req, resp); err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(12, 0); code != 0 {
		t.Fatalf("Produce v12 transactional batch: error %d", code)
	}
	if lso := b.rm.PartitionOf("v12", 0).LastStableOffset(); lso != 0 {
		t.Fatalf("LSO %d: the v12 batch did not open a transaction in the partition", lso)
	}
	if code := produce(11, 1); code != kerr.InvalidTxnState.Code && code != kerr.TransactionAbortable.Code {
		t.Fatalf("Produce v11 to a partition never added: error %d, want INVALID_TXN_STATE", code)
	}
}

// TestWriteTxnMarkersAbortsHangingTransaction: WriteTxnMarkers, what
// kafka-transactions.sh abort sends for a hanging transaction, ends the
// producer's open transaction in a partition so that the LSO moves past it;
// a marker older than the producer's epoch is INVALID_PRODUCER_EPOCH and
// changes nothing; an unknown partition is UNKNOWN_TOPIC_OR_PARTITION.
func TestWriteTxnMarkersAbortsHangingTransaction(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := newClient(t, b)
	mustCreateTopic(t, ctx, kadm.NewClient(cl), "wm", 1, nil)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = 4
	txnID := "wm-tx"
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %+v", err, ir)
	}
	batch, err := records.Build(records.BatchSpec{Attributes: 0x10, ProducerID: ir.ProducerID, ProducerEpoch: ir.ProducerEpoch, FirstTimestamp: time.Now().UnixMilli()},
		[]records.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	preq := kmsg.NewPtrProduceRequest()
	preq.Version, preq.TransactionID, preq.Acks, preq.TimeoutMillis = 12, &txnID, -1, 5000
	preq.Topics = []kmsg.ProduceRequestTopic{{Topic: "wm", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: batch}}}}
	presp := kmsg.NewPtrProduceResponse()
	presp.Version = 12
	conn := rawConn(t, b)
	if err := conn.roundTrip(preq, presp); err != nil || presp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("transactional produce: %v %+v", err, presp.Topics)
	}
	p := b.rm.PartitionOf("wm", 0)
	if lso := p.LastStableOffset(); lso != 0 {
		t.Fatalf("LSO %d with the transaction open, want 0", lso)
	}
	marker := func(epoch int16) []int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch = ir.ProducerID, epoch, -1
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "wm", Partitions: []int32{0, 7}}}
		req.Markers = append(req.Markers, m)
		resp := kmsg.NewPtrWriteTxnMarkersResponse()
		resp.Version = 1
		if err := conn.roundTrip(req, resp); err != nil {
			t.Fatal(err)
		}
		var codes []int16
		for _, sp := range resp.Markers[0].Topics[0].Partitions {
			codes = append(codes, sp.ErrorCode)
		}
		return codes
	}
	unknown := kerr.UnknownTopicOrPartition.Code
	if got := marker(ir.ProducerEpoch - 1); !slices.Equal(got, []int16{kerr.InvalidProducerEpoch.Code, unknown}) {
		t.Fatalf("stale marker: codes %v", got)
	}
	if lso := p.LastStableOffset(); lso != 0 {
		t.Fatalf("LSO %d after a stale marker, want 0", lso)
	}
	if got := marker(ir.ProducerEpoch); !slices.Equal(got, []int16{0, unknown}) {
		t.Fatalf("abort marker: codes %v", got)
	}
	if lso, hw := p.LastStableOffset(), p.HighWatermark(); lso != 2 || hw != 2 {
		t.Fatalf("after the abort marker LSO %d HW %d, want both 2 (the record and the marker)", lso, hw)
	}
}
