package share

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// The share-group offsets admin APIs (KIP-932: DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets) work on the SPSO of
// each share-partition. The caller resolves topic names to ids.

// PartitionOffset is the state of one share-partition for DescribeShareGroupOffsets.
type PartitionOffset struct {
	TopicPartition
	// StartOffset is the SPSO.
	StartOffset int64
	// Finished counts finished records above the SPSO, which lag does not count.
	Finished int64
}

// Offset returns one share-partition's SPSO, and false when the group has
// no state for it.
func (c *Coordinator) Offset(group string, tp TopicPartition) (PartitionOffset, bool) {
	g := c.groups[group]
	if g == nil || g.parts[tp] == nil {
		return PartitionOffset{}, false
	}
	p := g.parts[tp]
	return PartitionOffset{TopicPartition: tp, StartOffset: p.start, Finished: p.finishedInWindow()}, true
}

// Offsets returns every share-partition of a group that has state.
func (c *Coordinator) Offsets(group string) []PartitionOffset {
	g := c.groups[group]
	if g == nil {
		return nil
	}
	out := make([]PartitionOffset, 0, len(g.parts))
	for tp := range g.parts {
		o, _ := c.Offset(group, tp)
		out = append(out, o)
	}
	return out
}

// CanAlterOffsets checks that a group's offsets may be changed: the group
// must have no members (NON_EMPTY_GROUP); mustExist adds
// GROUP_ID_NOT_FOUND for a group that does not exist.
func (c *Coordinator) CanAlterOffsets(group string, mustExist bool) int16 {
	g := c.groups[group]
	switch {
	case g == nil && mustExist:
		return kerr.GroupIDNotFound.Code
	case g != nil && len(g.members) > 0:
		return kerr.NonEmptyGroup.Code
	}
	return 0
}

// SetStartOffset sets a share-partition's SPSO and forgets its in-flight
// records (AlterShareGroupOffsets), creating the group if needed.
func (c *Coordinator) SetStartOffset(group string, tp TopicPartition, off int64) {
	g := c.groupOrCreate(group)
	p := g.parts[tp]
	if p == nil {
		p = &partition{}
		g.parts[tp] = p
	}
	p.reset(off)
	c.changes++
	c.markDirty(group, tp)
}

// DeleteTopicOffsets drops the group's state of every partition of a
// topic (DeleteShareGroupOffsets): delivery starts again from
// share.auto.offset.reset.
func (c *Coordinator) DeleteTopicOffsets(group string, topicID [16]byte) {
	g := c.groups[group]
	if g == nil {
		return
	}
	for tp := range g.parts {
		if tp.TopicID == topicID {
			delete(g.parts, tp)
			c.markDirty(group, tp) // a tombstone
		}
	}
}
