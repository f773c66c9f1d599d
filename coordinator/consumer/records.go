package consumer

import (
	"encoding/binary"
	"fmt"
	"regexp"
)

// Key versions of the __consumer_offsets records of consumer groups, as
// Kafka numbers them (the key version doubles as the record type). Each
// value is version 0, flexible. kmsg v1.15.1 has no types for these
// schemas, so this file encodes them by hand, field for field as in
// Kafka's group-coordinator/src/main/resources/common/message/*.json.
const (
	groupMetadataKeyVersion     = 3 // ConsumerGroupMetadataKey/Value
	partitionMetadataKeyVersion = 4 // ConsumerGroupPartitionMetadataKey/Value
	memberMetadataKeyVersion    = 5 // ConsumerGroupMemberMetadataKey/Value
	targetMetadataKeyVersion    = 6 // ConsumerGroupTargetAssignmentMetadataKey/Value
	targetMemberKeyVersion      = 7 // ConsumerGroupTargetAssignmentMemberKey/Value
	currentMemberKeyVersion     = 8 // ConsumerGroupCurrentMemberAssignmentKey/Value
)

// op is one typed record: the unit by which a group's persistent state
// changes. Request handling builds ops and applies them through the same
// apply that Replay uses, so the state in memory is always what replaying
// the emitted records yields.
type op interface {
	apply(c *Coordinator)
	record() Record
}

// opGroupEpoch is ConsumerGroupMetadata: the group epoch. Its tombstone
// deletes the group.
type opGroupEpoch struct {
	group string
	epoch int32
	tomb  bool
}

// opSubMeta is ConsumerGroupPartitionMetadata: the subscription metadata.
type opSubMeta struct {
	group  string
	topics []topicMeta // sorted by name
	tomb   bool
}

// opMember is ConsumerGroupMemberMetadata: a member's subscription. Its
// tombstone removes the member.
type opMember struct {
	group, member string
	sub           subscription
	tomb          bool
}

// opTargetEpoch is ConsumerGroupTargetAssignmentMetadata.
type opTargetEpoch struct {
	group string
	epoch int32
	tomb  bool
}

// opTarget is ConsumerGroupTargetAssignmentMember: one member's target.
type opTarget struct {
	group, member string
	target        assignment
	tomb          bool
}

// opCurrent is ConsumerGroupCurrentMemberAssignment: a member's epoch,
// state and current assignment.
type opCurrent struct {
	group, member string
	cur           current
	tomb          bool
}

func groupKey(version int16, groupID string) []byte {
	w := writer{}
	w.int16(version)
	w.str(groupID)
	return w.b
}

func memberKey(version int16, groupID, memberID string) []byte {
	w := writer{}
	w.int16(version)
	w.str(groupID)
	w.str(memberID)
	return w.b
}

func valueWriter() *writer {
	w := &writer{}
	w.int16(0)
	return w
}

func writeAssignment(w *writer, a assignment) {
	ts := a.topics()
	w.carray(len(ts))
	for _, t := range ts {
		w.uuid(t)
		w.carray(len(a[t]))
		for _, p := range a[t] {
			w.int32(p)
		}
		w.noTags()
	}
}

func readAssignment(r *reader) assignment {
	n := r.carray(18)
	return newAssignment(func(put func(uuid, int32)) {
		for i := 0; i < n && r.err == nil; i++ {
			t := r.uuid()
			np := r.carray(4)
			for j := 0; j < np && r.err == nil; j++ {
				put(t, r.int32())
			}
			r.skipTags()
		}
	})
}

func (o opGroupEpoch) record() Record {
	rec := Record{Group: o.group, Key: groupKey(groupMetadataKeyVersion, o.group)}
	if !o.tomb {
		w := valueWriter()
		w.int32(o.epoch)
		w.noTags()
		rec.Value = w.b
	}
	return rec
}

func (o opSubMeta) record() Record {
	rec := Record{Group: o.group, Key: groupKey(partitionMetadataKeyVersion, o.group)}
	if !o.tomb {
		w := valueWriter()
		w.carray(len(o.topics))
		for _, t := range o.topics {
			w.uuid(t.id)
			w.cstr(t.name)
			w.int32(t.partitions)
			w.carray(0) // PartitionMetadata (racks): not tracked
			w.noTags()
		}
		w.noTags()
		rec.Value = w.b
	}
	return rec
}

func (o opMember) record() Record {
	rec := Record{Group: o.group, Key: memberKey(memberMetadataKeyVersion, o.group, o.member)}
	if !o.tomb {
		s := o.sub
		w := valueWriter()
		w.cnstr(s.instanceID)
		w.cnstr(s.rackID)
		w.cstr(s.clientID)
		w.cstr(s.clientHost)
		w.carray(len(s.topicNames))
		for _, n := range s.topicNames {
			w.cstr(n)
		}
		w.cnstr(s.regex)
		w.int32(s.rebalanceTimeoutMs)
		w.cnstr(s.serverAssignor)
		w.noTags()
		rec.Value = w.b
	}
	return rec
}

func (o opTargetEpoch) record() Record {
	rec := Record{Group: o.group, Key: groupKey(targetMetadataKeyVersion, o.group)}
	if !o.tomb {
		w := valueWriter()
		w.int32(o.epoch)
		w.noTags()
		rec.Value = w.b
	}
	return rec
}

func (o opTarget) record() Record {
	rec := Record{Group: o.group, Key: memberKey(targetMemberKeyVersion, o.group, o.member)}
	if !o.tomb {
		w := valueWriter()
		writeAssignment(w, o.target)
		w.noTags()
		rec.Value = w.b
	}
	return rec
}

func (o opCurrent) record() Record {
	rec := Record{Group: o.group, Key: memberKey(currentMemberKeyVersion, o.group, o.member)}
	if !o.tomb {
		w := valueWriter()
		w.int32(o.cur.epoch)
		w.int32(o.cur.prevEpoch)
		w.int8(int8(o.cur.state))
		writeAssignment(w, o.cur.assigned)
		writeAssignment(w, o.cur.pending)
		w.noTags()
		rec.Value = w.b
	}
	return rec
}

// decodeOp decodes a record of a consumer group; ok is false for records
// of other kinds (offset commits, classic groups, share and streams
// groups, resolved regular expressions), which Replay skips.
func decodeOp(key, value []byte) (o op, ok bool, err error) {
	if len(key) < 2 {
		return nil, false, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	version := int16(binary.BigEndian.Uint16(key))
	if version < 0 {
		return nil, false, fmt.Errorf("%w: key version %d", ErrCorruptRecord, version)
	}
	if version < groupMetadataKeyVersion || version > currentMemberKeyVersion {
		return nil, false, nil
	}
	kr := &reader{b: key[2:]}
	groupID := kr.str()
	var memberID string
	if version == memberMetadataKeyVersion || version == targetMemberKeyVersion || version == currentMemberKeyVersion {
		memberID = kr.str()
	}
	if err := kr.done(fmt.Sprintf("key version %d", version)); err != nil {
		return nil, false, err
	}
	tomb := value == nil
	r := &reader{b: value}
	if !tomb {
		if v := r.int16(); v != 0 && r.err == nil {
			return nil, false, fmt.Errorf("%w: key version %d with value version %d", ErrCorruptRecord, version, v)
		}
	}
	switch version {
	case groupMetadataKeyVersion:
		x := opGroupEpoch{group: groupID, tomb: tomb}
		if !tomb {
			x.epoch = r.int32()
		}
		o = x
	case partitionMetadataKeyVersion:
		x := opSubMeta{group: groupID, tomb: tomb}
		if !tomb {
			n := r.carray(22)
			for i := 0; i < n && r.err == nil; i++ {
				t := topicMeta{id: r.uuid(), name: r.cstr(), partitions: r.int32()}
				racks := r.carray(6)
				for j := 0; j < racks && r.err == nil; j++ {
					r.int32() // partition
					for k, nr := 0, r.carray(1); k < nr && r.err == nil; k++ {
						r.cstr()
					}
					r.skipTags()
				}
				r.skipTags()
				x.topics = append(x.topics, t)
			}
		}
		o = x
	case memberMetadataKeyVersion:
		x := opMember{group: groupID, member: memberID, tomb: tomb}
		if !tomb {
			s := &x.sub
			s.instanceID = r.cnstr()
			s.rackID = r.cnstr()
			s.clientID = r.cstr()
			s.clientHost = r.cstr()
			n := r.carray(1)
			s.topicNames = make([]string, 0, n)
			for i := 0; i < n && r.err == nil; i++ {
				s.topicNames = append(s.topicNames, r.cstr())
			}
			s.regex = r.cnstr()
			s.rebalanceTimeoutMs = r.int32()
			s.serverAssignor = r.cnstr()
		}
		o = x
	case targetMetadataKeyVersion:
		x := opTargetEpoch{group: groupID, tomb: tomb}
		if !tomb {
			x.epoch = r.int32()
		}
		o = x
	case targetMemberKeyVersion:
		x := opTarget{group: groupID, member: memberID, tomb: tomb}
		if !tomb {
			x.target = readAssignment(r)
		}
		o = x
	case currentMemberKeyVersion:
		x := opCurrent{group: groupID, member: memberID, tomb: tomb}
		if !tomb {
			x.cur.epoch = r.int32()
			x.cur.prevEpoch = r.int32()
			switch x.cur.state = MemberState(r.int8()); x.cur.state {
			case MemberStable, MemberUnrevokedPartitions, MemberUnreleasedPartitions:
			default:
				x.cur.state = MemberUnknown // written by a newer version
			}
			x.cur.assigned = readAssignment(r)
			x.cur.pending = readAssignment(r)
		}
		o = x
	}
	if !tomb {
		r.skipTags()
		if err := r.done(fmt.Sprintf("value of key version %d for group %q", version, groupID)); err != nil {
			return nil, false, err
		}
	}
	return o, true, nil
}

// Replay applies one __consumer_offsets record, in log order, to rebuild
// consumer groups. A nil value is a tombstone. Records that belong to the
// classic coordinator (key versions 0-2) and other record types are
// skipped. Replay is meant for a Coordinator that has not yet served
// requests of the partition; call Loaded once the partition is replayed.
func (c *Coordinator) Replay(key, value []byte) error {
	o, ok, err := decodeOp(key, value)
	if err != nil || !ok {
		return err
	}
	o.apply(c)
	return nil
}

// getOrCreate returns group id, creating it empty if needed.
func (c *Coordinator) getOrCreate(id string) *group {
	g := c.groups[id]
	if g == nil {
		g = newGroup(id)
		c.groups[id] = g
	}
	return g
}

func (o opGroupEpoch) apply(c *Coordinator) {
	if o.tomb {
		delete(c.groups, o.group)
		return
	}
	c.getOrCreate(o.group).epoch = o.epoch
}

func (o opSubMeta) apply(c *Coordinator) {
	if o.tomb {
		if g := c.groups[o.group]; g != nil {
			g.subMeta = make(map[string]topicMeta)
		}
		return
	}
	g := c.getOrCreate(o.group)
	g.subMeta = make(map[string]topicMeta, len(o.topics))
	for _, t := range o.topics {
		g.subMeta[t.name] = t
	}
}

func (o opMember) apply(c *Coordinator) {
	if o.tomb {
		g := c.groups[o.group]
		if g == nil {
			return
		}
		if m := g.members[o.member]; m != nil {
			g.setOwned(m.id, m.cur, current{})
			if m.sub.instanceID != nil && g.static[*m.sub.instanceID] == m.id {
				delete(g.static, *m.sub.instanceID)
			}
			delete(g.members, o.member)
		}
		return
	}
	g := c.getOrCreate(o.group)
	m := g.memberOrNew(o.member)
	if m.sub.instanceID != nil && g.static[*m.sub.instanceID] == m.id {
		delete(g.static, *m.sub.instanceID)
	}
	m.sub = o.sub
	if m.sub.topicNames == nil {
		m.sub.topicNames = []string{}
	}
	m.re = nil
	if m.sub.regex != nil && *m.sub.regex != "" {
		// A pattern that no longer compiles (it was accepted by another
		// implementation) matches nothing rather than failing the load.
		m.re, _ = compileRegex(*m.sub.regex)
	}
	if m.sub.instanceID != nil {
		g.static[*m.sub.instanceID] = m.id
	}
}

// memberOrNew returns member id, adding a new member at epoch 0 with
// nothing assigned if it does not exist.
func (g *group) memberOrNew(id string) *member {
	m := g.members[id]
	if m == nil {
		m = &member{id: id, cur: current{assigned: assignment{}, pending: assignment{}}}
		m.sub.topicNames = []string{}
		g.members[id] = m
	}
	return m
}

func (o opTargetEpoch) apply(c *Coordinator) {
	if o.tomb {
		if g := c.groups[o.group]; g != nil {
			g.assignmentEpoch = 0
		}
		return
	}
	c.getOrCreate(o.group).assignmentEpoch = o.epoch
}

func (o opTarget) apply(c *Coordinator) {
	if o.tomb {
		if g := c.groups[o.group]; g != nil {
			delete(g.target, o.member)
		}
		return
	}
	c.getOrCreate(o.group).target[o.member] = o.target.clone()
}

func (o opCurrent) apply(c *Coordinator) {
	g := c.groups[o.group]
	if o.tomb {
		if g == nil {
			return
		}
		if m := g.members[o.member]; m != nil {
			g.setOwned(m.id, m.cur, current{})
			m.cur = current{epoch: leaveEpoch, prevEpoch: leaveEpoch, assigned: assignment{}, pending: assignment{}}
			m.since = nil
			m.revokeDeadline = timeZero
		}
		return
	}
	g = c.getOrCreate(o.group)
	m := g.memberOrNew(o.member)
	cur := o.cur.clone()
	g.setOwned(m.id, m.cur, cur)
	m.since = assignmentEpochs(m.since, cur)
	m.cur = cur
}

// compileRegex compiles a SubscribedTopicRegex for whole-name matching, as
// Kafka's RE2/J Pattern.matcher(topic).matches() does.
func compileRegex(expr string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(expr); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + expr + `)$`)
}
