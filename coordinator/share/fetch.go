package share

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// sessionKey identifies a share session: on a single node a member has at
// most one (Kafka keys them by group, member and broker).
type sessionKey struct{ group, member string }

// session is a share session (KIP-932's ShareSession): the partitions a
// member fetches from this broker and the epoch its next request carries.
type session struct {
	// epoch is the epoch the next ShareFetch/ShareAcknowledge must carry:
	// 1 after the opening request (epoch 0), then one more per success,
	// wrapping from MaxInt32 to 1.
	epoch int32
	parts map[TopicPartition]struct{}
}

func (s *session) bump() {
	s.epoch++
	if s.epoch < 1 {
		s.epoch = 1
	}
}

// OpenSession starts a member's share session (ShareFetch at epoch 0),
// replacing any it had, with parts. It creates the group if needed: a
// share fetch does not require membership (as in Kafka).
func (c *Coordinator) OpenSession(group, member string, parts []TopicPartition) {
	c.groupOrCreate(group)
	s := &session{epoch: 1, parts: map[TopicPartition]struct{}{}}
	for _, tp := range parts {
		s.parts[tp] = struct{}{}
	}
	c.sessions[sessionKey{group, member}] = s
}

// UpdateSession checks epoch against a member's session and applies an
// incremental ShareFetch: add joins the session, forget leaves it. It
// returns SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH or 0.
func (c *Coordinator) UpdateSession(group, member string, epoch int32, add, forget []TopicPartition) int16 {
	s := c.sessions[sessionKey{group, member}]
	switch {
	case s == nil:
		return kerr.ShareSessionNotFound.Code
	case s.epoch != epoch:
		return kerr.InvalidShareSessionEpoch.Code
	}
	for _, tp := range add {
		s.parts[tp] = struct{}{}
	}
	for _, tp := range forget {
		delete(s.parts, tp)
	}
	s.bump()
	return 0
}

// CheckAckSession checks the epoch of a ShareAcknowledge (> 0) and moves
// the session to the next epoch on success.
func (c *Coordinator) CheckAckSession(group, member string, epoch int32) int16 {
	return c.UpdateSession(group, member, epoch, nil, nil)
}

// HasSession reports whether the member has a share session.
func (c *Coordinator) HasSession(group, member string) bool {
	return c.sessions[sessionKey{group, member}] != nil
}

// CloseSession ends a member's share session (epoch -1): the records it
// still holds in the session's partitions become available again.
func (c *Coordinator) CloseSession(group, member string) {
	k := sessionKey{group, member}
	s := c.sessions[k]
	if s == nil {
		return
	}
	delete(c.sessions, k)
	g := c.groups[group]
	if g == nil {
		return
	}
	limit := c.deliveryLimit(group)
	for tp := range s.parts {
		if p := g.parts[tp]; p != nil && p.releaseMember(member, limit) {
			c.changes++
			c.markDirty(group, tp)
		}
	}
}

// SessionPartitions returns the partitions of a member's session, sorted.
func (c *Coordinator) SessionPartitions(group, member string) []TopicPartition {
	s := c.sessions[sessionKey{group, member}]
	if s == nil {
		return nil
	}
	out := make([]TopicPartition, 0, len(s.parts))
	for tp := range s.parts {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := string(out[i].TopicID[:]), string(out[j].TopicID[:]); a != b {
			return a < b
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// partitionFor returns the group's share-partition, initializing its SPSO
// from share.auto.offset.reset (latest: hw; earliest: logStart) on first
// use, and moving it up to logStart when the log start passed it.
func (c *Coordinator) partitionFor(group string, tp TopicPartition, logStart, hw int64) *partition {
	g := c.groupOrCreate(group)
	p := g.parts[tp]
	if p == nil && c.cfg.LoadOnDemand && !c.absent[stateKey{group, tp}] {
		return nil // its persisted state is not read yet (ondemand.go)
	}
	if p == nil {
		delete(c.absent, stateKey{group, tp})
		start := hw
		if c.startsEarliest(group) {
			start = logStart
		}
		p = &partition{start: start}
		g.parts[tp] = p
		c.markDirty(group, tp) // Kafka's InitializeShareGroupState
	}
	if p.start < logStart {
		p.moveStart(logStart)
	}
	return p
}

// FetchOffset returns where the caller should read the partition's log
// (bounded by hw: the high watermark, or the last stable offset for
// read_committed) to acquire records for the group, and false when
// nothing can be acquired now.
func (c *Coordinator) FetchOffset(group string, tp TopicPartition, logStart, hw int64) (int64, bool) {
	p := c.partitionFor(group, tp, logStart, hw)
	if p == nil {
		return 0, false
	}
	return p.fetchOffset(hw, c.cfg.PartitionMaxRecordLocks)
}

// Acquire locks for member up to max Available records of batches (read
// from the log at FetchOffset, in offset order) and returns the acquired
// ranges. The caller must have called FetchOffset for tp in this same
// serialised section.
func (c *Coordinator) Acquire(now time.Time, group, member string, tp TopicPartition, batches []Batch, max int) []Range {
	g := c.groups[group]
	if g == nil || g.parts[tp] == nil || max <= 0 {
		return nil
	}
	lock := time.Duration(c.LockDurationMs(group)) * time.Millisecond
	return g.parts[tp].acquire(now, member, batches, max, c.cfg.PartitionMaxRecordLocks, c.deliveryLimit(group), lock)
}

// Acknowledge applies a member's acknowledgement batches for one
// partition, all or nothing. renew allows the RENEW type (a v2 request
// with IsRenewAck). It returns a Kafka error code: INVALID_REQUEST for
// malformed batches or offsets never delivered, INVALID_RECORD_STATE for
// an offset not acquired by member, or 0.
func (c *Coordinator) Acknowledge(now time.Time, group, member string, tp TopicPartition, batches []AckBatch, renew bool) int16 {
	if !validAckBatches(batches, renew) {
		return kerr.InvalidRequest.Code
	}
	g := c.groups[group]
	if g == nil || g.parts[tp] == nil {
		return kerr.InvalidRecordState.Code
	}
	lock := time.Duration(c.LockDurationMs(group)) * time.Millisecond
	res, changed := g.parts[tp].acknowledge(now, member, batches, c.deliveryLimit(group), lock)
	if changed {
		c.changes++
	}
	if res == ackOK {
		c.markDirty(group, tp)
	}
	switch res {
	case ackBeyondWindow:
		return kerr.InvalidRequest.Code
	case ackInvalidState:
		return kerr.InvalidRecordState.Code
	}
	return 0
}

// MaxFetchRecords is the acquisition limit of a ShareFetch without MaxRecords.
func (c *Coordinator) MaxFetchRecords() int32 { return c.cfg.MaxFetchRecords }

// RecordStates returns the state and delivery count of offsets from..to
// of a share-partition, for tests and debugging. Offsets below the SPSO
// report Archived (finished; their exact state is forgotten) and offsets
// beyond the window Available, both with count 0.
func (c *Coordinator) RecordStates(group string, tp TopicPartition, from, to int64) ([]State, []int16) {
	var st []State
	var dc []int16
	var p *partition
	if g := c.groups[group]; g != nil {
		p = g.parts[tp]
	}
	for o := from; o <= to; o++ {
		switch {
		case p == nil || o >= p.end():
			st, dc = append(st, Available), append(dc, 0)
		case o < p.start:
			st, dc = append(st, Archived), append(dc, 0)
		default:
			r := p.recs[o-p.start]
			st, dc = append(st, r.state), append(dc, r.deliveries)
		}
	}
	return st, dc
}
