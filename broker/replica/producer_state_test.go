package replica

import (
	"math"
	"testing"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

func batchHdr(pid int64, epoch int16, seq, count int32, ts int64) records.Header {
	return records.Header{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, LastOffsetDelta: count - 1, MaxTimestamp: ts}
}

// TestProducerStateSequences drives the idempotence checks with explicit
// batches, in order, as Kafka's ProducerStateManager sees them.
func TestProducerStateSequences(t *testing.T) {
	ps := producerStates{}
	offset := int64(0)
	type step struct {
		name    string
		h       records.Header
		wantErr *kerr.Error
		wantDup int64 // >= 0: answered with this earlier offset
	}
	steps := []step{
		{"unknown producer starts anywhere", batchHdr(1, 0, 7, 3, 1), nil, -1},
		{"next in order", batchHdr(1, 0, 10, 2, 2), nil, -1},
		{"retry of the previous batch", batchHdr(1, 0, 10, 2, 2), nil, 3},
		{"retry of an older batch", batchHdr(1, 0, 7, 3, 1), nil, 0},
		{"gap", batchHdr(1, 0, 13, 1, 3), kerr.OutOfOrderSequenceNumber, -1},
		{"old epoch", batchHdr(1, -1, 12, 1, 3), kerr.InvalidProducerEpoch, -1},
		{"new epoch must start at 0", batchHdr(1, 1, 5, 1, 3), kerr.OutOfOrderSequenceNumber, -1},
		{"new epoch at 0", batchHdr(1, 1, 0, 1, 4), nil, -1},
		{"the old epoch is now fenced", batchHdr(1, 0, 12, 1, 4), kerr.InvalidProducerEpoch, -1},
		{"a second producer is independent", batchHdr(2, 0, 0, 5, 5), nil, -1},
	}
	for _, s := range steps {
		dup, isDup, err := ps.check(s.h)
		if err != s.wantErr {
			t.Fatalf("%s: error %v, want %v", s.name, err, s.wantErr)
		}
		if isDup != (s.wantDup >= 0) || (isDup && dup != s.wantDup) {
			t.Fatalf("%s: duplicate=%v at %d, want %d", s.name, isDup, dup, s.wantDup)
		}
		if err == nil && !isDup {
			ps.update(s.h, offset)
			offset += int64(s.h.LastOffsetDelta) + 1
		}
	}
}

func TestProducerStateKeepsFiveBatches(t *testing.T) {
	ps := producerStates{}
	for i := int32(0); i < 7; i++ {
		ps.update(batchHdr(9, 0, i, 1, 0), int64(i))
	}
	if n := len(ps[9].batches); n != producerBatchesKept {
		t.Fatalf("kept %d batches", n)
	}
	if _, dup, _ := ps.check(batchHdr(9, 0, 1, 1, 0)); dup {
		t.Fatal("a batch older than the last five is still recognised")
	}
	if off, dup, _ := ps.check(batchHdr(9, 0, 6, 1, 0)); !dup || off != 6 {
		t.Fatal("the newest batch is not recognised as a retry")
	}
}

func TestProducerStateSequenceWraps(t *testing.T) {
	ps := producerStates{}
	ps.update(batchHdr(3, 0, math.MaxInt32-1, 2, 0), 0) // sequences MaxInt32-1, MaxInt32
	if _, _, err := ps.check(batchHdr(3, 0, 0, 1, 0)); err != nil {
		t.Fatalf("sequence after MaxInt32 must wrap to 0: %v", err)
	}
}

func TestProducerStateExpiry(t *testing.T) {
	ps := producerStates{}
	ps.update(batchHdr(1, 0, 0, 1, 1000), 0)
	ps.update(batchHdr(2, 0, 0, 1, 1000), 1)
	ps.update(batchHdr(3, 0, 0, 1, 5000), 2)
	ps.expire(2000, map[int64]int64{2: 1}) // 2 has an open transaction
	if _, ok := ps[1]; ok {
		t.Error("idle producer 1 not expired")
	}
	if _, ok := ps[2]; !ok {
		t.Error("producer 2 with an open transaction expired")
	}
	if _, ok := ps[3]; !ok {
		t.Error("recent producer 3 expired")
	}
}

// TestProducerStateAfterEpochBumpingMarker: a KIP-890 marker at a newer
// epoch leaves the producer known with no batch; its next batch must start
// at sequence 0. A client that pipelines requests sends a later batch
// while an earlier one is being refused (its transaction check asked it
// to retry): that later batch must be refused too, or the retried one
// could never be written in order.
func TestProducerStateAfterEpochBumpingMarker(t *testing.T) {
	ps := producerStates{}
	ps.update(batchHdr(1, 3, 0, 10, 1), 0)
	ps.observeMarker(records.Header{ProducerID: 1, ProducerEpoch: 4})
	if _, _, err := ps.check(batchHdr(1, 4, 10, 5, 2)); err != kerr.OutOfOrderSequenceNumber {
		t.Fatalf("batch at sequence 10 after the epoch-bumping marker: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", err)
	}
	if _, _, err := ps.check(batchHdr(1, 4, 0, 10, 2)); err != nil {
		t.Fatalf("batch at sequence 0 after the epoch-bumping marker: %v", err)
	}
	// A marker at the producer's own epoch (transactions version 1) keeps
	// its sequence going.
	ps.update(batchHdr(1, 4, 0, 10, 2), 20)
	ps.observeMarker(records.Header{ProducerID: 1, ProducerEpoch: 4})
	if _, _, err := ps.check(batchHdr(1, 4, 10, 1, 3)); err != nil {
		t.Fatalf("next batch after a same-epoch marker: %v", err)
	}
}
