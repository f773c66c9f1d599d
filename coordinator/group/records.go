package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Key versions of __consumer_offsets records, as in Kafka: 0 and 1 are
// offset commits, 2 is group metadata, 3 and above are records of KIP-848
// groups, which this coordinator does not hold and skips on Replay.
const (
	offsetKeyVersion = 1
	groupKeyVersion  = 2
)

// ErrCorruptRecord is wrapped by the errors Replay returns for a record it
// cannot decode.
var ErrCorruptRecord = errors.New("corrupt __consumer_offsets record")

// offsetRecord encodes a committed offset: key v1, value v3 (with leader
// epoch), or value v1 when the commit has an explicit expiration, exactly
// as Kafka chooses.
func offsetRecord(groupID, topic string, partition int32, off *offset) Record {
	key := kmsg.NewOffsetCommitKey()
	key.Version = offsetKeyVersion
	key.Group, key.Topic, key.Partition = groupID, topic, partition
	val := kmsg.NewOffsetCommitValue()
	val.Version = 3
	if off.expireMs >= 0 {
		val.Version = 1
		val.ExpireTimestamp = off.expireMs
	}
	val.Offset = off.offset
	val.LeaderEpoch = off.leaderEpoch
	val.Metadata = off.metadata
	val.CommitTimestamp = off.commitMs
	return Record{Group: groupID, Key: key.AppendTo(nil), Value: val.AppendTo(nil)}
}

func offsetTombstone(groupID, topic string, partition int32) Record {
	key := kmsg.NewOffsetCommitKey()
	key.Version = offsetKeyVersion
	key.Group, key.Topic, key.Partition = groupID, topic, partition
	return Record{Group: groupID, Key: key.AppendTo(nil)}
}

func groupKey(groupID string) []byte {
	key := kmsg.NewGroupMetadataKey()
	key.Version = groupKeyVersion
	key.Group = groupID
	return key.AppendTo(nil)
}

func groupTombstone(groupID string) Record {
	return Record{Group: groupID, Key: groupKey(groupID)}
}

// groupRecord encodes the group's current generation as a GroupMetadata
// value v3 (the version Kafka writes since 2.3): members with their
// subscription for the selected protocol and their assignment.
func (c *Coordinator) groupRecord(g *group) Record {
	g.metadataStored = true
	val := kmsg.NewGroupMetadataValue()
	val.Version = 3
	val.ProtocolType = g.protocolType
	val.Generation = g.generation
	val.Protocol = nullable(g.protocol)
	val.Leader = nullable(g.leader)
	val.CurrentStateTimestamp = g.stateMs
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = m.instanceID
		vm.ClientID = m.clientID
		vm.ClientHost = m.clientHost
		vm.RebalanceTimeoutMillis = m.rebalanceTimeoutMs
		vm.SessionTimeoutMillis = m.sessionTimeoutMs
		vm.Subscription = m.metadataFor(g.protocol)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		vm.Assignment = m.assignment
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		val.Members = append(val.Members, vm)
	}
	return Record{Group: g.id, Key: groupKey(g.id), Value: val.AppendTo(nil)}
}

// Replay applies one __consumer_offsets record, in log order, to rebuild
// state: committed offsets, and groups as of their last persisted
// generation (Stable if they had members, else Empty). A nil value is a
// tombstone. Records of key versions 3 and above (KIP-848 groups) are
// skipped. Replay is meant for a Coordinator that has not yet served
// requests; call Loaded once the partition is replayed.
func (c *Coordinator) Replay(key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		return c.replayOffset(key, value)
	case groupKeyVersion:
		return c.replayGroup(key, value)
	default:
		if v < 0 {
			return fmt.Errorf("%w: key version %d", ErrCorruptRecord, v)
		}
		return nil
	}
}

func (c *Coordinator) replayOffset(key, value []byte) error {
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: offset commit key: %v", ErrCorruptRecord, err)
	}
	g := c.groups[k.Group]
	if value == nil {
		if g != nil {
			g.deleteOffset(k.Topic, k.Partition)
			c.maybeForget(g)
		}
		return nil
	}
	var val kmsg.OffsetCommitValue
	if err := val.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: offset commit value for group %q: %v", ErrCorruptRecord, k.Group, err)
	}
	if val.Version < 0 || val.Version > 4 {
		return fmt.Errorf("%w: offset commit value version %d", ErrCorruptRecord, val.Version)
	}
	if g == nil {
		g = newGroup(k.Group, -1)
		c.groups[k.Group] = g
	}
	// A replayed offset is newer than every commit still pending (a
	// transactional one is replayed when its marker is written).
	c.writeSeq++
	off := &offset{offset: val.Offset, leaderEpoch: -1, metadata: val.Metadata, commitMs: val.CommitTimestamp, expireMs: -1, seq: c.writeSeq}
	if val.Version >= 3 {
		off.leaderEpoch = val.LeaderEpoch
	}
	if val.Version == 1 {
		off.expireMs = val.ExpireTimestamp
	}
	g.setOffset(k.Topic, k.Partition, off)
	return nil
}

func (c *Coordinator) replayGroup(key, value []byte) error {
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: group metadata key: %v", ErrCorruptRecord, err)
	}
	old := c.groups[k.Group]
	if value == nil {
		// The group is gone; offsets committed after its deletion (by a
		// simple consumer) survive in a fresh offsets-only group.
		if old != nil {
			g := newGroup(k.Group, -1)
			g.offsets = old.offsets
			c.groups[k.Group] = g
			c.maybeForget(g)
		}
		return nil
	}
	var val kmsg.GroupMetadataValue
	if err := val.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: group metadata value for group %q: %v", ErrCorruptRecord, k.Group, err)
	}
	if val.Version < 0 || val.Version > 4 {
		return fmt.Errorf("%w: group metadata value version %d", ErrCorruptRecord, val.Version)
	}
	g := newGroup(k.Group, -1)
	if old != nil {
		g.offsets = old.offsets
	}
	g.metadataStored = true
	g.protocolType = val.ProtocolType
	g.generation = val.Generation
	if val.Protocol != nil {
		g.protocol = *val.Protocol
	}
	if val.Version >= 2 {
		g.stateMs = val.CurrentStateTimestamp
	}
	for _, vm := range val.Members {
		c.memberSeq++
		m := &member{
			id:                 vm.MemberID,
			clientID:           vm.ClientID,
			clientHost:         vm.ClientHost,
			seq:                c.memberSeq,
			sessionTimeoutMs:   vm.SessionTimeoutMillis,
			rebalanceTimeoutMs: vm.RebalanceTimeoutMillis,
			protocolType:       val.ProtocolType,
			protocols:          []protocol{{name: g.protocol, metadata: vm.Subscription}},
			assignment:         vm.Assignment,
		}
		if val.Version < 1 {
			m.rebalanceTimeoutMs = vm.SessionTimeoutMillis
		}
		if val.Version >= 3 {
			m.instanceID = vm.InstanceID
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if len(g.members) > 0 {
		g.state = Stable
		g.leader = ""
		if val.Leader != nil {
			if _, ok := g.members[*val.Leader]; ok {
				g.leader = *val.Leader
			}
		}
		if g.leader == "" {
			g.leader = g.sortedMembers()[0].id
		}
	}
	g.computeSubscribed()
	c.groups[k.Group] = g
	return nil
}

// sortedPartitions returns the partitions of ps in increasing order.
func sortedPartitions[V any](ps map[int32]V) []int32 {
	out := make([]int32, 0, len(ps))
	for p := range ps {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
