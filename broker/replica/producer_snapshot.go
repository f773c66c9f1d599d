package replica

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kbroker/kbroker/storage"
)

// snapshotEvery is how many bytes may be appended to a partition between
// producer-state snapshots, bounding the log a restart after a crash must
// replay to rebuild idempotence and transaction state.
const snapshotEvery = 64 << 20

// Producer-state snapshots are Kafka's (storage.EncodeProducerSnapshot), so
// that a log dir moves between Kafka 3.9 and kbroker with its state: per
// producer its epoch, its last data batch and the first offset of its open
// transaction. The aborted transactions, which Kafka keeps in .txnindex
// files, go to the same files (storage.Log.WriteTxnIndexes), written before
// the snapshot that relies on them. As in Kafka, a producer's earlier
// batches are not in the snapshot: after a restart only a retry of its last
// batch is recognised as a duplicate.

// snapshotEntriesLocked returns the partition's producer state in Kafka's
// snapshot format, by producer id. p.mu must be held.
func (p *Partition) snapshotEntriesLocked() []storage.ProducerSnapshotEntry {
	out := make([]storage.ProducerSnapshotEntry, 0, len(p.mu.producers))
	seen := make(map[int64]bool, len(p.mu.producers))
	for id, st := range p.mu.producers {
		seen[id] = true
		e := storage.ProducerSnapshotEntry{ProducerID: id, ProducerEpoch: st.epoch, LastSequence: -1, LastOffset: -1,
			Timestamp: st.lastAppendMs, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
		if n := len(st.batches); n > 0 {
			b := st.batches[n-1]
			e.LastSequence = b.lastSeq
			e.OffsetDelta = seqDelta(b.firstSeq, b.lastSeq)
			e.LastOffset = b.baseOffset + int64(e.OffsetDelta)
		}
		if first, ok := p.mu.txns.ongoing[id]; ok {
			e.CurrentTxnFirstOffset = first
		}
		out = append(out, e)
	}
	for id, first := range p.mu.txns.ongoing {
		if !seen[id] { // not expected (an open transaction has a batch), but never lose it
			out = append(out, storage.ProducerSnapshotEntry{ProducerID: id, LastSequence: -1, LastOffset: -1,
				CoordinatorEpoch: -1, CurrentTxnFirstOffset: first})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// seqDelta is last - first for sequences that wrap at 2^31.
func seqDelta(first, last int32) int32 {
	d := int64(last) - int64(first)
	if d < 0 {
		d += 1 << 31
	}
	return int32(d)
}

// seqMinus is seq - delta, wrapping below 0 to 2^31 - 1 as sequences do.
func seqMinus(seq, delta int32) int32 {
	s := int64(seq) - int64(delta)
	if s < 0 {
		s += 1 << 31
	}
	return int32(s)
}

// loadSnapshotEntriesLocked installs Kafka-format producer entries of a
// snapshot at offset off and the aborted transactions of the log's
// .txnindex files below off into the partition's empty state.
func (p *Partition) loadSnapshotEntriesLocked(entries []storage.ProducerSnapshotEntry, off int64) error {
	aborted, err := p.Log.TxnIndex(off)
	if err != nil {
		return err
	}
	for _, e := range entries {
		st := &producerState{epoch: e.ProducerEpoch, lastAppendMs: e.Timestamp}
		if e.LastOffset >= 0 {
			if e.OffsetDelta < 0 || int64(e.OffsetDelta) > e.LastOffset {
				return fmt.Errorf("producer %d: offset delta %d of last offset %d", e.ProducerID, e.OffsetDelta, e.LastOffset)
			}
			st.batches = []batchMeta{{firstSeq: seqMinus(e.LastSequence, e.OffsetDelta), lastSeq: e.LastSequence,
				baseOffset: e.LastOffset - int64(e.OffsetDelta)}}
		}
		p.mu.producers[e.ProducerID] = st
		if e.CurrentTxnFirstOffset >= 0 {
			if p.mu.txns.ongoing == nil {
				p.mu.txns.ongoing = map[int64]int64{}
			}
			p.mu.txns.ongoing[e.ProducerID] = e.CurrentTxnFirstOffset
		}
	}
	for _, a := range aborted {
		p.mu.txns.aborted = append(p.mu.txns.aborted, abortedTxn{producerID: a.ProducerID, firstOffset: a.FirstOffset,
			lastOffset: a.LastOffset, lso: a.LastStableOffset})
	}
	return nil
}

// loadSnapshotLocked loads the newest usable producer snapshot at or below
// maxOffset into the partition's empty state and returns the offset the log
// must be replayed from (the snapshot's, or the log start). A snapshot (or
// transaction index) that cannot be used leaves the state empty, with one
// log line, and the whole log is replayed. p.mu must be held.
func (p *Partition) loadSnapshotLocked(maxOffset int64) int64 {
	from := p.Log.LogStartOffset()
	snap, ok := p.Log.LatestProducerSnapshot(maxOffset)
	if !ok {
		return from
	}
	var err error
	if snap.Legacy != nil {
		err = p.decodeLegacySnapshotLocked(snap.Legacy)
	} else {
		err = p.loadSnapshotEntriesLocked(snap.Producers, snap.Offset)
	}
	if err != nil {
		p.logger.Warn("producer snapshot or transaction index unusable; producer state is rebuilt from the whole log",
			"topic", p.Topic.Meta.Name, "partition", p.Index, "snapshot_offset", snap.Offset, "err", err)
		p.mu.producers = producerStates{}
		p.mu.txns = partitionTxns{}
		return from
	}
	return max(from, snap.Offset)
}

// legacySnapshot is the producer and transaction state in the JSON format
// kbroker wrote before it wrote Kafka's; read so that an upgrade keeps it.
type legacySnapshot struct {
	Version   int               `json:"version"`
	Producers []legacyProducer  `json:"producers"`
	Ongoing   map[int64]int64   `json:"ongoing,omitempty"`
	Aborted   []legacyAbortedTx `json:"aborted,omitempty"`
}

type legacyProducer struct {
	ID         int64      `json:"id"`
	Epoch      int16      `json:"epoch"`
	LastAppend int64      `json:"last_append_ms"`
	Batches    [][3]int64 `json:"batches"` // first sequence, last sequence, base offset
}

type legacyAbortedTx struct {
	ProducerID  int64 `json:"pid"`
	FirstOffset int64 `json:"first"`
	LastOffset  int64 `json:"last"`
}

// decodeLegacySnapshotLocked loads a legacy snapshot into the partition's
// empty state.
func (p *Partition) decodeLegacySnapshotLocked(data []byte) error {
	var s legacySnapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("decoding producer snapshot: %w", err)
	}
	if s.Version != 1 {
		return fmt.Errorf("producer snapshot version %d", s.Version)
	}
	for _, sp := range s.Producers {
		st := &producerState{epoch: sp.Epoch, lastAppendMs: sp.LastAppend}
		for _, b := range sp.Batches {
			st.batches = append(st.batches, batchMeta{firstSeq: int32(b[0]), lastSeq: int32(b[1]), baseOffset: b[2]})
		}
		p.mu.producers[sp.ID] = st
	}
	p.mu.txns.ongoing = s.Ongoing
	for _, a := range s.Aborted {
		p.mu.txns.aborted = append(p.mu.txns.aborted, abortedTxn{producerID: a.ProducerID, firstOffset: a.FirstOffset, lastOffset: a.LastOffset})
	}
	return nil
}

// indexAbortsLocked appends the aborted transactions observed since the
// list had n entries to the log's transaction index, as Kafka does when it
// writes an ABORT marker. A failure is logged: the next snapshot rewrites
// the files from the state. p.mu must be held.
func (p *Partition) indexAbortsLocked(n int) {
	for _, a := range p.mu.txns.aborted[n:] {
		if err := p.Log.AppendTxnIndex(a.indexEntry()); err != nil {
			p.logger.Warn("transaction index append failed; the next producer snapshot rewrites it",
				"topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
		}
	}
}

// indexEntry is a in Kafka's transaction index format.
func (a abortedTxn) indexEntry() storage.TxnIndexEntry {
	return storage.TxnIndexEntry{ProducerID: a.producerID, FirstOffset: a.firstOffset, LastOffset: a.lastOffset, LastStableOffset: a.lso}
}

// snapshotLocked writes the state as of the current LEO: the transaction
// indexes, then the snapshot that relies on them, fsynced before it
// returns. p.mu must be held.
func (p *Partition) snapshotLocked() error { return p.writeSnapshotLocked(p.Log.WriteProducerSnapshot) }

// maybeSnapshotLocked counts n appended bytes and, every snapshotEvery
// bytes, writes the snapshot of snapshotLocked with its fsync deferred to
// the log dir's background goroutine (storage's
// WriteProducerSnapshotDeferred), off the append path. A failure is
// logged: the next one tries again. p.mu must be held.
func (p *Partition) maybeSnapshotLocked(n int) {
	if p.mu.sinceSnapshot += n; p.mu.sinceSnapshot < snapshotEvery {
		return
	}
	if err := p.writeSnapshotLocked(p.Log.WriteProducerSnapshotDeferred); err != nil {
		p.logger.Warn("producer snapshot failed", "topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
	}
}

// snapshotAtCloseLocked is snapshotLocked for the snapshot of a shutdown,
// written just before the log dirs close: not fsynced on its own when the
// dir's Close syncs its whole file system (WriteProducerSnapshotAtClose).
func (p *Partition) snapshotAtCloseLocked() error {
	return p.writeSnapshotLocked(p.Log.WriteProducerSnapshotAtClose)
}

// writeSnapshotLocked writes the transaction indexes and, with write, the
// producer snapshot at the log end. p.mu must be held.
func (p *Partition) writeSnapshotLocked(write func(int64, []storage.ProducerSnapshotEntry) error) error {
	leo := p.Log.LogEndOffset()
	aborted := make([]storage.TxnIndexEntry, len(p.mu.txns.aborted))
	for i, a := range p.mu.txns.aborted {
		aborted[i] = a.indexEntry()
	}
	if err := p.Log.WriteTxnIndexes(aborted); err != nil {
		return err
	}
	p.mu.sinceSnapshot = 0
	return write(leo, p.snapshotEntriesLocked())
}
