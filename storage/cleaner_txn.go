package storage

// Transactions in compaction, as Kafka's cleaner (CleanedTransactionMetadata
// and Cleaner.shouldDiscardBatch).
//
// Kafka learns the aborted transactions of the cleaned range from its
// ".txnindex" files. kbroker keeps no transaction index on disk, so the
// cleaner discovers them itself: before a pass it scans the batch headers of
// the whole log (it already did, for the producers' last batches) and reads
// each control batch's type. Per producer, transactional data batches are
// pending from the first one until the producer's next control batch; an
// ABORT marker makes the span [first pending offset, marker] an aborted
// transaction, any other marker ends the span as committed. This is sound
// for every transaction with data in the cleaned range because
//
//   - the scan starts at the first segment, so it sees every remaining batch
//     of a transaction (nothing of it lies below the first segment), and
//   - the cleaned range ends at or below the last stable offset, so every
//     transaction with data there has its marker in the log; the scan runs
//     after the caller read the LSO, and the LSO only passes a transaction
//     after its marker was appended. As a second guard the cleaner never
//     cleans past the first offset of a transaction the scan found open.
//
// A transaction's marker may lie far beyond the cleaned range (another
// transaction kept the LSO back); the whole-log scan finds it there.

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"sort"

	"github.com/kbroker/kbroker/protocol/records"
)

// deleteHorizonAttr is the batch attribute bit of KIP-534: when set, the
// batch's first timestamp is its delete horizon, the time from which the
// cleaner may remove it.
const deleteHorizonAttr = 0x40

// AbortedTxn names an aborted transaction of a log by its producer and the
// offset of its ABORT marker.
type AbortedTxn struct {
	ProducerID   int64
	MarkerOffset int64
}

// txnSpan is one aborted transaction: its first remaining data offset and
// the offset of its ABORT marker.
type txnSpan struct{ first, marker int64 }

// logTxns is what a scan of the whole log learned about producers and
// transactions.
type logTxns struct {
	// aborted lists each producer's aborted transactions, by first offset.
	aborted map[int64][]txnSpan
	// open is the first offset of the oldest transaction without a marker;
	// math.MaxInt64 if none.
	open int64
	// lastData and lastBatch map a producer to the base offset of its last
	// data batch and of its last batch (data or control).
	lastData, lastBatch map[int64]int64
}

// scanTxns reads every batch header of the views (and each transactional
// control batch whole) and returns the producers' transactions.
func scanTxns(views []segView) (logTxns, error) {
	t := logTxns{aborted: map[int64][]txnSpan{}, open: math.MaxInt64,
		lastData: map[int64]int64{}, lastBatch: map[int64]int64{}}
	pending := map[int64]int64{}
	var buf []byte
	for _, v := range views {
		for pos := int64(0); pos < v.size; {
			h, err := headerAt(v.f, pos, v.size)
			if err != nil {
				return t, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
			}
			if pid := h.ProducerID; pid >= 0 {
				t.lastBatch[pid] = h.BaseOffset
				if !h.IsControl() {
					t.lastData[pid] = h.BaseOffset
				}
				switch {
				case !h.IsTransactional():
				case !h.IsControl():
					if _, ok := pending[pid]; !ok {
						pending[pid] = h.BaseOffset
					}
				default:
					buf = append(buf[:0], make([]byte, h.TotalSize())...)
					if _, err := v.f.ReadAt(buf, pos); err != nil {
						return t, fmt.Errorf("segment %d position %d: %w", v.base, pos, err)
					}
					ct, err := records.ControlTypeOf(buf)
					if err != nil {
						return t, fmt.Errorf("control batch at offset %d: %w", h.BaseOffset, err)
					}
					if first, ok := pending[pid]; ok {
						delete(pending, pid)
						if ct == records.ControlAbort {
							t.aborted[pid] = append(t.aborted[pid], txnSpan{first: first, marker: h.BaseOffset})
						}
					}
				}
			}
			pos += int64(h.TotalSize())
		}
	}
	for _, first := range pending {
		t.open = min(t.open, first)
	}
	return t, nil
}

// isAborted reports whether the data batch of producer pid at offset belongs
// to an aborted transaction.
func (t *logTxns) isAborted(pid, offset int64) bool {
	spans := t.aborted[pid]
	i := sort.Search(len(spans), func(i int) bool { return spans[i].first > offset })
	return i > 0 && offset < spans[i-1].marker
}

// retainedForProducer reports whether the batch must stay (possibly empty)
// to preserve its producer's state across a reload, as Kafka's
// isBatchLastRecordOfProducer: the producer's last data batch carries its
// last sequence, its last batch (a marker after a fencing bump) its epoch.
func (t *logTxns) retainedForProducer(h records.Header) bool {
	if h.ProducerID < 0 {
		return false
	}
	if !h.IsControl() && t.lastData[h.ProducerID] == h.BaseOffset {
		return true
	}
	return t.lastBatch[h.ProducerID] == h.BaseOffset
}

// txnFilter decides, batch by batch in log order from the first segment, what
// a pass keeps of transactional batches and markers.
type txnFilter struct {
	txns *logTxns
	// seen holds the producers with a transactional data batch traversed
	// since their last control batch: their next marker still has data.
	seen map[int64]bool
	// horizon is the delete horizon given to markers found without data.
	horizon int64
	nowMs   int64
	// emptied collects aborted transactions whose data is all gone.
	emptied []AbortedTxn
}

// marker decides the fate of a transactional control batch, as Kafka's
// onControlBatchRead with KIP-534: a marker is kept while any batch of its
// transaction remains (the pass may be removing it now: the marker goes in a
// later pass); a marker without data gets a delete horizon of now +
// delete.retention.ms, and is removed by a pass after the horizon passed,
// unless it is its producer's last batch. It returns the bytes to write, nil
// to drop the batch.
func (f *txnFilter) marker(h records.Header, raw []byte) ([]byte, error) {
	pid := h.ProducerID
	hadData := f.seen[pid]
	delete(f.seen, pid)
	if hadData {
		return raw, nil
	}
	ct, err := records.ControlTypeOf(raw)
	if err != nil {
		return nil, fmt.Errorf("control batch at offset %d: %w", h.BaseOffset, err)
	}
	if ct == records.ControlAbort {
		f.emptied = append(f.emptied, AbortedTxn{ProducerID: pid, MarkerOffset: h.BaseOffset})
	}
	switch {
	case f.txns.retainedForProducer(h):
		return raw, nil
	case h.Attributes&deleteHorizonAttr == 0:
		return withDeleteHorizon(raw, f.horizon), nil
	case h.FirstTimestamp <= f.nowMs:
		return nil, nil
	}
	return raw, nil
}

// data notes a data batch of a producer and reports whether it belongs to
// an aborted transaction (then all its records go).
func (f *txnFilter) data(h records.Header) (aborted bool) {
	if !h.IsTransactional() || h.ProducerID < 0 {
		return false
	}
	f.seen[h.ProducerID] = true
	return f.txns.isAborted(h.ProducerID, h.BaseOffset)
}

// withDeleteHorizon returns a copy of the batch raw with the delete horizon
// attribute set and its first timestamp replaced by horizon (KIP-534), the
// CRC recomputed.
func withDeleteHorizon(raw []byte, horizon int64) []byte {
	const offCRC, offAttributes, offFirstTimestamp = 17, 21, 27
	out := append([]byte(nil), raw...)
	attrs := binary.BigEndian.Uint16(out[offAttributes:]) | deleteHorizonAttr
	binary.BigEndian.PutUint16(out[offAttributes:], attrs)
	binary.BigEndian.PutUint64(out[offFirstTimestamp:], uint64(horizon))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// addSaturating is a+b clamped to the int64 range, for b >= 0.
func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
