package compat

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzAcks produces with acks=0 and acks=1 (which franz-go allows only
// without idempotence) and checks every record arrives in order.
func TestFranzAcks(t *testing.T) {
	b := startBroker(t, t.TempDir())
	adm := newAdmin(t, b.Addr())
	for _, c := range []struct {
		name string
		acks kgo.Acks
	}{
		{"acks0", kgo.NoAck()},
		{"acks1", kgo.LeaderAck()},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := "produce-" + c.name
			createTopic(t, adm, topic, 1, nil)
			prod := newKgo(t, b.Addr(), kgo.RequiredAcks(c.acks), kgo.DisableIdempotentWrite())
			rs := keyedRecords(topic, 0, 300)
			produceSync(t, prod, rs)
			got := consumeN(t, b.Addr(), topic, 1, len(rs))
			for i, r := range got {
				if r.Offset != int64(i) || string(r.Key) != string(rs[i].Key) || string(r.Value) != string(rs[i].Value) {
					t.Fatalf("record #%d = %q@%d, want %q@%d", i, r.Key, r.Offset, rs[i].Key, i)
				}
			}
		})
	}
}

// TestFranzFetchErrors checks the error codes of Fetch and ListOffsets for
// offsets and partitions that do not exist.
func TestFranzFetchErrors(t *testing.T) {
	b := startBroker(t, t.TempDir())
	const topic = "fetch-errors"
	adm := newAdmin(t, b.Addr())
	createTopic(t, adm, topic, 1, nil)
	produceSync(t, newKgo(t, b.Addr()), keyedRecords(topic, 0, 10))
	md, err := adm.Metadata(testCtx(t), topic)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	topicID := md.Topics[topic].ID
	// Broker(id) sends each request as is to that broker: the client's own
	// sharding would answer for unknown partitions itself.
	cl := newKgo(t, b.Addr()).Broker(int(md.Brokers[0].NodeID))

	fetch := func(partition int32, offset int64) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 100
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		ft.TopicID = topicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = partition
		fp.FetchOffset = offset
		fp.PartitionMaxBytes = 1 << 20
		fp.CurrentLeaderEpoch = -1
		fp.LogStartOffset = -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Fetch v%d: top-level error %d, topics %+v", resp.Version, resp.ErrorCode, resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}
	// Kafka 4.4.0 answers an out-of-range fetch with every offset -1 (the
	// differential corpus, fetch-out-of-range, checks the same against Kafka).
	if p := fetch(0, 1000); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != -1 || p.LogStartOffset != -1 {
		t.Errorf("Fetch at offset 1000 of 10: error %d HW %d log start %d, want OFFSET_OUT_OF_RANGE (1) with HW and log start -1, as Kafka", p.ErrorCode, p.HighWatermark, p.LogStartOffset)
	}
	if p := fetch(0, 10); p.ErrorCode != 0 || p.HighWatermark != 10 || len(p.RecordBatches) != 0 {
		t.Errorf("Fetch at the end offset: error %d HW %d %d bytes, want no error, HW 10, no records", p.ErrorCode, p.HighWatermark, len(p.RecordBatches))
	}
	if p := fetch(0, 0); p.ErrorCode != 0 || p.HighWatermark != 10 || p.LogStartOffset != 0 || len(p.RecordBatches) == 0 {
		t.Errorf("Fetch at 0: error %d HW %d LSO %d %d bytes, want records", p.ErrorCode, p.HighWatermark, p.LogStartOffset, len(p.RecordBatches))
	}
	if p := fetch(5, 0); p.ErrorCode != kerr.UnknownTopicOrPartition.Code && p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("Fetch of partition 5 of a 1-partition topic: error %d, want UNKNOWN_TOPIC_OR_PARTITION (3)", p.ErrorCode)
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition = 5
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	resp, err := lo.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("ListOffsets: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("ListOffsets of partition 5 of a 1-partition topic = %+v, want UNKNOWN_TOPIC_OR_PARTITION", resp.Topics)
	}
}
