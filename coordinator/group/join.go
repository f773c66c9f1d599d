package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup handles JoinGroup v0-v9. Versions: v1 adds the rebalance
// timeout (v0 uses the session timeout), v4 requires a member id
// (MEMBER_ID_REQUIRED, KIP-394), v5 adds group.instance.id (KIP-345), v7
// returns the protocol type and a nullable protocol name, v9 adds
// SkipAssignment (KIP-814). The reply for token is usually parked until the
// join completes; it then comes out of a later JoinGroup, LeaveGroup or Tick.
func (c *Coordinator) JoinGroup(now time.Time, token any, client Client, req *kmsg.JoinGroupRequest) ([]Reply, []Record) {
	c.begin(now)
	var o out
	c.joinGroup(&o, now, token, client, req)
	return o.replies, o.records
}

// joinRequest is a JoinGroup reduced to what the state machine uses.
type joinRequest struct {
	token              any
	version            int16
	client             Client
	sessionTimeoutMs   int32
	rebalanceTimeoutMs int32
	instanceID         *string
	protocolType       string
	protocols          []kmsg.JoinGroupRequestProtocol
}

func (c *Coordinator) joinGroup(o *out, now time.Time, token any, client Client, req *kmsg.JoinGroupRequest) {
	v := req.Version
	fail := func(code int16) { o.reply(token, joinError(v, code, req.MemberID)) }
	if req.Group == "" {
		fail(kerr.InvalidGroupID.Code)
		return
	}
	if req.SessionTimeoutMillis < c.cfg.GroupMinSessionTimeoutMs || req.SessionTimeoutMillis > c.cfg.GroupMaxSessionTimeoutMs {
		fail(kerr.InvalidSessionTimeout.Code)
		return
	}
	jr := joinRequest{
		token:              token,
		version:            v,
		client:             client,
		sessionTimeoutMs:   req.SessionTimeoutMillis,
		rebalanceTimeoutMs: req.RebalanceTimeoutMillis,
		protocolType:       req.ProtocolType,
		protocols:          req.Protocols,
	}
	if v < 1 {
		jr.rebalanceTimeoutMs = req.SessionTimeoutMillis
	}
	if v >= 5 {
		jr.instanceID = req.InstanceID
	}
	g := c.groups[req.Group]
	unknown := req.MemberID == ""
	if g == nil {
		if !unknown {
			fail(kerr.UnknownMemberID.Code)
			return
		}
		g = newGroup(req.Group, now.UnixMilli())
		c.groups[req.Group] = g
	}
	defer c.maybeForget(g)

	if !c.acceptJoiningMember(g, req.MemberID) {
		if m, ok := g.members[req.MemberID]; ok {
			c.removeMember(o, g, now, m)
		}
		o.reply(token, joinError(v, kerr.GroupMaxSizeReached.Code, ""))
		return
	}
	if unknown {
		c.newMemberJoin(o, g, now, jr)
	} else {
		c.currentMemberJoin(o, g, now, jr, req.MemberID)
	}
	c.tryCompleteJoin(o, g, now)
}

// acceptJoiningMember applies group.max.size as Kafka does: members
// already counted are always let back in.
func (c *Coordinator) acceptJoiningMember(g *group, memberID string) bool {
	max := int(c.cfg.GroupMaxSize)
	m, has := g.members[memberID]
	switch g.state {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		return (has && m.join != nil) || g.numAwaitingJoin() < max
	default:
		return has || len(g.members) < max
	}
}

func (c *Coordinator) newMemberJoin(o *out, g *group, now time.Time, jr joinRequest) {
	if g.state == Dead {
		o.reply(jr.token, joinError(jr.version, kerr.CoordinatorNotAvailable.Code, ""))
		return
	}
	if !g.supportsProtocols(jr.protocolType, jr.protocols) {
		o.reply(jr.token, joinError(jr.version, kerr.InconsistentGroupProtocol.Code, ""))
		return
	}
	id := c.newMemberID(jr.client.ID)
	switch {
	case jr.instanceID != nil:
		if old, ok := g.static[*jr.instanceID]; ok {
			c.replaceStaticMember(o, g, now, jr, old, id)
		} else {
			c.addMemberAndRebalance(o, g, now, jr, id)
		}
	case jr.version >= 4:
		// KIP-394: hand out the id and wait for the member to come back
		// with it, so that ids of members that never return are bounded
		// by their session timeout.
		g.pending[id] = now.Add(ms(jr.sessionTimeoutMs))
		o.reply(jr.token, joinError(jr.version, kerr.MemberIDRequired.Code, id))
	default:
		c.addMemberAndRebalance(o, g, now, jr, id)
	}
}

func (c *Coordinator) currentMemberJoin(o *out, g *group, now time.Time, jr joinRequest, memberID string) {
	fail := func(code int16) { o.reply(jr.token, joinError(jr.version, code, memberID)) }
	if g.state == Dead {
		fail(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if !g.supportsProtocols(jr.protocolType, jr.protocols) {
		fail(kerr.InconsistentGroupProtocol.Code)
		return
	}
	if _, ok := g.pending[memberID]; ok {
		if jr.instanceID != nil {
			// Static members are never handed pending ids.
			fail(kerr.UnknownMemberID.Code)
			return
		}
		c.addMemberAndRebalance(o, g, now, jr, memberID)
		return
	}
	if code := g.validateMember(memberID, jr.instanceID); code != 0 {
		fail(code)
		return
	}
	m := g.members[memberID]
	switch g.state {
	case PreparingRebalance:
		c.updateMemberAndRebalance(o, g, now, m, jr)
	case CompletingRebalance:
		if m.matches(jr.protocols) {
			// The member probably lost the join response: repeat it.
			o.reply(jr.token, c.joinSuccess(g, m, jr.version, g.leader == m.id))
		} else {
			c.updateMemberAndRebalance(o, g, now, m, jr)
		}
	case Stable:
		// A leader's join forces a rebalance so that it can react to
		// changes the member metadata does not show (topic metadata).
		if g.leader == m.id || !m.matches(jr.protocols) {
			c.updateMemberAndRebalance(o, g, now, m, jr)
		} else {
			o.reply(jr.token, c.joinSuccess(g, m, jr.version, false))
		}
	default:
		fail(kerr.UnknownMemberID.Code)
	}
}

func (c *Coordinator) addMemberAndRebalance(o *out, g *group, now time.Time, jr joinRequest, id string) {
	c.memberSeq++
	m := &member{
		id:                 id,
		instanceID:         jr.instanceID,
		clientID:           jr.client.ID,
		clientHost:         jr.client.Host,
		seq:                c.memberSeq,
		sessionTimeoutMs:   jr.sessionTimeoutMs,
		rebalanceTimeoutMs: jr.rebalanceTimeoutMs,
		protocolType:       jr.protocolType,
		protocols:          toProtocols(jr.protocols),
		join:               &parked{token: jr.token, version: jr.version},
		isNew:              true,
		deadline:           now.Add(newMemberJoinTimeout),
	}
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m)
	delete(g.pending, id)
	c.maybePrepareRebalance(o, g, now)
}

// updateMember replaces a member's protocols and timeouts and parks jr.
// A join the member had already parked is answered with
// REBALANCE_IN_PROGRESS so that its token is not lost.
func (c *Coordinator) updateMember(o *out, m *member, jr joinRequest) {
	if m.join != nil {
		o.reply(m.join.token, joinError(m.join.version, kerr.RebalanceInProgress.Code, m.id))
	}
	m.protocols = toProtocols(jr.protocols)
	m.protocolType = jr.protocolType
	m.sessionTimeoutMs = jr.sessionTimeoutMs
	m.rebalanceTimeoutMs = jr.rebalanceTimeoutMs
	m.join = &parked{token: jr.token, version: jr.version}
}

func (c *Coordinator) updateMemberAndRebalance(o *out, g *group, now time.Time, m *member, jr joinRequest) {
	c.updateMember(o, m, jr)
	c.maybePrepareRebalance(o, g, now)
}

// replaceStaticMember gives the static member holding jr.instanceID the new
// id newID (KIP-345). Requests parked under the old id are fenced. A Stable
// group whose selected protocol would not change keeps its generation and
// assignment: the new id is persisted and the member answered at once.
func (c *Coordinator) replaceStaticMember(o *out, g *group, now time.Time, jr joinRequest, oldID, newID string) {
	m := g.members[oldID]
	oldLeader := g.leader
	if m.join != nil {
		o.reply(m.join.token, joinError(m.join.version, kerr.FencedInstanceID.Code, oldID))
		m.join = nil
	}
	if m.sync != nil {
		o.reply(m.sync.token, syncError(m.sync.version, kerr.FencedInstanceID.Code))
		m.sync = nil
	}
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	g.static[*jr.instanceID] = newID
	if g.leader == oldID {
		g.leader = newID
	}
	if _, ok := g.pendingSync[oldID]; ok {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = struct{}{}
	}
	m.deadline = now.Add(ms(jr.sessionTimeoutMs))
	m.clientID, m.clientHost = jr.client.ID, jr.client.Host
	c.updateMember(o, m, jr)

	switch g.state {
	case Stable:
		if g.selectProtocol() == g.protocol {
			o.records = append(o.records, c.groupRecord(g))
			isLeader := g.leader == newID
			resp := c.joinSuccess(g, m, jr.version, isLeader)
			if jr.version >= 9 {
				// KIP-814: the leader keeps the current assignment.
				resp.SkipAssignment = isLeader
			} else {
				// Older clients would assign again if they saw themselves
				// as leader, and a Stable group would not propagate it:
				// answer with the previous leader id, as Kafka did then.
				resp.LeaderID = oldLeader
				resp.Members = nil
			}
			m.join = nil
			o.reply(jr.token, resp)
		} else {
			c.prepareRebalance(o, g, now)
		}
	case CompletingRebalance:
		// The leader may already hold the old id for its assignment.
		c.prepareRebalance(o, g, now)
	case PreparingRebalance:
		// Parked; the join completes with the new id.
	default:
		o.reply(m.join.token, joinError(jr.version, kerr.UnknownMemberID.Code, newID))
		m.join = nil
	}
}

func (c *Coordinator) maybePrepareRebalance(o *out, g *group, now time.Time) {
	switch g.state {
	case Stable, CompletingRebalance, Empty:
		c.prepareRebalance(o, g, now)
	}
}

// prepareRebalance moves g to PreparingRebalance and arms the join timer:
// group.initial.rebalance.delay.ms for a group that was Empty, else the
// largest rebalance timeout of its members.
func (c *Coordinator) prepareRebalance(o *out, g *group, now time.Time) {
	if g.state == CompletingRebalance {
		c.resetAssignments(o, g, kerr.RebalanceInProgress.Code)
	}
	clear(g.pendingSync)
	g.syncDeadline = time.Time{}
	delay := ms(c.cfg.GroupInitialRebalanceDelayMs)
	if g.state == Empty && delay > 0 {
		g.initialDelay = true
		g.initialRemaining = max(g.rebalanceTimeout()-delay, 0)
		g.newMemberAdded = false
		g.joinDeadline = now.Add(delay)
	} else {
		g.initialDelay = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
	}
	g.transition(PreparingRebalance, now)
}

// resetAssignments clears every assignment and answers parked SyncGroups
// with code.
func (c *Coordinator) resetAssignments(o *out, g *group, code int16) {
	for _, m := range g.sortedMembers() {
		m.assignment = nil
		if m.sync != nil {
			o.reply(m.sync.token, syncError(m.sync.version, code))
			m.sync = nil
		}
	}
}

// tryCompleteJoin completes the join once everyone is in, except during
// the initial delay, which always runs its course.
func (c *Coordinator) tryCompleteJoin(o *out, g *group, now time.Time) {
	if g.state == PreparingRebalance && !g.initialDelay && g.allJoined() {
		c.completeJoin(o, g, now)
	}
}

// expireJoin runs when joinDeadline passes.
func (c *Coordinator) expireJoin(o *out, g *group, now time.Time) {
	if g.initialDelay && g.newMemberAdded && g.initialRemaining > 0 {
		// Members keep arriving: wait once more, within the rebalance
		// timeout.
		delay := ms(c.cfg.GroupInitialRebalanceDelayMs)
		next := min(delay, g.initialRemaining)
		g.initialRemaining = max(g.initialRemaining-delay, 0)
		g.newMemberAdded = false
		g.joinDeadline = now.Add(next)
		return
	}
	c.completeJoin(o, g, now)
}

// completeJoin ends PreparingRebalance (Kafka's onCompleteJoin): dynamic
// members that did not rejoin are dropped, a leader is chosen among those
// that did, the generation advances and every parked join is answered.
func (c *Coordinator) completeJoin(o *out, g *group, now time.Time) {
	g.initialDelay = false
	g.joinDeadline = time.Time{}
	for _, m := range g.sortedMembers() {
		if m.join == nil && m.instanceID == nil {
			c.dropMember(o, g, m)
		}
	}
	if len(g.members) > 0 {
		if l := g.members[g.leader]; l == nil || l.join == nil {
			var joined *member
			for _, m := range g.sortedMembers() {
				if m.join != nil {
					joined = m
					break
				}
			}
			if joined == nil {
				// Only static members that have not rejoined: wait another
				// rebalance timeout for them to rejoin or expire (at least
				// 1ms, so that Tick always makes progress).
				g.joinDeadline = now.Add(max(g.rebalanceTimeout(), time.Millisecond))
				return
			}
			g.leader = joined.id
		}
	}

	g.generation++
	clear(g.pendingSync)
	g.syncDeadline = time.Time{}
	if len(g.members) == 0 {
		g.protocol = ""
		g.computeSubscribed()
		g.transition(Empty, now)
		o.records = append(o.records, c.groupRecord(g))
		return
	}
	g.protocol = g.selectProtocol()
	g.computeSubscribed()
	g.transition(CompletingRebalance, now)
	for _, m := range g.sortedMembers() {
		if m.join != nil {
			o.reply(m.join.token, c.joinSuccess(g, m, m.join.version, g.leader == m.id))
			m.join = nil
		}
		m.isNew = false
		m.deadline = now.Add(ms(m.sessionTimeoutMs))
		g.pendingSync[m.id] = struct{}{}
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
}

// joinSuccess is the JoinGroup answer for m in the current generation; the
// leader also gets every member's metadata for the selected protocol.
func (c *Coordinator) joinSuccess(g *group, m *member, v int16, withMembers bool) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = v
	resp.Generation = g.generation
	resp.ProtocolType = nullable(g.protocolType)
	resp.Protocol = nullable(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if withMembers {
		for _, o := range g.sortedMembers() {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = o.id
			rm.InstanceID = o.instanceID
			rm.ProtocolMetadata = o.metadataFor(g.protocol)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

// joinError is a failed JoinGroup answer.
func joinError(v int16, code int16, memberID string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = v
	resp.ErrorCode = code
	resp.Generation = -1
	resp.MemberID = memberID
	return resp
}

// removeMember removes m after its session expired or it left: a parked
// join or sync is answered with UNKNOWN_MEMBER_ID (the member, if alive,
// rejoins), and the group rebalances.
func (c *Coordinator) removeMember(o *out, g *group, now time.Time, m *member) {
	c.dropMember(o, g, m)
	switch g.state {
	case Stable, CompletingRebalance:
		c.maybePrepareRebalance(o, g, now)
	case PreparingRebalance:
		c.tryCompleteJoin(o, g, now)
	}
}

// dropMember removes m from g, answering its parked requests.
func (c *Coordinator) dropMember(o *out, g *group, m *member) {
	if m.join != nil {
		o.reply(m.join.token, joinError(m.join.version, kerr.UnknownMemberID.Code, ""))
		m.join = nil
	}
	if m.sync != nil {
		o.reply(m.sync.token, syncError(m.sync.version, kerr.UnknownMemberID.Code))
		m.sync = nil
	}
	g.remove(m.id)
}

// fire runs whatever of g is due at time at (at is one of g's deadlines).
func (c *Coordinator) fire(o *out, g *group, at time.Time) {
	for id, t := range g.pending {
		if !at.Before(t) {
			delete(g.pending, id)
			c.tryCompleteJoin(o, g, at)
		}
	}
	for _, m := range g.sortedMembers() {
		if g.members[m.id] == m && m.expires(at) {
			c.removeMember(o, g, at, m)
		}
	}
	if !g.syncDeadline.IsZero() && !at.Before(g.syncDeadline) {
		g.syncDeadline = time.Time{}
		if (g.state == CompletingRebalance || g.state == Stable) && len(g.pendingSync) > 0 {
			for _, id := range sortedKeys(g.pendingSync) {
				if m := g.members[id]; m != nil {
					c.dropMember(o, g, m)
				}
			}
			c.prepareRebalance(o, g, at)
			c.tryCompleteJoin(o, g, at)
		}
		clear(g.pendingSync)
	}
	if g.state == PreparingRebalance && !g.joinDeadline.IsZero() && !at.Before(g.joinDeadline) {
		c.expireJoin(o, g, at)
	}
}

func toProtocols(ps []kmsg.JoinGroupRequestProtocol) []protocol {
	out := make([]protocol, len(ps))
	for i, p := range ps {
		out[i] = protocol{name: p.Name, metadata: p.Metadata}
	}
	return out
}

// nullable returns nil for "" and &s otherwise.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
