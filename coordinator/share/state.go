package share

// Persistence of share-partition state, as Kafka's share coordinator keeps
// it in the compacted internal topic __share_group_state: one record per
// share-partition, keyed by (group, topic id, partition), whose value is
// the partition's whole state (ShareSnapshotValue): the SPSO, the state
// epoch, the leader epoch and the in-flight window as runs of
// (first, last, delivery state, delivery count). Only the finished states
// and delivery counts matter across a restart: an Acquired record is
// written as Available with its delivery count, since its lock dies with
// the broker that granted it.
//
// The coordinator writes snapshots only (Kafka also writes ShareUpdate
// deltas between snapshots; a snapshot per change is simpler and the
// window is bounded by group.share.partition.max.record.locks). Replay
// reads snapshots and skips ShareUpdate records, which kbroker never
// writes. Which changes are written: a share-partition's initialization
// (its SPSO from share.auto.offset.reset), acknowledgements, releases
// (lock expiry, session close, a member leaving), admin resets, and
// deletions (a tombstone). Acquisitions are not written, as in Kafka:
// after a restart a record delivered but not acknowledged is delivered
// again, with the delivery count it had at the last write.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	groupcoord "github.com/kbroker/kbroker/coordinator/group"
	"github.com/twmb/franz-go/pkg/kbin"
)

// StateTopic is the internal topic of share-partition state.
const StateTopic = "__share_group_state"

// Record types of __share_group_state keys (Kafka's CoordinatorRecordType
// of the share coordinator).
const (
	stateKeySnapshot int16 = 0
	stateKeyUpdate   int16 = 1
)

// Delivery states of a persisted state batch (Kafka's RecordState ids).
const (
	persistAvailable    int8 = 0
	persistAcknowledged int8 = 2
	persistArchived     int8 = 4
)

// maxReplayWindow bounds the in-flight window a replayed snapshot may
// describe, so a corrupt record cannot make replay allocate without limit
// (the window never exceeds group.share.partition.max.record.locks, at
// most 10000).
const maxReplayWindow = 1 << 16

// stateKey names one share-partition of one group.
type stateKey struct {
	group string
	tp    TopicPartition
}

// StateRecord is one record of __share_group_state the caller must append.
type StateRecord struct {
	// CoordinatorKey is Kafka's "group:topicId:partition" key, whose hash
	// picks the partition of __share_group_state (StatePartitionFor).
	CoordinatorKey string
	// Key and Value are the record; Value is nil for a tombstone.
	Key, Value []byte
	// Group and TP name the share-partition; Snapshot is Value decoded
	// (nil for a tombstone), what a WriteShareGroupState carries.
	Group    string
	TP       TopicPartition
	Snapshot *Snapshot

	sk stateKey
}

// StatePartitionFor is the partition of __share_group_state that holds a
// share-partition's state: abs(javaHashCode(CoordinatorKey)) % n, as
// Kafka's ShareCoordinatorService.partitionFor.
func StatePartitionFor(coordinatorKey string, n int32) int32 {
	return groupcoord.PartitionFor(coordinatorKey, n)
}

// coordinatorKey is Kafka's SharePartitionKey.asCoordinatorKey: the
// group, the topic id in Kafka's text form (URL-safe base64 without
// padding) and the partition, joined by colons.
func coordinatorKey(k stateKey) string {
	return k.group + ":" + base64.RawURLEncoding.EncodeToString(k.tp.TopicID[:]) + ":" + strconv.Itoa(int(k.tp.Partition))
}

// markDirty schedules a write of the share-partition's state.
func (c *Coordinator) markDirty(group string, tp TopicPartition) {
	if c.dirty == nil {
		c.dirty = map[stateKey]struct{}{}
	}
	c.dirty[stateKey{group, tp}] = struct{}{}
}

// TakeStateRecords returns the records that bring __share_group_state up
// to date with every share-partition changed since the last call: a
// snapshot of each, or a tombstone for one that was deleted. The caller
// appends them and, if that fails, hands them back with Unwritten.
func (c *Coordinator) TakeStateRecords(now time.Time) []StateRecord {
	if len(c.dirty) == 0 {
		return nil
	}
	keys := make([]stateKey, 0, len(c.dirty))
	for k := range c.dirty {
		keys = append(keys, k)
	}
	c.dirty = nil
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.group != b.group {
			return a.group < b.group
		}
		if x, y := string(a.tp.TopicID[:]), string(b.tp.TopicID[:]); x != y {
			return x < y
		}
		return a.tp.Partition < b.tp.Partition
	})
	out := make([]StateRecord, 0, len(keys))
	for _, k := range keys {
		r := StateRecord{CoordinatorKey: coordinatorKey(k), Key: encodeStateKey(k), Group: k.group, TP: k.tp, sk: k}
		if g := c.groups[k.group]; g != nil {
			if p := g.parts[k.tp]; p != nil {
				p.snapshotEpoch++
				s := p.snapshot(now)
				r.Value, r.Snapshot = EncodeSnapshot(s), &s
			}
		}
		out = append(out, r)
	}
	return out
}

// Unwritten takes back records TakeStateRecords returned that could not
// be written: their share-partitions are written again at the next call.
func (c *Coordinator) Unwritten(recs []StateRecord) {
	for _, r := range recs {
		c.markDirty(r.sk.group, r.sk.tp)
	}
}

// ReplayState takes one record of __share_group_state at load, in log
// order; FinishReplay applies them. Only the last record of each
// share-partition counts (a snapshot replaces the state, a tombstone
// deletes it), so replay keeps the last value per key and decodes only
// those: a log not yet compacted holds a snapshot per change, each up to
// a whole in-flight window. ShareUpdate records are skipped (kbroker
// writes none). The error is for a key that cannot be decoded; the caller
// logs and skips the record.
func (c *Coordinator) ReplayState(key, value []byte) error {
	typ, k, err := decodeStateKey(key)
	if err != nil {
		return err
	}
	if typ != stateKeySnapshot {
		return nil
	}
	if c.replay == nil {
		c.replay = map[stateKey][]byte{}
	}
	if value != nil {
		value = append([]byte{}, value...) // the caller's buffer is reused
	}
	c.replay[k] = value
	return nil
}

// FinishReplay applies the records ReplayState took: each share-partition
// gets the state of its last snapshot (creating its group), or none after
// a tombstone. It returns the snapshots that could not be decoded, which
// are skipped.
func (c *Coordinator) FinishReplay() []error {
	var errs []error
	for k, v := range c.replay {
		if v == nil {
			if g := c.groups[k.group]; g != nil {
				delete(g.parts, k.tp)
			}
			continue
		}
		p, err := decodeSnapshot(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("share state of %s: %w", coordinatorKey(k), err))
			continue
		}
		c.groupOrCreate(k.group).parts[k.tp] = p
	}
	c.replay = nil
	return errs
}

// ForgetDeletedTopics drops the share-partition state of topics that no
// longer exist (the topic ids topics does not name), writing a tombstone
// for each, as Kafka deletes share-group state with its topic. The caller
// runs it after replay, so state of topics deleted while the broker was
// down or before it was written does not stay in __share_group_state forever.
func (c *Coordinator) ForgetDeletedTopics() {
	exists := map[[16]byte]bool{}
	for _, t := range c.topics() {
		exists[t.ID] = true
	}
	for id, g := range c.groups {
		for tp := range g.parts {
			if !exists[tp.TopicID] {
				delete(g.parts, tp)
				c.markDirty(id, tp)
			}
		}
	}
}

func encodeStateKey(k stateKey) []byte {
	b := kbin.AppendInt16(nil, stateKeySnapshot)
	b = kbin.AppendString(b, k.group)
	b = kbin.AppendUuid(b, k.tp.TopicID)
	return kbin.AppendInt32(b, k.tp.Partition)
}

func decodeStateKey(key []byte) (int16, stateKey, error) {
	r := kbin.Reader{Src: key}
	typ := r.Int16()
	var k stateKey
	if typ == stateKeySnapshot || typ == stateKeyUpdate {
		k.group = r.String()
		k.tp.TopicID = r.Uuid()
		k.tp.Partition = r.Int32()
	}
	if err := r.Complete(); err != nil {
		return 0, k, fmt.Errorf("share state key: %w", err)
	}
	if typ != stateKeySnapshot && typ != stateKeyUpdate {
		return 0, k, fmt.Errorf("share state key: unknown record type %d", typ)
	}
	return typ, k, nil
}

// persistState maps an in-memory record state to a persisted one.
func persistState(s State) int8 {
	switch s {
	case Acknowledged:
		return persistAcknowledged
	case Archived:
		return persistArchived
	}
	return persistAvailable // Available, and Acquired: the lock is not kept
}

// Snapshot is one share-partition's persisted state: Kafka's
// ShareSnapshotValue, and what the share coordinator RPCs
// (Read/WriteShareGroupState) carry. Invariant of a valid snapshot:
// batches are in offset order, do not overlap, and start at or above
// StartOffset.
type Snapshot struct {
	SnapshotEpoch, StateEpoch, LeaderEpoch int32
	StartOffset                            int64
	CreateTimestamp, WriteTimestamp        int64 // ms
	Batches                                []StateBatch
}

// StateBatch is a run of offsets with one persisted delivery state
// (PersistAvailable, PersistAcknowledged, PersistArchived) and count.
type StateBatch struct {
	First, Last int64
	State       int8
	Count       int16
}

// The persisted delivery states of a StateBatch.
const (
	PersistAvailable    = persistAvailable
	PersistAcknowledged = persistAcknowledged
	PersistArchived     = persistArchived
)

// Covers reports whether s, a share-partition's persisted state, holds
// as finished every offset that w finishes: the offsets below
// w.StartOffset and those of w's Acknowledged and Archived batches are
// below s.StartOffset or in a finished batch of s, under the same state
// epoch. A leader whose write of w had an unknown outcome (the share
// coordinator moved while appending it) learns from a read of s whether
// what w acknowledged took effect. Both snapshots must be valid
// (Validate).
func (s Snapshot) Covers(w Snapshot) bool {
	if s.StateEpoch != w.StateEpoch {
		return false
	}
	if !s.finishes(0, w.StartOffset-1) {
		return false
	}
	for _, b := range w.Batches {
		if b.State != persistAvailable && !s.finishes(b.First, b.Last) {
			return false
		}
	}
	return true
}

// finishes reports whether every offset of first..last (none when last <
// first) is below s.StartOffset or in an Acknowledged or Archived batch of s.
func (s Snapshot) finishes(first, last int64) bool {
	if first < s.StartOffset {
		first = s.StartOffset
	}
	for _, b := range s.Batches {
		if first > last {
			return true
		}
		if b.Last < first {
			continue
		}
		if b.First > first || b.State == persistAvailable {
			return false // first is in a gap or an unfinished batch
		}
		first = b.Last + 1
	}
	return first > last
}

// snapshot is the partition's persisted form at now.
func (p *partition) snapshot(now time.Time) Snapshot {
	var runs []StateBatch
	for i, r := range p.recs {
		o := p.start + int64(i)
		st := persistState(r.state)
		if n := len(runs); n > 0 && runs[n-1].Last == o-1 && runs[n-1].State == st && runs[n-1].Count == r.deliveries {
			runs[n-1].Last = o
			continue
		}
		runs = append(runs, StateBatch{o, o, st, r.deliveries})
	}
	// Never-delivered offsets at the end carry nothing.
	for len(runs) > 0 && runs[len(runs)-1].State == persistAvailable && runs[len(runs)-1].Count == 0 {
		runs = runs[:len(runs)-1]
	}
	ms := now.UnixMilli()
	if p.created == 0 {
		p.created = ms
	}
	return Snapshot{
		SnapshotEpoch: p.snapshotEpoch, StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch,
		StartOffset: p.start, CreateTimestamp: p.created, WriteTimestamp: ms, Batches: runs,
	}
}

// EncodeSnapshot is s as a ShareSnapshotValue (version 0, flexible):
// SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset, CreateTimestamp,
// WriteTimestamp, StateBatches.
func EncodeSnapshot(s Snapshot) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, s.SnapshotEpoch)
	b = kbin.AppendInt32(b, s.StateEpoch)
	b = kbin.AppendInt32(b, s.LeaderEpoch)
	b = kbin.AppendInt64(b, s.StartOffset)
	b = kbin.AppendInt64(b, s.CreateTimestamp)
	b = kbin.AppendInt64(b, s.WriteTimestamp)
	b = kbin.AppendCompactArrayLen(b, len(s.Batches))
	for _, r := range s.Batches {
		b = kbin.AppendInt64(b, r.First)
		b = kbin.AppendInt64(b, r.Last)
		b = kbin.AppendInt8(b, r.State)
		b = kbin.AppendInt16(b, r.Count)
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	return kbin.AppendUvarint(b, 0)
}

var errBadSnapshot = errors.New("malformed share snapshot")

// DecodeSnapshot is the inverse of EncodeSnapshot; tagged fields are
// skipped. It checks the Snapshot invariant and the delivery states.
func DecodeSnapshot(v []byte) (Snapshot, error) {
	r := kbin.Reader{Src: v}
	if ver := r.Int16(); ver != 0 {
		return Snapshot{}, fmt.Errorf("share snapshot version %d unknown", ver)
	}
	var s Snapshot
	s.SnapshotEpoch = r.Int32()
	s.StateEpoch = r.Int32()
	s.LeaderEpoch = r.Int32()
	s.StartOffset = r.Int64()
	s.CreateTimestamp = r.Int64()
	s.WriteTimestamp = r.Int64()
	n := r.CompactArrayLen()
	if !r.Ok() || n < 0 {
		return Snapshot{}, errBadSnapshot
	}
	for range n {
		var b StateBatch
		b.First, b.Last = r.Int64(), r.Int64()
		b.State, b.Count = r.Int8(), r.Int16()
		skipTags(&r)
		if !r.Ok() {
			return Snapshot{}, errBadSnapshot
		}
		s.Batches = append(s.Batches, b)
	}
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return Snapshot{}, errBadSnapshot
	}
	if err := s.Validate(); err != nil {
		return Snapshot{}, err
	}
	return s, nil
}

// Validate checks the Snapshot invariant, the delivery states, and that
// the window it describes is bounded (maxReplayWindow), so a corrupt
// record or a hostile RPC cannot make a share-partition allocate without limit.
func (s Snapshot) Validate() error {
	if s.StartOffset < 0 {
		return errBadSnapshot
	}
	end := s.StartOffset
	for _, b := range s.Batches {
		if b.First < end || b.Last < b.First || b.Last-s.StartOffset >= maxReplayWindow || b.Count < 0 {
			return errBadSnapshot
		}
		switch b.State {
		case persistAvailable, persistAcknowledged, persistArchived:
		default:
			return fmt.Errorf("share snapshot delivery state %d unknown", b.State)
		}
		end = b.Last + 1
	}
	return nil
}

// decodeSnapshot decodes a ShareSnapshotValue into a partition.
func decodeSnapshot(v []byte) (*partition, error) {
	s, err := DecodeSnapshot(v)
	if err != nil {
		return nil, err
	}
	return partitionOf(s), nil
}

// partitionOf is the share-partition a valid snapshot describes.
func partitionOf(s Snapshot) *partition {
	p := &partition{start: s.StartOffset, snapshotEpoch: s.SnapshotEpoch, stateEpoch: s.StateEpoch, leaderEpoch: s.LeaderEpoch, created: s.CreateTimestamp}
	for _, b := range s.Batches {
		for p.end() < b.First {
			p.recs = append(p.recs, record{})
		}
		rec := record{deliveries: b.Count}
		switch b.State {
		case persistAcknowledged:
			rec.state = Acknowledged
		case persistArchived:
			rec.state = Archived
		}
		for o := b.First; o <= b.Last; o++ {
			p.recs = append(p.recs, rec)
		}
	}
	p.advance()
	return p
}

// skipTags skips a tagged-field section.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// StateKey is the __share_group_state key (ShareSnapshotKey) of a group's share-partition.
func StateKey(group string, tp TopicPartition) []byte { return encodeStateKey(stateKey{group, tp}) }

// CoordinatorKey is Kafka's "group:topicId:partition" key of a group's
// share-partition, whose hash picks its partition of __share_group_state.
func CoordinatorKey(group string, tp TopicPartition) string {
	return coordinatorKey(stateKey{group, tp})
}

// DecodeStateKey decodes a __share_group_state key: snapshot is false for
// a ShareUpdate key (which kbroker never writes).
func DecodeStateKey(key []byte) (snapshot bool, group string, tp TopicPartition, err error) {
	typ, k, err := decodeStateKey(key)
	return typ == stateKeySnapshot, k.group, k.tp, err
}
