// Package isr holds the rules of Kafka's in-sync replication for one
// partition, as pure state: on the leader, every follower's progress, the
// in-sync replica set (ISR) and the high watermark (HW), and when an acks=all
// produce is done; on a follower, where to truncate after a leader change
// (KIP-101, KIP-279).
//
// Nothing here does I/O, starts a goroutine or reads a clock: time arrives as
// arguments, and ISR changes leave as proposals that the caller writes (to
// ZooKeeper with a version check, or with AlterPartition) and then reports
// back with Committed or Rejected. That keeps ISR shrink during an acks=all
// wait, or a follower racing a leader change, deterministic to test.
package isr

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Config holds the replication settings of one partition.
type Config struct {
	// LagTimeMax is replica.lag.time.max.ms: a follower that has not caught
	// up to the leader's log end for this long leaves the ISR.
	LagTimeMax time.Duration
	// MinInsyncReplicas is min.insync.replicas: acks=all needs at least
	// this many ISR members.
	MinInsyncReplicas int
}

// follower is the leader's view of one follower replica.
type follower struct {
	// leo is the follower's log end offset: the offset of its last fetch.
	leo int64
	// lastCaughtUp is the last time the follower had fetched up to the
	// leader's log end offset of that moment (Kafka's lastCaughtUpTimeMs).
	lastCaughtUp time.Time
	// lastFetchLeaderLEO and lastFetchTime are the leader's log end offset
	// and the time of the follower's previous fetch.
	lastFetchLeaderLEO int64
	lastFetchTime      time.Time
}

// Change is a proposed ISR; the caller persists it and reports the outcome.
type Change struct {
	ISR []int32
	// Shrink is true when the change removes members (it never also adds).
	Shrink bool
}

// Leader is the replication state of a partition on its leader.
type Leader struct {
	cfg   Config
	self  int32
	epoch int32
	// epochStartOffset is the leader's log end offset when it became leader;
	// a follower joins the ISR only once it has reached it, so that a new ISR
	// member holds everything the previous leader may have acknowledged.
	epochStartOffset int64
	replicas         []int32
	// isr is the committed ISR. Invariant: it holds self.
	isr []int32
	// pending is a proposed ISR not yet committed. While it is in flight the
	// HW waits on the maximal ISR (isr ∪ pending), so that neither a shrink
	// nor an expansion lets the HW pass data a member lacks.
	pending   *Change
	followers map[int32]*follower
	leo       int64
	// hw is the high watermark. Invariants: hw ≤ leo of every member of the
	// maximal ISR; hw never decreases while this broker leads.
	hw int64
}

// NewLeader starts leading with leader epoch epoch. leo is the local log end
// offset and hw the high watermark the log had (a new leader never lowers it).
// isr is the committed ISR from the partition state; replicas the assignment.
func NewLeader(cfg Config, self, epoch int32, replicas, isr []int32, leo, hw int64, now time.Time) (*Leader, error) {
	if !slices.Contains(isr, self) {
		return nil, fmt.Errorf("leader %d is not in the ISR %v", self, isr)
	}
	if hw > leo {
		hw = leo
	}
	l := &Leader{
		cfg: cfg, self: self, epoch: epoch, epochStartOffset: leo,
		replicas: slices.Clone(replicas), isr: slices.Clone(isr),
		followers: map[int32]*follower{}, leo: leo, hw: hw,
	}
	for _, r := range replicas {
		if r == self {
			continue
		}
		// Kafka starts every follower as caught up at the leadership
		// change, so an ISR member gets replica.lag.time.max.ms to fetch.
		f := &follower{leo: -1, lastFetchLeaderLEO: -1}
		if slices.Contains(isr, r) {
			f.lastCaughtUp = now
		}
		l.followers[r] = f
	}
	l.advanceHW()
	return l, nil
}

// Reelect is the state of the next leader epoch of this same leader (the
// controller changed the ISR or the assignment: a controlled shutdown of a
// follower bumps the epoch of every partition it follows); the caller
// checks that no other leader came between. As Kafka's
// resetReplicaState for a re-elected leader, a follower keeps the log end
// offset it last reported: its log still holds what it fetched from this
// leader, which truncated nothing, so the HW need not wait for every
// follower to fetch again in the new epoch. An ISR member counts as caught
// up now, a follower outside the ISR as never. leo is the log end offset at
// the new epoch's start.
func (l *Leader) Reelect(cfg Config, epoch int32, replicas, isr []int32, leo int64, now time.Time) (*Leader, error) {
	n, err := NewLeader(cfg, l.self, epoch, replicas, isr, leo, l.hw, now)
	if err != nil {
		return nil, err
	}
	for id, f := range n.followers {
		if old, ok := l.followers[id]; ok && old.leo <= leo {
			f.leo, f.lastFetchLeaderLEO = old.leo, leo
			if slices.Contains(isr, id) {
				f.lastFetchTime = now
			}
		}
	}
	n.advanceHW()
	return n, nil
}

// SetMinInsyncReplicas applies a changed min.insync.replicas (a topic
// config change while leading); the next CheckAppend and Acked use it.
func (l *Leader) SetMinInsyncReplicas(n int) { l.cfg.MinInsyncReplicas = n }

// Epoch is the leader epoch this state was created for.
func (l *Leader) Epoch() int32 { return l.epoch }

// HW is the high watermark.
func (l *Leader) HW() int64 { return l.hw }

// ISR is the committed in-sync replica set.
func (l *Leader) ISR() []int32 { return slices.Clone(l.isr) }

// Pending is the ISR change in flight, or nil.
func (l *Leader) Pending() *Change { return l.pending }

// FollowerLEO is the last log end offset follower id reported, or -1.
func (l *Leader) FollowerLEO(id int32) int64 {
	if f, ok := l.followers[id]; ok {
		return f.leo
	}
	return -1
}

// maximalISR is isr ∪ pending.ISR; the caller must not modify it (it is
// l.isr itself while no change is pending: every follower fetch asks).
func (l *Leader) maximalISR() []int32 {
	if l.pending == nil {
		return l.isr
	}
	out := slices.Clone(l.isr)
	for _, r := range l.pending.ISR {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// advanceHW moves the HW to the smallest log end offset of the maximal ISR,
// never backwards. It reports whether the HW moved.
func (l *Leader) advanceHW() bool {
	hw := l.leo
	for _, r := range l.maximalISR() {
		if r == l.self {
			continue
		}
		f := l.followers[r]
		if f == nil || f.leo < hw {
			if f == nil || f.leo < 0 {
				return false
			}
			hw = f.leo
		}
	}
	if hw > l.hw {
		l.hw = hw
		return true
	}
	return false
}

// Appended records that the leader's log now ends at leo. It reports whether
// the HW moved (it does at once when the leader is alone in the ISR).
func (l *Leader) Appended(leo int64) bool {
	if leo > l.leo {
		l.leo = leo
	}
	return l.advanceHW()
}

// Update is what a follower fetch changed.
type Update struct {
	// HWMoved reports that the HW advanced: parked acks=all produces and
	// fetches may complete.
	HWMoved bool
	// Propose is an ISR expansion to persist, or nil.
	Propose *Change
}

// FollowerFetch records that follower id fetched from fetchOffset at now,
// which means it holds everything below fetchOffset. It applies Kafka's
// caught-up rule: a fetch at the leader's log end catches the follower up
// now; a fetch at least as far as the leader's log end of the previous fetch
// catches it up as of that previous fetch.
func (l *Leader) FollowerFetch(id int32, fetchOffset int64, now time.Time) (Update, error) {
	f, ok := l.followers[id]
	if !ok {
		return Update{}, fmt.Errorf("replica %d is not assigned to this partition (replicas %v): %w", id, l.replicas, kerr.NotLeaderForPartition)
	}
	if fetchOffset > l.leo {
		return Update{}, fmt.Errorf("replica %d fetched offset %d beyond the log end %d: %w", id, fetchOffset, l.leo, kerr.OffsetOutOfRange)
	}
	switch {
	case fetchOffset >= l.leo:
		f.lastCaughtUp = now
	case fetchOffset >= f.lastFetchLeaderLEO && f.lastFetchLeaderLEO >= 0:
		if f.lastFetchTime.After(f.lastCaughtUp) {
			f.lastCaughtUp = f.lastFetchTime
		}
	}
	f.leo = fetchOffset
	f.lastFetchLeaderLEO = l.leo
	f.lastFetchTime = now
	u := Update{HWMoved: l.advanceHW()}
	if l.pending == nil && !slices.Contains(l.isr, id) && f.leo >= l.hw && f.leo >= l.epochStartOffset {
		l.pending = &Change{ISR: append(slices.Clone(l.isr), id)}
		u.Propose = l.pending
	}
	return u, nil
}

// Tick proposes to drop the followers that are behind the leader's log end
// and have not caught up within LagTimeMax of now, unless a change is
// already in flight.
func (l *Leader) Tick(now time.Time) *Change {
	if l.pending != nil {
		return nil
	}
	var out []int32
	for _, r := range l.isr {
		if r == l.self {
			continue
		}
		f := l.followers[r]
		if f == nil || (f.leo != l.leo && now.Sub(f.lastCaughtUp) > l.cfg.LagTimeMax) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	keep := slices.DeleteFunc(slices.Clone(l.isr), func(r int32) bool { return slices.Contains(out, r) })
	l.pending = &Change{ISR: keep, Shrink: true}
	return l.pending
}

// Committed reports that isr was persisted as the partition's ISR (the
// pending change, or one the controller made). It reports whether the HW
// moved: a shrink can let it advance.
func (l *Leader) Committed(isr []int32) bool {
	l.pending = nil
	if slices.Contains(isr, l.self) {
		l.isr = slices.Clone(isr)
	}
	return l.advanceHW()
}

// Rejected reports that the pending change was not persisted (a stale
// version); the next fetch or tick may propose again.
func (l *Leader) Rejected() { l.pending = nil }

// CheckAppend is checked before an acks=all append: with fewer committed ISR
// members than min.insync.replicas it is NOT_ENOUGH_REPLICAS and nothing is
// written.
func (l *Leader) CheckAppend(acks int16) error {
	if acks == -1 && len(l.isr) < l.cfg.MinInsyncReplicas {
		return fmt.Errorf("ISR %v has fewer than min.insync.replicas=%d members: %w", l.isr, l.cfg.MinInsyncReplicas, kerr.NotEnoughReplicas)
	}
	return nil
}

// Acked reports whether an acks=all produce whose batch ends just below
// endOffset is done, and how: done once the HW covers it, with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
// min.insync.replicas meanwhile (the data stays; the client may retry).
func (l *Leader) Acked(endOffset int64) (bool, error) {
	if l.hw < endOffset {
		return false, nil
	}
	if len(l.isr) < l.cfg.MinInsyncReplicas {
		return true, fmt.Errorf("ISR %v shrank below min.insync.replicas=%d: %w", l.isr, l.cfg.MinInsyncReplicas, kerr.NotEnoughReplicasAfterAppend)
	}
	return true, nil
}
