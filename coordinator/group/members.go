package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup handles SyncGroup v0-v5. Versions: v3 adds group.instance.id,
// v5 adds the protocol type and name, checked against the group's. During
// CompletingRebalance a follower's reply is parked until the leader sends
// the assignment; the leader's SyncGroup persists the group (one Record)
// and answers every parked SyncGroup.
func (c *Coordinator) SyncGroup(now time.Time, token any, req *kmsg.SyncGroupRequest) ([]Reply, []Record) {
	c.begin(now)
	var o out
	c.syncGroup(&o, now, token, req)
	return o.replies, o.records
}

func (c *Coordinator) syncGroup(o *out, now time.Time, token any, req *kmsg.SyncGroupRequest) {
	v := req.Version
	fail := func(code int16) { o.reply(token, syncError(v, code)) }
	if req.Group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	g := c.groups[req.Group]
	if g == nil {
		fail(kerr.UnknownMemberID.Code)
		return
	}
	if g.state == Dead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	var instanceID *string
	if v >= 3 {
		instanceID = req.InstanceID
	}
	if code := g.validateMember(req.MemberID, instanceID); code != 0 {
		fail(code)
		return
	}
	if req.Generation != g.generation {
		fail(kerr.IllegalGeneration.Code)
		return
	}
	if v >= 5 {
		if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
			(req.Protocol != nil && *req.Protocol != g.protocol) {
			fail(kerr.InconsistentGroupProtocol.Code)
			return
		}
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		fail(kerr.UnknownMemberID.Code)
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress.Code)
	case CompletingRebalance:
		if m.sync != nil {
			o.reply(m.sync.token, syncError(m.sync.version, kerr.RebalanceInProgress.Code))
		}
		m.sync = &parked{token: token, version: v}
		c.syncDone(g, m.id)
		if g.leader != m.id {
			return
		}
		assigned := make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			assigned[a.MemberID] = a.MemberAssignment
		}
		for _, gm := range g.members {
			gm.assignment = assigned[gm.id]
			if gm.assignment == nil {
				gm.assignment = []byte{}
			}
		}
		// The group stays CompletingRebalance, its SyncGroups parked,
		// until the assignment is in the log (Appended): a member must
		// not act on a generation a coordinator failover could lose.
		w := c.newWrite(g)
		w.sync, w.gen = true, g.generation
		rec := c.groupRecord(g)
		rec.w = w
		o.records = append(o.records, rec)
	case Stable:
		c.syncDone(g, m.id)
		m.deadline = now.Add(ms(m.sessionTimeoutMs))
		o.reply(token, c.syncSuccess(g, m, v))
	}
}

// assignmentStored completes a rebalance once its assignment is in the
// log: the group becomes Stable and the parked SyncGroups are answered.
func (c *Coordinator) assignmentStored(o *out, g *group, now time.Time) {
	g.transition(Stable, now)
	for _, gm := range g.sortedMembers() {
		if gm.sync != nil {
			o.reply(gm.sync.token, c.syncSuccess(g, gm, gm.sync.version))
			gm.sync = nil
			gm.deadline = now.Add(ms(gm.sessionTimeoutMs))
		}
	}
}

// syncDone notes that member id has sent its SyncGroup for the generation.
func (c *Coordinator) syncDone(g *group, id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncDeadline = time.Time{}
	}
}

func (c *Coordinator) syncSuccess(g *group, m *member, v int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = v
	resp.ProtocolType = nullable(g.protocolType)
	resp.Protocol = nullable(g.protocol)
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

func syncError(v int16, code int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = v
	resp.ErrorCode = code
	resp.MemberAssignment = []byte{}
	return resp
}

// Heartbeat handles Heartbeat v0-v4 (v3 adds group.instance.id). A valid
// heartbeat renews the member's session; during PreparingRebalance it
// answers REBALANCE_IN_PROGRESS so the member rejoins.
func (c *Coordinator) Heartbeat(now time.Time, token any, req *kmsg.HeartbeatRequest) ([]Reply, []Record) {
	c.begin(now)
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	resp.ErrorCode = c.heartbeat(now, req)
	return []Reply{{Token: token, Resp: resp}}, nil
}

func (c *Coordinator) heartbeat(now time.Time, req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	var instanceID *string
	if req.Version >= 3 {
		instanceID = req.InstanceID
	}
	if code := g.validateMember(req.MemberID, instanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.members[req.MemberID]
	switch g.state {
	case Empty:
		return kerr.UnknownMemberID.Code
	case PreparingRebalance:
		m.deadline = now.Add(ms(m.sessionTimeoutMs))
		return kerr.RebalanceInProgress.Code
	default: // CompletingRebalance, Stable
		m.deadline = now.Add(ms(m.sessionTimeoutMs))
		return 0
	}
}

// LeaveGroup handles LeaveGroup v0-v5. v0-v2 name one member by id; v3+
// name a batch of members, each by member id or, for static members, by
// group.instance.id with an empty member id; v5 adds a reason (ignored).
// Departures rebalance the group; replies parked by the members that left
// are answered with UNKNOWN_MEMBER_ID.
func (c *Coordinator) LeaveGroup(now time.Time, token any, req *kmsg.LeaveGroupRequest) ([]Reply, []Record) {
	c.begin(now)
	var o out
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	codes := c.leaveGroup(&o, now, req.Group, leaving, &resp.ErrorCode)
	if req.Version < 3 {
		if resp.ErrorCode == 0 && len(codes) == 1 {
			resp.ErrorCode = codes[0]
		}
	} else if resp.ErrorCode == 0 {
		for i, l := range leaving {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID = l.MemberID
			rm.InstanceID = l.InstanceID
			rm.ErrorCode = codes[i]
			resp.Members = append(resp.Members, rm)
		}
	}
	o.reply(token, resp)
	return o.replies, o.records
}

// leaveGroup removes the leaving members and returns one error code per
// member; a group-level error goes to *top instead.
func (c *Coordinator) leaveGroup(o *out, now time.Time, groupID string, leaving []kmsg.LeaveGroupRequestMember, top *int16) []int16 {
	codes := make([]int16, len(leaving))
	if groupID == "" {
		*top = kerr.InvalidGroupID.Code
		return codes
	}
	g := c.groups[groupID]
	if g == nil {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
		return codes
	}
	if g.state == Dead {
		*top = kerr.CoordinatorNotAvailable.Code
		return codes
	}
	defer c.maybeForget(g)
	for i, l := range leaving {
		if l.MemberID == "" && l.InstanceID != nil {
			id, ok := g.static[*l.InstanceID]
			if !ok {
				codes[i] = kerr.UnknownMemberID.Code
				continue
			}
			c.removeMember(o, g, now, g.members[id])
			continue
		}
		if _, ok := g.pending[l.MemberID]; ok && l.InstanceID == nil {
			delete(g.pending, l.MemberID)
			c.tryCompleteJoin(o, g, now)
			continue
		}
		if code := g.validateMember(l.MemberID, l.InstanceID); code != 0 {
			codes[i] = code
			continue
		}
		c.removeMember(o, g, now, g.members[l.MemberID])
	}
	return codes
}
