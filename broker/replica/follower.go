package replica

// The follower side of a partition: what a replica fetcher (fetcher.go)
// does to the log, each step under the partition lock and only while the
// partition still follows at the leader epoch the fetcher works for, so a
// fetch answer that arrives after a MakeLeader or a newer MakeFollower is
// dropped. Appends keep the leader's offsets and epochs
// (storage.Log.AppendAsFollower) and rebuild the idempotent producer and
// transaction state from the batches exactly as the leader builds it, so
// a follower that becomes leader de-duplicates retries and knows the LSO and
// the aborted transactions. Truncation (KIP-101) rebuilds that state from
// the newest producer snapshot below the new log end.

import (
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
)

// errStaleFollower reports fetcher work for a role or epoch that is over.
var errStaleFollower = errors.New("partition no longer follows at this leader epoch")

// followingLocked reports whether p follows at leader epoch epoch. p.mu must be held.
func (p *Partition) followingLocked(epoch int32) bool {
	return !p.mu.closed && p.mu.repl.kind == replFollower && p.epoch.Load() == epoch
}

// appendAsFollower writes batches fetched from the leader at epoch and
// moves the HW to min(leaderHW, LEO) (never backwards). It returns the new
// log end offset.
func (p *Partition) appendAsFollower(epoch int32, batches []byte, leaderHW int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(epoch) {
		return 0, errStaleFollower
	}
	if len(batches) > 0 {
		batches = wholeBatches(batches)
	}
	if len(batches) > 0 {
		info, err := p.Log.AppendAsFollower(batches)
		if err != nil {
			return 0, err
		}
		if err := p.observeLocked(batches); err != nil {
			p.logger.Error("follower batches not understood; producer state may be incomplete", "topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
		}
		p.maybeSnapshotLocked(info.Bytes)
	}
	leo := p.Log.LogEndOffset()
	if hw := min(leaderHW, leo); hw > p.hw.Load() {
		p.setHWLocked(hw)
	} else {
		p.wakeLocked()
	}
	return leo, nil
}

// wholeBatches trims a partial batch off the end of a fetch answer (a
// leader may cut the last batch at the byte limit).
func wholeBatches(data []byte) []byte {
	n := 0
	for n < len(data) {
		h, err := records.ParseHeader(data[n:])
		if err != nil || h.TotalSize() > len(data)-n {
			break
		}
		n += h.TotalSize()
	}
	return data[:n]
}

// observeLocked applies appended batches to the producer and transaction
// state, as rebuildState does on load. p.mu must be held.
func (p *Partition) observeLocked(data []byte) error {
	for len(data) > 0 {
		h, err := records.ParseHeader(data)
		if err != nil || h.TotalSize() > len(data) {
			return fmt.Errorf("bad batch: %v", err)
		}
		var ct records.ControlType
		if h.IsControl() {
			if ct, err = records.ControlTypeOf(data[:h.TotalSize()]); err != nil {
				return fmt.Errorf("control batch at offset %d: %w", h.BaseOffset, err)
			}
			p.mu.producers.observeMarker(h)
		} else if h.ProducerID >= 0 {
			p.mu.producers.update(h, h.BaseOffset)
		}
		n := len(p.mu.txns.aborted)
		p.mu.txns.observe(h, h.BaseOffset, h.LastOffset(), ct)
		p.indexAbortsLocked(n)
		data = data[h.TotalSize():]
	}
	return nil
}

// truncateAsFollower cuts the log at offset (KIP-101), lowers the HW to
// the new log end if needed and rebuilds the producer and transaction state.
func (p *Partition) truncateAsFollower(epoch int32, offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(epoch) {
		return errStaleFollower
	}
	if leo := p.Log.LogEndOffset(); offset >= leo {
		// Nothing to cut; an epoch this replica assigned at its log
		// end as leader, with no record after it, goes.
		return p.Log.TruncateTo(leo)
	}
	if err := p.Log.TruncateTo(offset); err != nil {
		return err
	}
	p.logger.Info("truncated follower log", "topic", p.Topic.Meta.Name, "partition", p.Index, "offset", offset)
	return p.afterTruncateLocked(false)
}

// truncateFullyAsFollower empties the log and restarts it at start: the
// leader's log starts after this follower's log end.
func (p *Partition) truncateFullyAsFollower(epoch int32, start int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(epoch) {
		return errStaleFollower
	}
	if err := p.Log.TruncateFullyAndStartAt(start); err != nil {
		return err
	}
	p.logger.Info("emptied follower log; it restarts at the leader's log start", "topic", p.Topic.Meta.Name, "partition", p.Index, "offset", start)
	return p.afterTruncateLocked(true)
}

// afterTruncateLocked rebuilds state after the log end moved back; full:
// the log was emptied and no snapshot applies. p.mu must be held.
func (p *Partition) afterTruncateLocked(full bool) error {
	leo := p.Log.LogEndOffset()
	if hw := p.hw.Load(); hw > leo {
		p.hw.Store(leo)
	}
	if p.hw.Load() < p.Log.LogStartOffset() {
		p.hw.Store(p.Log.LogStartOffset())
	}
	p.mu.producers = producerStates{}
	p.mu.txns = partitionTxns{}
	p.mu.sinceSnapshot = 0
	maxSnap := leo
	if full {
		maxSnap = -1 // every snapshot describes the old log: delete them
	}
	from := p.loadSnapshotLocked(maxSnap)
	if err := p.rebuildState(from); err != nil {
		return fmt.Errorf("rebuilding producer state of %s-%d after truncation: %w", p.Topic.Meta.Name, p.Index, err)
	}
	p.lso.Store(p.mu.txns.lastStable(p.hw.Load()))
	p.wakeStateLocked()
	return nil
}

// raiseLogStart follows the leader's log start offset (retention or
// DeleteRecords on the leader), within this log.
func (p *Partition) raiseLogStart(epoch int32, leaderLogStart int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(epoch) || leaderLogStart <= p.Log.LogStartOffset() || leaderLogStart > p.hw.Load() {
		return
	}
	if err := p.Log.SetLogStartOffset(leaderLogStart); err != nil && !errors.Is(err, storage.ErrClosed) {
		p.logger.Warn("following the leader's log start offset failed", "topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
	}
}
