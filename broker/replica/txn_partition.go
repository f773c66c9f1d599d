package replica

import (
	"sort"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// abortedTxn is one aborted transaction in a partition: its producer and the
// offsets of its first data batch and of its abort marker.
type abortedTxn struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64
	// lso is the last stable offset just after the marker (Kafka's
	// AbortedTxn.lastStableOffset, kept for the .txnindex files); 0 when
	// unknown (a legacy snapshot), which Kafka's readers accept.
	lso int64
}

// partitionTxns tracks the transactions of one partition.
// Invariant: every producer in ongoing has written a transactional batch at
// its offset and no marker since; aborted is sorted by lastOffset.
type partitionTxns struct {
	ongoing map[int64]int64 // producer id → first offset of its open transaction
	aborted []abortedTxn
}

// observe updates the state with one appended batch; ct is the marker type
// of a control batch.
func (t *partitionTxns) observe(h records.Header, base, last int64, ct records.ControlType) {
	if !h.IsTransactional() || h.ProducerID < 0 {
		return
	}
	if t.ongoing == nil {
		t.ongoing = map[int64]int64{}
	}
	if !h.IsControl() {
		if _, ok := t.ongoing[h.ProducerID]; !ok {
			t.ongoing[h.ProducerID] = base
		}
		return
	}
	first, ok := t.ongoing[h.ProducerID]
	if !ok {
		return // a marker for a transaction with no data here
	}
	delete(t.ongoing, h.ProducerID)
	if ct == records.ControlAbort {
		t.aborted = append(t.aborted, abortedTxn{producerID: h.ProducerID, firstOffset: first, lastOffset: last, lso: t.lastStable(last + 1)})
	}
}

// lastStable is the last stable offset: the first offset of the oldest open
// transaction, or hw when none is open. Invariant: result <= hw.
func (t *partitionTxns) lastStable(hw int64) int64 {
	lso := hw
	for _, first := range t.ongoing {
		if first < lso {
			lso = first
		}
	}
	return lso
}

// abortedBetween lists aborted transactions that may have data in [from, to):
// those whose abort marker is at or after from and whose first offset is below to.
func (t *partitionTxns) abortedBetween(from, to int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	i := sort.Search(len(t.aborted), func(i int) bool { return t.aborted[i].lastOffset >= from })
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	for _, a := range t.aborted[i:] {
		if a.firstOffset < to {
			out = append(out, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.producerID, FirstOffset: a.firstOffset})
		}
	}
	return out
}

// truncateAbortedBelow forgets aborted transactions wholly below the log
// start: those whose marker (and so all their data) is below logStart.
func (t *partitionTxns) truncateAbortedBelow(logStart int64) {
	i := sort.Search(len(t.aborted), func(i int) bool { return t.aborted[i].lastOffset >= logStart })
	t.aborted = append(t.aborted[:0], t.aborted[i:]...)
}

// forget drops the aborted transactions in gone (by producer and marker offset).
func (t *partitionTxns) forget(gone []storage.AbortedTxn) {
	drop := make(map[storage.AbortedTxn]bool, len(gone))
	for _, a := range gone {
		drop[a] = true
	}
	kept := t.aborted[:0]
	for _, a := range t.aborted {
		if !drop[storage.AbortedTxn{ProducerID: a.producerID, MarkerOffset: a.lastOffset}] {
			kept = append(kept, a)
		}
	}
	t.aborted = kept
}
