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
		r := StateRecord{CoordinatorKey: coordinatorKey(k), Key: encodeStateKey(k), sk: k}
		if g := c.groups[k.group]; g != nil {
			if p := g.parts[k.tp]; p != nil {
				p.snapshotEpoch++
				r.Value = p.encodeSnapshot(now)
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

// encodeSnapshot is the partition's ShareSnapshotValue (version 0,
// flexible): SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset,
// CreateTimestamp, WriteTimestamp, StateBatches.
func (p *partition) encodeSnapshot(now time.Time) []byte {
	type run struct {
		first, last int64
		state       int8
		count       int16
	}
	var runs []run
	for i, r := range p.recs {
		o := p.start + int64(i)
		st := persistState(r.state)
		if n := len(runs); n > 0 && runs[n-1].last == o-1 && runs[n-1].state == st && runs[n-1].count == r.deliveries {
			runs[n-1].last = o
			continue
		}
		runs = append(runs, run{o, o, st, r.deliveries})
	}
	// Never-delivered offsets at the end carry nothing.
	for len(runs) > 0 && runs[len(runs)-1].state == persistAvailable && runs[len(runs)-1].count == 0 {
		runs = runs[:len(runs)-1]
	}
	ms := now.UnixMilli()
	if p.created == 0 {
		p.created = ms
	}
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, p.snapshotEpoch)
	b = kbin.AppendInt32(b, p.stateEpoch)
	b = kbin.AppendInt32(b, p.leaderEpoch)
	b = kbin.AppendInt64(b, p.start)
	b = kbin.AppendInt64(b, p.created)
	b = kbin.AppendInt64(b, ms)
	b = kbin.AppendCompactArrayLen(b, len(runs))
	for _, r := range runs {
		b = kbin.AppendInt64(b, r.first)
		b = kbin.AppendInt64(b, r.last)
		b = kbin.AppendInt8(b, r.state)
		b = kbin.AppendInt16(b, r.count)
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	return kbin.AppendUvarint(b, 0)
}

var errBadSnapshot = errors.New("malformed share snapshot")

// decodeSnapshot is the inverse of encodeSnapshot; tagged fields are skipped.
func decodeSnapshot(v []byte) (*partition, error) {
	r := kbin.Reader{Src: v}
	if ver := r.Int16(); ver != 0 {
		return nil, fmt.Errorf("share snapshot version %d unknown", ver)
	}
	p := &partition{}
	p.snapshotEpoch = r.Int32()
	p.stateEpoch = r.Int32()
	p.leaderEpoch = r.Int32()
	p.start = r.Int64()
	p.created = r.Int64()
	_ = r.Int64() // WriteTimestamp
	n := r.CompactArrayLen()
	if !r.Ok() || p.start < 0 || n < 0 {
		return nil, errBadSnapshot
	}
	for range n {
		first, last := r.Int64(), r.Int64()
		st, count := r.Int8(), r.Int16()
		skipTags(&r)
		if !r.Ok() || first < p.start || last < first || last-p.start >= maxReplayWindow || first < p.end() || count < 0 {
			return nil, errBadSnapshot
		}
		for p.end() < first {
			p.recs = append(p.recs, record{})
		}
		rec := record{deliveries: count}
		switch st {
		case persistAvailable:
		case persistAcknowledged:
			rec.state = Acknowledged
		case persistArchived:
			rec.state = Archived
		default:
			return nil, fmt.Errorf("share snapshot delivery state %d unknown", st)
		}
		for o := first; o <= last; o++ {
			p.recs = append(p.recs, rec)
		}
	}
	skipTags(&r)
	if err := r.Complete(); err != nil {
		return nil, errBadSnapshot
	}
	p.advance()
	return p, nil
}

// skipTags skips a tagged-field section.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}
