package compat

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawBatch encodes an uncompressed magic-2 record batch of n records with
// the given producer id, epoch and first sequence, and a valid CRC32C.
func rawBatch(pid int64, epoch int16, firstSeq int32, n int, tag string) []byte {
	now := time.Now().UnixMilli()
	var recs []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{
			OffsetDelta: int32(i),
			Key:         fmt.Appendf(nil, "%s-k%d", tag, i),
			Value:       fmt.Appendf(nil, "%s-v%d", tag, i),
		}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the varint 0 takes one byte
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		Length:               int32(49 + len(recs)),
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        firstSeq,
		NumRecords:           int32(n),
		Records:              recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// rawProducer sends hand-built batches to one topic over its own raw TCP
// connection (franz-go would rewrite the acks of a ProduceRequest to its own
// setting), and other requests through a franz-go Broker handle.
type rawProducer struct {
	t        *testing.T
	br       *kgo.Broker
	nodeID   int
	topic    string
	topicID  [16]byte
	conn     net.Conn
	rd       *bufio.Reader
	version  int16 // Produce version: the highest both kmsg and the broker know
	nextCorr int32
}

// produce sends batch to partition 0 with acks=all and returns the
// partition's error code and base offset.
func (p *rawProducer) produce(batch []byte) (int16, int64) {
	p.t.Helper()
	return p.produceTo(-1, 0, batch)
}

// produceTo is produce with any acks and partition.
func (p *rawProducer) produceTo(acks int16, partition int32, batch []byte) (int16, int64) {
	p.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(p.version)
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = p.topic
	rt.TopicID = p.topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p.nextCorr++
	if err := p.conn.SetDeadline(time.Now().Add(rawTimeout)); err != nil {
		p.t.Fatalf("deadline: %v", err)
	}
	if _, err := p.conn.Write(appendKmsg(nil, req, p.nextCorr)); err != nil {
		p.t.Fatalf("write Produce: %v", err)
	}
	corr, body := readFrame(p.t, p.rd)
	if corr != p.nextCorr {
		p.t.Fatalf("Produce answer has correlation id %d, want %d", corr, p.nextCorr)
	}
	resp := decodeResponse(p.t, req, body).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		p.t.Fatalf("Produce v%d response shape: %+v", resp.Version, resp.Topics)
	}
	part := resp.Topics[0].Partitions[0]
	return part.ErrorCode, part.BaseOffset
}

// newRawProducer connects to b, looks up topic's id and the Produce version.
func newRawProducer(t *testing.T, b *brokerProc, topic string) *rawProducer {
	t.Helper()
	return newRawProducerAt(t, b.Addr(), topic)
}

// newRawProducerAt is newRawProducer for the one broker at addr, of any kind.
func newRawProducerAt(t *testing.T, addr, topic string) *rawProducer {
	t.Helper()
	md, err := newAdmin(t, addr).Metadata(testCtx(t), topic)
	if err != nil || len(md.Brokers) != 1 {
		t.Fatalf("Metadata: %v, brokers %+v", err, md.Brokers)
	}
	id := int(md.Brokers[0].NodeID)
	p := &rawProducer{t: t, br: newKgo(t, addr).Broker(id), nodeID: id, topic: topic, topicID: md.Topics[topic].ID}
	p.conn = rawDial(t, addr)
	p.rd = bufio.NewReader(p.conn)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	if err := p.conn.SetDeadline(time.Now().Add(rawTimeout)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	if _, err := p.conn.Write(appendKmsg(nil, av, 0)); err != nil {
		t.Fatalf("write ApiVersions: %v", err)
	}
	_, body := readFrame(t, p.rd)
	p.version = -1
	for _, k := range decodeResponse(t, av, body).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == kmsg.Produce.Int16() {
			p.version = min(k.MaxVersion, kmsg.NewPtrProduceRequest().MaxVersion())
		}
	}
	if p.version < 3 {
		t.Fatalf("broker advertises Produce up to v%d, want at least v3", p.version)
	}
	return p
}

// TestProduceIdempotentSequences checks the broker's sequence checks for an
// idempotent producer with hand-built batches: a retried batch is answered
// with its original offset and written once, also across a restart; a gap
// is OUT_OF_ORDER_SEQUENCE_NUMBER; a bad CRC is CORRUPT_MESSAGE.
func TestProduceIdempotentSequences(t *testing.T) {
	b := startBroker(t, t.TempDir())
	const topic = "idempotent"
	createTopic(t, newAdmin(t, b.Addr()), topic, 1, nil)
	p := newRawProducer(t, b, topic)

	initReq := kmsg.NewPtrInitProducerIDRequest()
	initReq.TransactionTimeoutMillis = 60000
	initResp, err := initReq.RequestWith(testCtx(t), p.br)
	if err != nil || initResp.ErrorCode != 0 || initResp.ProducerID < 0 || initResp.ProducerEpoch < 0 {
		t.Fatalf("InitProducerId: %v %+v", err, initResp)
	}
	pid, epoch := initResp.ProducerID, initResp.ProducerEpoch

	expect := func(what string, batch []byte, wantCode int16, wantOffset int64) {
		t.Helper()
		code, off := p.produce(batch)
		if code != wantCode || (wantCode == 0 && off != wantOffset) {
			t.Fatalf("%s: error %d (%v) base offset %d, want error %d base offset %d",
				what, code, kerr.ErrorForCode(code), off, wantCode, wantOffset)
		}
	}
	first := rawBatch(pid, epoch, 0, 3, "a")
	expect("first batch", first, 0, 0)
	expect("the same batch again", first, 0, 0)
	second := rawBatch(pid, epoch, 3, 2, "b")
	expect("next batch", second, 0, 3)
	expect("sequence gap", rawBatch(pid, epoch, 10, 1, "gap"), kerr.OutOfOrderSequenceNumber.Code, 0)

	corrupt := rawBatch(pid, epoch, 5, 1, "c")
	corrupt[len(corrupt)-2] ^= 0xff
	expect("bad CRC", corrupt, kerr.CorruptMessage.Code, 0)

	b.StopAndRestart()
	p = newRawProducer(t, b, topic)
	expect("the previous batch again after a restart", second, 0, 3)
	expect("next batch after a restart", rawBatch(pid, epoch, 5, 1, "d"), 0, 5)

	got := consumeN(t, b.Addr(), topic, 1, 6)
	want := []string{"a-v0", "a-v1", "a-v2", "b-v0", "b-v1", "d-v0"}
	for i, r := range got {
		if string(r.Value) != want[i] || r.Offset != int64(i) || r.ProducerID != pid {
			t.Fatalf("record %d = %q@%d pid %d, want %q@%d pid %d", i, r.Value, r.Offset, r.ProducerID, want[i], i, pid)
		}
	}
}

// TestProduceInvalidRequests checks per-partition errors for produce
// requests Kafka refuses: acks outside -1/0/1 and a partition that does not
// exist.
func TestProduceInvalidRequests(t *testing.T) {
	b := startBroker(t, t.TempDir())
	const topic = "invalid-produce"
	createTopic(t, newAdmin(t, b.Addr()), topic, 1, nil)
	p := newRawProducer(t, b, topic)
	if code, _ := p.produceTo(2, 0, rawBatch(-1, -1, -1, 1, "acks2")); code != kerr.InvalidRequiredAcks.Code {
		t.Errorf("produce with acks=2: error %d, want INVALID_REQUIRED_ACKS (21)", code)
	}
	if code, _ := p.produceTo(-1, 5, rawBatch(-1, -1, -1, 1, "p5")); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to partition 5 of a 1-partition topic: error %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", code)
	}
	b.Alive()
}

// TestFetchLongPoll parks a Fetch at the end of the log and checks that a
// produce wakes it long before its MaxWait.
func TestFetchLongPoll(t *testing.T) {
	b := startBroker(t, t.TempDir())
	const topic = "long-poll"
	createTopic(t, newAdmin(t, b.Addr()), topic, 1, nil)
	p := newRawProducer(t, b, topic)

	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 20000
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	ft.TopicID = p.topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset = 0
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)

	type result struct {
		resp *kmsg.FetchResponse
		err  error
	}
	done := make(chan result, 1)
	ctx := testCtx(t)
	fetcher := newKgo(t, b.Addr()).Broker(p.nodeID)
	start := time.Now()
	go func() {
		resp, err := req.RequestWith(ctx, fetcher)
		done <- result{resp, err}
	}()
	produceSync(t, newKgo(t, b.Addr()), []*kgo.Record{{Topic: topic, Value: []byte("wake up")}})
	var res result
	select {
	case res = <-done:
	case <-time.After(opTimeout):
		t.Fatalf("parked Fetch not answered within %v", opTimeout)
	}
	elapsed := time.Since(start)
	if res.err != nil {
		t.Fatalf("Fetch: %v", res.err)
	}
	if len(res.resp.Topics) != 1 || len(res.resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch response shape: %+v", res.resp.Topics)
	}
	part := res.resp.Topics[0].Partitions[0]
	if part.ErrorCode != 0 || part.HighWatermark != 1 || len(part.RecordBatches) == 0 {
		t.Fatalf("Fetch = error %d HW %d %d bytes, want the new record", part.ErrorCode, part.HighWatermark, len(part.RecordBatches))
	}
	if elapsed > 10*time.Second {
		t.Fatalf("parked Fetch answered after %v: the produce did not wake it (MaxWait 20s)", elapsed)
	}
}
