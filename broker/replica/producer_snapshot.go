package replica

import (
	"encoding/json"
	"fmt"
	"sort"
)

// snapshotEvery is how many bytes may be appended to a partition between
// producer-state snapshots, bounding the log a restart after a crash must
// replay to rebuild idempotence and transaction state.
const snapshotEvery = 64 << 20

// partitionSnapshot is the producer and transaction state of a partition as
// of Offset (the LEO then), stored by storage.Log.WriteProducerSnapshot.
type partitionSnapshot struct {
	Version   int                `json:"version"`
	Offset    int64              `json:"offset"`
	Producers []snapshotProducer `json:"producers"`
	Ongoing   map[int64]int64    `json:"ongoing,omitempty"`
	Aborted   []snapshotAborted  `json:"aborted,omitempty"`
}

type snapshotProducer struct {
	ID         int64      `json:"id"`
	Epoch      int16      `json:"epoch"`
	LastAppend int64      `json:"last_append_ms"`
	Batches    [][3]int64 `json:"batches"` // first sequence, last sequence, base offset
}

type snapshotAborted struct {
	ProducerID  int64 `json:"pid"`
	FirstOffset int64 `json:"first"`
	LastOffset  int64 `json:"last"`
}

// encodeSnapshotLocked captures the partition's state at offset. p.mu must be held.
func (p *Partition) encodeSnapshotLocked(offset int64) ([]byte, error) {
	s := partitionSnapshot{Version: 1, Offset: offset, Ongoing: p.mu.txns.ongoing}
	for id, st := range p.mu.producers {
		sp := snapshotProducer{ID: id, Epoch: st.epoch, LastAppend: st.lastAppendMs}
		for _, b := range st.batches {
			sp.Batches = append(sp.Batches, [3]int64{int64(b.firstSeq), int64(b.lastSeq), b.baseOffset})
		}
		s.Producers = append(s.Producers, sp)
	}
	sort.Slice(s.Producers, func(i, j int) bool { return s.Producers[i].ID < s.Producers[j].ID })
	for _, a := range p.mu.txns.aborted {
		s.Aborted = append(s.Aborted, snapshotAborted{a.producerID, a.firstOffset, a.lastOffset})
	}
	return json.Marshal(&s)
}

// decodeSnapshotLocked loads a snapshot into the partition's empty state.
func (p *Partition) decodeSnapshotLocked(data []byte) (int64, error) {
	var s partitionSnapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return 0, fmt.Errorf("decoding producer snapshot: %w", err)
	}
	if s.Version != 1 {
		return 0, fmt.Errorf("producer snapshot version %d", s.Version)
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
		p.mu.txns.aborted = append(p.mu.txns.aborted, abortedTxn{a.ProducerID, a.FirstOffset, a.LastOffset})
	}
	return s.Offset, nil
}

// snapshotLocked writes the state as of the current LEO. p.mu must be held.
func (p *Partition) snapshotLocked() error {
	leo := p.Log.LogEndOffset()
	data, err := p.encodeSnapshotLocked(leo)
	if err != nil {
		return err
	}
	p.mu.sinceSnapshot = 0
	return p.Log.WriteProducerSnapshot(leo, data)
}
