package replica

import (
	"sort"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerBatchesKept is how many recent batches per producer are remembered
// to recognise retries, as Kafka (max.in.flight.requests.per.connection ≤ 5).
const producerBatchesKept = 5

// batchMeta identifies one appended batch of an idempotent producer.
type batchMeta struct {
	firstSeq, lastSeq int32
	baseOffset        int64
}

// producerState is the idempotence state of one producer id in one partition.
// Invariant: batches holds at most producerBatchesKept entries, oldest first,
// all of the current epoch.
type producerState struct {
	epoch   int16
	batches []batchMeta
	// lastAppendMs is the max timestamp of the producer's last batch, as Kafka's lastTimestamp.
	lastAppendMs int64
}

// producerStates maps producer id to its state.
type producerStates map[int64]*producerState

func lastSeqOf(h records.Header) int32 {
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 1<<31-1 {
		s -= 1 << 31
	}
	return int32(s)
}

// check decides what to do with a batch from an idempotent producer: write it
// (ok false, err nil), answer with the offset of the identical earlier batch
// (ok true), or reject it with a Kafka error.
func (ps producerStates) check(h records.Header) (dupOffset int64, ok bool, err *kerr.Error) {
	st := ps[h.ProducerID]
	if st == nil {
		return 0, false, nil // unknown producer: any sequence starts it (as Kafka)
	}
	if h.ProducerEpoch < st.epoch {
		return 0, false, kerr.InvalidProducerEpoch
	}
	if h.ProducerEpoch > st.epoch {
		if h.BaseSequence != 0 {
			return 0, false, kerr.OutOfOrderSequenceNumber
		}
		return 0, false, nil
	}
	last := lastSeqOf(h)
	for _, b := range st.batches {
		if b.firstSeq == h.BaseSequence && b.lastSeq == last {
			return b.baseOffset, true, nil
		}
	}
	// A known producer with no batch at this epoch (a transaction marker
	// bumped its epoch, KIP-890) starts at sequence 0, as Kafka's
	// ProducerAppendInfo.checkSequence: accepting any sequence there would
	// let a pipelined later batch in ahead of an earlier one that was
	// refused and will be retried.
	var want int32
	if n := len(st.batches); n > 0 {
		want = st.batches[n-1].lastSeq + 1
		if want < 0 {
			want = 0
		}
	}
	if h.BaseSequence != want {
		return 0, false, kerr.OutOfOrderSequenceNumber
	}
	return 0, false, nil
}

// update records an appended batch.
func (ps producerStates) update(h records.Header, baseOffset int64) {
	st := ps[h.ProducerID]
	if st == nil || h.ProducerEpoch != st.epoch {
		st = &producerState{epoch: h.ProducerEpoch}
		ps[h.ProducerID] = st
	}
	if len(st.batches) == producerBatchesKept {
		st.batches = append(st.batches[:0], st.batches[1:]...)
	}
	st.batches = append(st.batches, batchMeta{firstSeq: h.BaseSequence, lastSeq: lastSeqOf(h), baseOffset: baseOffset})
	st.lastAppendMs = h.MaxTimestamp
}

// expire forgets producers whose last batch is older than cutoffMs and that
// have no open transaction (ongoing), as Kafka's removeExpiredProducers.
func (ps producerStates) expire(cutoffMs int64, ongoing map[int64]int64) {
	for id, st := range ps {
		if _, open := ongoing[id]; !open && st.lastAppendMs < cutoffMs {
			delete(ps, id)
		}
	}
}

// observeMarker applies a transaction marker: a marker at a newer epoch
// (the coordinator fenced the producer) starts that epoch afresh.
func (ps producerStates) observeMarker(h records.Header) {
	if st := ps[h.ProducerID]; st == nil || h.ProducerEpoch > st.epoch {
		ps[h.ProducerID] = &producerState{epoch: h.ProducerEpoch}
	}
}

// ActiveProducers lists the partition's producer state, by producer id.
func (p *Partition) ActiveProducers() []kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
	for pid, st := range p.mu.producers {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = pid
		ap.ProducerEpoch = int32(st.epoch)
		ap.LastSequence = -1
		if n := len(st.batches); n > 0 {
			ap.LastSequence = st.batches[n-1].lastSeq
		}
		ap.LastTimestamp = st.lastAppendMs
		ap.CoordinatorEpoch = -1
		ap.CurrentTxnStartOffset = -1
		if first, ok := p.mu.txns.ongoing[pid]; ok {
			ap.CurrentTxnStartOffset = first
		}
		out = append(out, ap)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
