package coordhost

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/protocol/records"
)

// fakeReplicas records internal appends and fails the one numbered failAt
// (1-based; 0: none). Acknowledgements are synchronous, as on a single node.
type fakeReplicas struct {
	Replicas
	appended []*replica.Partition
	batches  [][]records.Record
	failAt   int
}

// PartitionOf knows no partition: appends go to the topic value's.
func (f *fakeReplicas) PartitionOf(string, int32) *replica.Partition { return nil }

func (f *fakeReplicas) AppendInternal(p *replica.Partition, batch []byte, done func(error)) {
	if len(f.appended)+1 == f.failAt {
		f.appended = append(f.appended, p)
		done(errors.New("disk full"))
		return
	}
	_, recs, err := records.DecodeRecords(batch)
	if err != nil {
		done(err)
		return
	}
	f.appended = append(f.appended, p)
	f.batches = append(f.batches, recs)
	done(nil)
}

func testTopic(n int) *replica.Topic {
	t := &replica.Topic{Meta: controller.Topic{Name: "__consumer_offsets", Partitions: int32(n)}}
	for i := range n {
		t.Partitions = append(t.Partitions, &replica.Partition{Index: int32(i)})
	}
	return t
}

// byKeyPartition puts record "k<i>" in partition i.
func byKeyPartition(key string, _ int32) int32 {
	n, _ := strconv.Atoi(key[1:])
	return int32(n)
}

// TestAppendInternalOrderAndAck: one batch per partition, in the order the
// partitions first appear; done runs once, after the last is acknowledged.
func TestAppendInternalOrderAndAck(t *testing.T) {
	f := &fakeReplicas{}
	top := testTopic(3)
	recs := []group.Record{{Group: "k2", Key: []byte("a")}, {Group: "k0", Key: []byte("b")}, {Group: "k2", Key: []byte("c")}}
	calls := 0
	var got error
	appendInternal(f, top, time.UnixMilli(1000), recs, byKeyPartition, func(err error) { calls++; got = err })
	if calls != 1 || got != nil {
		t.Fatalf("done called %d times with %v", calls, got)
	}
	if len(f.appended) != 2 || f.appended[0] != top.Partitions[2] || f.appended[1] != top.Partitions[0] {
		t.Fatalf("appended to %v", f.appended)
	}
	if len(f.batches[0]) != 2 || string(f.batches[0][0].Key) != "a" || string(f.batches[0][1].Key) != "c" || string(f.batches[1][0].Key) != "b" {
		t.Fatalf("batches %+v", f.batches)
	}
}

// TestAppendInternalReportsFirstFailure: a failed append is reported once
// with its partition. Every batch is appended before appendInternal
// returns (records of later calls must not reach a partition first), so
// the ones after it are written too.
func TestAppendInternalReportsFirstFailure(t *testing.T) {
	f := &fakeReplicas{failAt: 2}
	top := testTopic(3)
	recs := []group.Record{{Group: "k0"}, {Group: "k1"}, {Group: "k2"}}
	calls := 0
	var got error
	appendInternal(f, top, time.UnixMilli(1000), recs, byKeyPartition, func(err error) { calls++; got = err })
	if calls != 1 || got == nil || got.Error() != "append to __consumer_offsets-1: disk full" {
		t.Fatalf("done called %d times with %v", calls, got)
	}
	if len(f.appended) != 3 {
		t.Fatalf("%d appends, want 3", len(f.appended))
	}
	calls = 0
	appendInternal(f, top, time.UnixMilli(1000), nil, byKeyPartition, func(err error) { calls++; got = err })
	if calls != 1 || got != nil {
		t.Fatalf("no records: done called %d times with %v", calls, got)
	}
}
