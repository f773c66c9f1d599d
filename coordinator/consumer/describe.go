package consumer

import (
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe: v0-v1 (KIP-848). v1 adds MemberType, which is
// always 1 (a member of the consumer protocol) here.

// Describe handles ConsumerGroupDescribe v0-v1. Groups that are not
// consumer groups here answer GROUP_ID_NOT_FOUND, as Kafka does for unknown
// and classic groups. AuthorizedOperations is left at Kafka's "not
// requested" value for the broker to fill.
func (c *Coordinator) Describe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = req.Version
	var idx *topicIndex
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = id
		dg.AuthorizedOperations = math.MinInt32
		g := c.groups[id]
		switch {
		case id == "":
			dg.ErrorCode = kerr.InvalidGroupID.Code
			dg.ErrorMessage = kmsg.StringPtr("Group id can't be empty.")
		case g == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s not found.", id))
		default:
			if idx == nil {
				i := c.topicIndex()
				idx = &i
			}
			c.describeGroup(&dg, g, *idx)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *Coordinator) describeGroup(dg *kmsg.ConsumerGroupDescribeResponseGroup, g *group, idx topicIndex) {
	dg.State = g.state().String()
	dg.Epoch = g.epoch
	dg.AssignmentEpoch = g.assignmentEpoch
	dg.AssignorName = g.preferredAssignor(c.cfg.Assignors)
	if dg.AssignorName == "" {
		dg.AssignorName = c.cfg.Assignors[0]
	}
	names := make(map[uuid]string, len(g.subMeta))
	for _, t := range g.subMeta {
		names[t.id] = t.name
	}
	for id, t := range idx.byID {
		names[id] = t.Name
	}
	for _, m := range g.sortedMembers() {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.sub.instanceID
		dm.RackID = m.sub.rackID
		dm.MemberEpoch = m.cur.epoch
		dm.ClientID = m.sub.clientID
		dm.ClientHost = m.sub.clientHost
		dm.SubscribedTopics = slices.Clone(m.sub.topicNames)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.SubscribedTopicRegex = m.sub.regex
		dm.Assignment = describeAssignment(m.cur.assigned, names)
		dm.TargetAssignment = describeAssignment(g.target[m.id], names)
		dm.MemberType = 1
		dg.Members = append(dg.Members, dm)
	}
}

// describeAssignment converts an assignment, naming its topics; topics
// whose name is unknown (deleted) are left out, as Kafka does.
func describeAssignment(a assignment, names map[uuid]string) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range a.topics() {
		name, ok := names[t]
		if !ok {
			continue
		}
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID = t
		tp.Topic = name
		tp.Partitions = slices.Clone(a[t])
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

// GroupListing is one consumer group as ListGroups shows it (group type
// "consumer", protocol type "consumer").
type GroupListing struct {
	Group string
	State string
}

// ListGroups returns the consumer groups, sorted by id, for ListGroups.
func (c *Coordinator) ListGroups() []GroupListing {
	out := make([]GroupListing, 0, len(c.groups))
	for _, id := range sortedKeys(c.groups) {
		out = append(out, GroupListing{Group: id, State: c.groups[id].state().String()})
	}
	return out
}

// IsConsumerGroup reports whether id is a consumer group here. A group id
// is either a consumer group (this package) or a classic group
// (coordinator/group), never both.
func (c *Coordinator) IsConsumerGroup(id string) bool {
	return c.groups[id] != nil
}

// HasMembers reports whether consumer group id exists and has members.
func (c *Coordinator) HasMembers(id string) bool {
	g := c.groups[id]
	return g != nil && len(g.members) > 0
}

// DeleteGroup deletes an empty consumer group for DeleteGroups, or when a
// classic JoinGroup takes the id over. It returns 0 and the tombstones to
// append, or GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP. The committed offsets
// of the group live in the classic coordinator, which deletes them.
func (c *Coordinator) DeleteGroup(id string) (int16, []Record) {
	g := c.groups[id]
	switch {
	case g == nil:
		return kerr.GroupIDNotFound.Code, nil
	case len(g.members) > 0:
		return kerr.NonEmptyGroup.Code, nil
	}
	var w out
	for _, mid := range sortedKeys(g.target) {
		c.emit(&w, opTarget{group: id, member: mid, tomb: true})
	}
	c.emit(&w, opTargetEpoch{group: id, tomb: true})
	c.emit(&w, opSubMeta{group: id, tomb: true})
	c.emit(&w, opGroupEpoch{group: id, tomb: true})
	return 0, w.records
}

// CommitPartition is one partition of an OffsetCommit or TxnOffsetCommit:
// by topic id when the request carries one (OffsetCommit v10+), else by
// name.
type CommitPartition struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
}

// ValidateCommit checks an OffsetCommit (v9+: GenerationIDOrMemberEpoch)
// or TxnOffsetCommit of parts for consumer group id, as Kafka's
// ConsumerGroup.validateOffsetCommit with KIP-1251 (Kafka 4.3): a commit
// with a negative epoch is accepted while the group has no members (admin
// tools, manual assignment); otherwise the member must exist
// (UNKNOWN_MEMBER_ID). Its current epoch commits anything; a newer one is
// STALE_MEMBER_EPOCH; an older one commits only if every partition is
// still the member's and was given to it at that epoch or before (its
// assignment epoch), else the whole commit is STALE_MEMBER_EPOCH, as
// Kafka's validator fails the request at the first such partition. So a
// commit racing a heartbeat that moved the member to a new epoch still
// lands for the partitions it kept, and can never overwrite the offsets
// of a partition's next owner. GROUP_ID_NOT_FOUND if id is not a consumer
// group. A commit does not extend the member's session.
func (c *Coordinator) ValidateCommit(id, memberID string, memberEpoch int32, parts []CommitPartition) int16 {
	g := c.groups[id]
	if g == nil {
		return kerr.GroupIDNotFound.Code
	}
	if memberEpoch < 0 && len(g.members) == 0 {
		return 0
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	switch {
	case memberEpoch == m.cur.epoch:
		return 0
	case memberEpoch > m.cur.epoch || memberEpoch < 0:
		return kerr.StaleMemberEpoch.Code
	}
	for _, p := range parts {
		t := p.TopicID
		if t == (uuid{}) {
			meta, ok := g.subMeta[p.Topic]
			if !ok {
				return kerr.StaleMemberEpoch.Code
			}
			t = meta.id
		}
		if e, ok := m.since[partitionKey{t, p.Partition}]; !ok || e > memberEpoch {
			return kerr.StaleMemberEpoch.Code
		}
	}
	return 0
}

// ValidateOffsetFetch checks the member id and epoch of an OffsetFetch v9+
// group for consumer group id (Kafka's ConsumerGroup.validateOffsetFetch):
// no member id and a negative epoch (admin clients) is always accepted.
func (c *Coordinator) ValidateOffsetFetch(id string, memberID *string, memberEpoch int32) int16 {
	if memberID == nil && memberEpoch < 0 {
		return 0
	}
	g := c.groups[id]
	if g == nil {
		return kerr.GroupIDNotFound.Code
	}
	if memberID == nil {
		return kerr.UnknownMemberID.Code
	}
	m := g.members[*memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if memberEpoch != m.cur.epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}
