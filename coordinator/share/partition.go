package share

import (
	"time"
)

// State is the acquisition state of one in-flight record (Kafka's RecordState).
type State int8

// The record states of KIP-932.
const (
	// Available records may be acquired by the next ShareFetch.
	Available State = iota
	// Acquired records are delivered to one member and locked until it
	// acknowledges them or the lock expires.
	Acquired
	// Acknowledged records were accepted: finished.
	Acknowledged
	// Archived records were rejected, gap-acknowledged, control records,
	// or hit the delivery count limit: finished.
	Archived
)

func (s State) String() string {
	switch s {
	case Available:
		return "Available"
	case Acquired:
		return "Acquired"
	case Acknowledged:
		return "Acknowledged"
	case Archived:
		return "Archived"
	}
	return "Unknown"
}

// record is the state of one in-flight offset.
type record struct {
	state      State
	deliveries int16
	owner      string    // member id while Acquired
	expiry     time.Time // acquisition lock expiry while Acquired
}

// partition is one share-partition: the share group's view of one topic
// partition.
type partition struct {
	// start is the share-partition start offset (SPSO). Invariant: every
	// offset below start is finished (Acknowledged or Archived) or gone
	// from the log, and recs[0], if any, is not finished.
	start int64
	// recs[i] is the state of offset start+i. end() = start+len(recs) is
	// the first offset never acquired. Invariant: len(recs) <=
	// PartitionMaxRecordLocks except transiently inside acquire.
	recs []record
	// minExpiry is a lower bound of the lock expiry of every Acquired
	// record; zero when none is Acquired. Tick scans only once it passed.
	minExpiry time.Time

	// The persisted state's epochs and creation time (state.go):
	// stateEpoch moves at every admin reset, snapshotEpoch at every
	// snapshot written, leaderEpoch is the data partition's.
	stateEpoch, snapshotEpoch, leaderEpoch int32
	created                                int64 // ms
}

func (p *partition) end() int64 { return p.start + int64(len(p.recs)) }

// finished reports a state that lets the SPSO move past the record.
func (s State) finished() bool { return s == Acknowledged || s == Archived }

// advance moves the SPSO past the finished records at the front.
func (p *partition) advance() bool {
	n := 0
	for n < len(p.recs) && p.recs[n].state.finished() {
		n++
	}
	if n == 0 {
		return false
	}
	p.start += int64(n)
	p.recs = p.recs[n:]
	if len(p.recs) == 0 {
		p.recs = nil // let the backing array go
	}
	return true
}

// moveStart moves the SPSO forward to off (the log start moved past it,
// or an admin reset), forgetting the state of the offsets before it.
func (p *partition) moveStart(off int64) {
	if off <= p.start {
		return
	}
	if off >= p.end() {
		p.recs = nil
	} else {
		p.recs = p.recs[off-p.start:]
	}
	p.start = off
	p.advance()
}

// reset puts the SPSO at off and forgets every in-flight record (AlterShareGroupOffsets).
func (p *partition) reset(off int64) {
	p.start, p.recs, p.minExpiry = off, nil, time.Time{}
	p.stateEpoch++
}

// release makes an Acquired record Available again, or Archived once it
// was delivered limit times. It reports whether it became Available.
func (r *record) release(limit int32) bool {
	r.owner, r.expiry = "", time.Time{}
	if int32(r.deliveries) >= limit {
		r.state = Archived
		return false
	}
	r.state = Available
	return true
}

// fetchOffset is where the log should be read to acquire records: the
// first Available offset of the in-flight window, else the end of the
// window while it may grow (below hw, fewer than maxLocks in flight). ok
// is false when nothing can be acquired now.
func (p *partition) fetchOffset(hw int64, maxLocks int32) (int64, bool) {
	for i := range p.recs {
		if p.recs[i].state == Available {
			return p.start + int64(i), true
		}
	}
	if p.end() < hw && int32(len(p.recs)) < maxLocks {
		return p.end(), true
	}
	return 0, false
}

// Batch is the header of one record batch the caller read from the log
// for Acquire: its offsets First..Last, and whether it is a control batch.
type Batch struct {
	First, Last int64
	Control     bool
}

// Range is one run of acquired offsets with one delivery count, as
// ShareFetch's AcquiredRecords.
type Range struct {
	First, Last   int64
	DeliveryCount int16
}

// acquire locks Available offsets of batches (in offset order) for member,
// at most max of them, growing the in-flight window up to maxLocks.
// Control records are archived, never delivered; offsets missing between
// batches beyond the window (compacted away) are archived too.
func (p *partition) acquire(now time.Time, member string, batches []Batch, max int, maxLocks int32, limit int32, lock time.Duration) []Range {
	var out []Range
	count := 0
	expiry := now.Add(lock)
	for _, b := range batches {
		if b.Last < p.start {
			continue
		}
		if b.First > p.end() {
			if len(p.recs) == 0 {
				p.start = b.First // nothing in flight: skip the hole
			} else {
				for p.end() < b.First && int32(len(p.recs)) < maxLocks {
					p.recs = append(p.recs, record{state: Archived})
				}
				if p.end() < b.First {
					break
				}
			}
		}
		for o := max64(b.First, p.start); o <= b.Last && count < max; o++ {
			if o == p.end() {
				if int32(len(p.recs)) >= maxLocks {
					break
				}
				p.recs = append(p.recs, record{})
			}
			r := &p.recs[o-p.start]
			if r.state != Available {
				continue
			}
			if b.Control {
				r.state = Archived
				continue
			}
			if int32(r.deliveries) >= limit {
				r.state = Archived
				continue
			}
			r.state, r.owner, r.expiry = Acquired, member, expiry
			r.deliveries++
			count++
			if n := len(out); n > 0 && out[n-1].Last == o-1 && out[n-1].DeliveryCount == r.deliveries {
				out[n-1].Last = o
			} else {
				out = append(out, Range{First: o, Last: o, DeliveryCount: r.deliveries})
			}
		}
		if count >= max || int32(len(p.recs)) >= maxLocks && b.Last >= p.end() {
			break
		}
	}
	if count > 0 && (p.minExpiry.IsZero() || expiry.Before(p.minExpiry)) {
		p.minExpiry = expiry
	}
	p.advance()
	return out
}

// expire releases the records whose lock expired by now and reports
// whether any became Available or the SPSO moved.
func (p *partition) expire(now time.Time, limit int32) bool {
	if p.minExpiry.IsZero() || now.Before(p.minExpiry) {
		return false
	}
	changed := false
	var next time.Time
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Acquired {
			continue
		}
		if !now.Before(r.expiry) {
			r.release(limit)
			changed = true
			continue
		}
		if next.IsZero() || r.expiry.Before(next) {
			next = r.expiry
		}
	}
	p.minExpiry = next
	p.advance()
	return changed
}

// releaseMember releases every record member holds.
func (p *partition) releaseMember(member string, limit int32) bool {
	changed := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.owner == member {
			r.release(limit)
			changed = true
		}
	}
	if changed {
		p.advance()
	}
	return changed
}

// Acknowledgement types of ShareFetch/ShareAcknowledge batches (KIP-932, KIP-1222).
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// AckBatch is one acknowledgement batch: offsets First..Last with either
// one type for all of them or one type per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// validAckBatches checks the shape of a partition's batches: ordered, not
// overlapping, types in range (RENEW only when renew is allowed) and one
// type or one per offset. False means INVALID_REQUEST.
func validAckBatches(batches []AckBatch, renew bool) bool {
	maxType := AckReject
	if renew {
		maxType = AckRenew
	}
	prev := int64(-1)
	for _, b := range batches {
		if b.First < 0 || b.First > b.Last || b.First <= prev || len(b.Types) == 0 {
			return false
		}
		if len(b.Types) > 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return false
		}
		for _, t := range b.Types {
			if t < AckGap || t > maxType {
				return false
			}
		}
		prev = b.Last
	}
	return true
}

// ackResult is the outcome of acknowledging one partition.
type ackResult int8

const (
	ackOK           ackResult = iota
	ackInvalidState           // an offset is not Acquired by the member
	ackBeyondWindow           // an offset was never acquired
)

// acknowledge applies batches for member atomically: every offset at or
// above the SPSO must be Acquired by member, else nothing changes.
// Offsets below the SPSO are already finished and ignored.
func (p *partition) acknowledge(now time.Time, member string, batches []AckBatch, limit int32, lock time.Duration) (ackResult, bool) {
	for _, b := range batches {
		if b.Last >= p.end() {
			return ackBeyondWindow, false
		}
		for o := max64(b.First, p.start); o <= b.Last; o++ {
			r := &p.recs[o-p.start]
			if r.state != Acquired || r.owner != member {
				return ackInvalidState, false
			}
		}
	}
	released := false
	for _, b := range batches {
		for o := max64(b.First, p.start); o <= b.Last; o++ {
			r := &p.recs[o-p.start]
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[o-b.First]
			}
			switch t {
			case AckAccept:
				r.state, r.owner, r.expiry = Acknowledged, "", time.Time{}
			case AckRelease:
				if r.release(limit) {
					released = true
				}
			case AckRenew:
				r.expiry = now.Add(lock)
			default: // GAP, REJECT
				r.state, r.owner, r.expiry = Archived, "", time.Time{}
			}
		}
	}
	if p.advance() {
		released = true
	}
	return ackOK, released
}

// finishedInWindow counts finished records above the SPSO (for lag).
func (p *partition) finishedInWindow() int64 {
	var n int64
	for i := range p.recs {
		if p.recs[i].state.finished() {
			n++
		}
	}
	return n
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
