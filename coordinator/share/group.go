package share

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// group is one share group.
type group struct {
	id string
	// epoch is the group epoch, bumped by every membership, subscription
	// or metadata change. Invariant: assignmentEpoch == epoch (assignment
	// is computed at once; share groups have no revocation phase).
	epoch           int32
	assignmentEpoch int32
	members         map[string]*member
	// topicsSig is the metadata of the subscribed topics the current
	// assignment was computed from; a change bumps the epoch.
	topicsSig string
	// parts is the state of every share-partition of the group.
	parts map[TopicPartition]*partition
}

// member is one share-group member.
type member struct {
	id    string
	epoch int32
	// prevEpoch is accepted too, in case the response that moved the
	// member to epoch was lost (Kafka's throwIfShareGroupMemberEpochIsInvalid).
	prevEpoch  int32
	client     Client
	rack       *string
	subscribed []string // sorted
	// assigned is the member's target assignment by topic id.
	assigned map[[16]byte][]int32
	// deadline is when the member is fenced without a heartbeat.
	deadline time.Time
}

func (g *group) state() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func (c *Coordinator) groupOrCreate(id string) *group {
	g := c.groups[id]
	if g == nil {
		g = &group{id: id, members: map[string]*member{}, parts: map[TopicPartition]*partition{}}
		c.groups[id] = g
	}
	return g
}

// Heartbeat answers a ShareGroupHeartbeat: epoch 0 joins, -1 leaves, and
// any other epoch is a heartbeat of a member at that (or its previous) epoch.
func (c *Coordinator) Heartbeat(now time.Time, client Client, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(e *kerr.Error, msg string) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	switch {
	case strings.TrimSpace(req.GroupID) == "":
		return fail(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.MemberID == "" || len(req.MemberID) > 36:
		return fail(kerr.InvalidRequest, "MemberId must be a client-generated id of at most 36 characters.")
	case req.MemberEpoch < -1:
		return fail(kerr.InvalidRequest, fmt.Sprintf("MemberEpoch %d is invalid.", req.MemberEpoch))
	case req.RackID != nil && strings.TrimSpace(*req.RackID) == "":
		return fail(kerr.InvalidRequest, "RackId can't be empty.")
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return fail(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
	}
	g := c.groups[req.GroupID]
	if req.MemberEpoch == -1 {
		if g == nil || g.members[req.MemberID] == nil {
			return fail(kerr.UnknownMemberID, "")
		}
		c.removeMember(g, req.MemberID)
		resp.MemberID = &req.MemberID
		resp.MemberEpoch = -1
		return resp
	}
	if req.MemberEpoch > 0 {
		if g == nil {
			return fail(kerr.GroupIDNotFound, "")
		}
		m := g.members[req.MemberID]
		if m == nil {
			return fail(kerr.UnknownMemberID, "")
		}
		if req.MemberEpoch != m.epoch && req.MemberEpoch != m.prevEpoch {
			return fail(kerr.FencedMemberEpoch, "")
		}
	}
	g = c.groupOrCreate(req.GroupID)
	changed := false
	m := g.members[req.MemberID]
	if m == nil {
		if int32(len(g.members)) >= c.cfg.MaxGroupSize {
			return fail(kerr.GroupMaxSizeReached, "")
		}
		m = &member{id: req.MemberID, assigned: map[[16]byte][]int32{}}
		g.members[m.id] = m
		changed = true
	}
	m.client = client
	if req.RackID != nil {
		m.rack = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		subs := slices.Clone(req.SubscribedTopicNames)
		sort.Strings(subs)
		subs = slices.Compact(subs)
		if !slices.Equal(subs, m.subscribed) {
			m.subscribed = subs
			changed = true
		}
	}
	m.deadline = now.Add(time.Duration(c.sessionTimeoutMs(g.id)) * time.Millisecond)
	c.maybeReassign(g, changed)

	before := m.epoch
	if m.epoch != g.epoch {
		m.prevEpoch, m.epoch = m.epoch, g.epoch
	}
	resp.MemberID = &req.MemberID
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = c.heartbeatIntervalMs(g.id)
	// As Kafka: the assignment goes to a full request (a join, or one
	// carrying the subscription) and to any heartbeat that moved the epoch.
	if req.SubscribedTopicNames != nil || m.epoch != before {
		resp.Assignment = assignmentOf(m)
	}
	return resp
}

func assignmentOf(m *member) *kmsg.ShareGroupHeartbeatResponseAssignment {
	a := new(kmsg.ShareGroupHeartbeatResponseAssignment)
	ids := make([][16]byte, 0, len(m.assigned))
	for id := range m.assigned {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	for _, id := range ids {
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID = id
		tp.Partitions = slices.Clone(m.assigned[id])
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// removeMember drops a member (leave or fence): its share sessions go
// first, so no parked fetch acquires for it again, then every record it
// holds is released, and the rest of the group is reassigned.
func (c *Coordinator) removeMember(g *group, memberID string) {
	delete(g.members, memberID)
	delete(c.sessions, sessionKey{g.id, memberID})
	limit := c.deliveryLimit(g.id)
	for tp, p := range g.parts {
		if p.releaseMember(memberID, limit) {
			c.changes++
			c.markDirty(g.id, tp)
		}
	}
	c.maybeReassign(g, true)
}

// maybeReassign bumps the group epoch once and recomputes the assignment
// when membership or subscriptions changed, or the subscribed topics did
// (created, deleted, grown).
func (c *Coordinator) maybeReassign(g *group, changed bool) {
	topics := c.subscribedTopics(g)
	if sig := topicsSignature(topics); sig != g.topicsSig {
		g.topicsSig = sig
		changed = true
	}
	if !changed {
		return
	}
	g.epoch++
	assignSimple(g, topics)
	g.assignmentEpoch = g.epoch
}

// subscribedTopics returns the existing topics some member subscribes to, sorted by name.
func (c *Coordinator) subscribedTopics(g *group) []TopicInfo {
	want := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.subscribed {
			want[t] = true
		}
	}
	if len(want) == 0 {
		return nil
	}
	var out []TopicInfo
	for _, t := range c.topics() {
		if want[t.Name] && t.Partitions > 0 {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func topicsSignature(ts []TopicInfo) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%s/%x/%d;", t.Name, t.ID, t.Partitions)
	}
	return b.String()
}

// assignSimple is Kafka's SimpleAssignor for homogeneous or heterogeneous
// subscriptions, per topic: with no more subscribers than partitions each
// partition goes to one subscriber, round robin over the sorted member
// ids; with more subscribers than partitions each subscriber gets one
// partition and partitions are shared as evenly as possible. Every
// partition of a subscribed topic is assigned to at least one member.
func assignSimple(g *group, topics []TopicInfo) {
	ids := make([]string, 0, len(g.members))
	for id, m := range g.members {
		m.assigned = map[[16]byte][]int32{}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, t := range topics {
		var subs []*member
		for _, id := range ids {
			if _, ok := slices.BinarySearch(g.members[id].subscribed, t.Name); ok {
				subs = append(subs, g.members[id])
			}
		}
		if len(subs) == 0 {
			continue
		}
		if int32(len(subs)) <= t.Partitions {
			for p := int32(0); p < t.Partitions; p++ {
				m := subs[int(p)%len(subs)]
				m.assigned[t.ID] = append(m.assigned[t.ID], p)
			}
			continue
		}
		for i, m := range subs {
			m.assigned[t.ID] = append(m.assigned[t.ID], int32(i)%t.Partitions)
		}
	}
}

// Describe answers ShareGroupDescribe.
func (c *Coordinator) Describe(req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	names := map[[16]byte]string{}
	for _, t := range c.topics() {
		names[t.ID] = t.Name
	}
	for _, id := range req.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID = id
		rg.AuthorizedOperations = -2147483648
		g := c.groups[id]
		if g == nil {
			rg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := fmt.Sprintf("Group %s not found.", id)
			rg.ErrorMessage = &msg
			rg.GroupState = "Dead"
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.GroupState = g.state()
		rg.GroupEpoch = g.epoch
		rg.AssignmentEpoch = g.assignmentEpoch
		rg.Assignor = "simple"
		mids := make([]string, 0, len(g.members))
		for mid := range g.members {
			mids = append(mids, mid)
		}
		sort.Strings(mids)
		for _, mid := range mids {
			m := g.members[mid]
			rm := kmsg.NewShareGroupDescribeResponseGroupMember()
			rm.MemberID = m.id
			rm.RackID = m.rack
			rm.MemberEpoch = m.epoch
			rm.ClientID = m.client.ID
			rm.ClientHost = m.client.Host
			rm.SubscribedTopicNames = slices.Clone(m.subscribed)
			for _, tp := range assignmentOf(m).TopicPartitions {
				at := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				at.TopicID = tp.TopicID
				at.Topic = names[tp.TopicID]
				at.Partitions = tp.Partitions
				rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, at)
			}
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
