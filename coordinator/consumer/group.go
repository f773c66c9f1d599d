package consumer

import (
	"regexp"
	"slices"
	"sort"
	"time"
)

// GroupState is the state of a consumer group, derived from its members and
// epochs (Kafka's ConsumerGroup.maybeUpdateGroupState), spelled as Kafka
// spells it in ConsumerGroupDescribe and ListGroups.
type GroupState int8

// The consumer group states.
const (
	// Empty: the group has no members.
	Empty GroupState = iota
	// Assigning: the group epoch is ahead of the target assignment epoch;
	// the next heartbeat computes a new target assignment.
	Assigning
	// Reconciling: some member has not yet reached the target assignment.
	Reconciling
	// Stable: every member owns exactly its target at the assignment epoch.
	Stable
)

// String returns Kafka's name of the state.
func (s GroupState) String() string {
	switch s {
	case Empty:
		return "Empty"
	case Assigning:
		return "Assigning"
	case Reconciling:
		return "Reconciling"
	case Stable:
		return "Stable"
	}
	return "Unknown"
}

// MemberState is where a member is in its reconciliation towards its target
// assignment (Kafka's MemberState). The numeric values are those of the
// State field of ConsumerGroupCurrentMemberAssignmentValue.
type MemberState int8

// The member states.
const (
	// MemberStable: the member owns its target at the member's epoch.
	MemberStable MemberState = 0
	// MemberUnrevokedPartitions: the member must stop consuming the
	// partitions pending revocation and acknowledge it in a heartbeat
	// before it may move to the next epoch.
	MemberUnrevokedPartitions MemberState = 1
	// MemberUnreleasedPartitions: the member is at the target epoch but
	// part of its target is still owned by members that must revoke it.
	MemberUnreleasedPartitions MemberState = 2
	// MemberUnknown: a state written by a newer version. Such a member is
	// fenced unless it reports owning nothing, then reconciled afresh.
	MemberUnknown MemberState = 127
)

// String returns Kafka's name of the state.
func (s MemberState) String() string {
	switch s {
	case MemberStable:
		return "STABLE"
	case MemberUnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case MemberUnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// Special member epochs of ConsumerGroupHeartbeat.
const (
	joinEpoch        int32 = 0
	leaveEpoch       int32 = -1
	staticLeaveEpoch int32 = -2
)

// subscription is the part of a member that ConsumerGroupMemberMetadataValue
// persists.
type subscription struct {
	instanceID         *string
	rackID             *string
	clientID           string
	clientHost         string
	topicNames         []string // as sent; never nil
	regex              *string  // nil if none
	serverAssignor     *string  // nil if the member did not ask for one
	rebalanceTimeoutMs int32
}

func (s subscription) equal(o subscription) bool {
	return eqPtr(s.instanceID, o.instanceID) && eqPtr(s.rackID, o.rackID) &&
		s.clientID == o.clientID && s.clientHost == o.clientHost &&
		slices.Equal(s.topicNames, o.topicNames) && eqPtr(s.regex, o.regex) &&
		eqPtr(s.serverAssignor, o.serverAssignor) && s.rebalanceTimeoutMs == o.rebalanceTimeoutMs
}

// current is the part of a member that
// ConsumerGroupCurrentMemberAssignmentValue persists.
type current struct {
	epoch     int32
	prevEpoch int32
	state     MemberState
	// assigned are the partitions the member may consume now.
	assigned assignment
	// pending are the partitions the member must revoke; non-empty only in
	// MemberUnrevokedPartitions (or MemberUnknown, read from a newer
	// version's record).
	pending assignment
}

func (c current) clone() current {
	c.assigned = c.assigned.clone()
	c.pending = c.pending.clone()
	return c
}

func (c current) equal(o current) bool {
	return c.epoch == o.epoch && c.prevEpoch == o.prevEpoch && c.state == o.state &&
		c.assigned.equal(o.assigned) && c.pending.equal(o.pending)
}

// member is one member of a consumer group.
type member struct {
	id  string
	sub subscription
	// re is sub.regex compiled, anchored at both ends; nil if no regex or
	// an empty one.
	re  *regexp.Regexp
	cur current
	// sessionDeadline is when the member is fenced for not heartbeating.
	// Zero only for members restored by Replay and not yet timed by Loaded.
	sessionDeadline time.Time
	// revokeDeadline is when the member is fenced if it is still at
	// revokeEpoch (it has not revoked in time); zero when not revoking.
	// Invariant: non-zero only while cur.state is MemberUnrevokedPartitions
	// or right after it left that state by a record replayed from the log.
	revokeDeadline time.Time
	revokeEpoch    int32
	// reported is what the member's last heartbeat with owned partitions
	// reported owning; nil if none did since it joined or was loaded. Kept
	// in memory only: it decides when an assignment is sent again
	// (assignmentUnconfirmed).
	reported assignment
	// since is the assignment epoch of each partition the member owns
	// (KIP-1251): the member epoch at which it was given the partition.
	// Invariant: its keys are exactly cur.assigned ∪ cur.pending, and
	// since[k] <= cur.epoch. Derived from the order of the member's
	// current-assignment records (assignmentEpochs), so a reload that
	// replays them all rebuilds it; a partition first seen in a record
	// (a compacted log) gets that record's epoch, the strictest answer.
	since map[partitionKey]int32
}

// partitionKey is one partition of a topic, by topic id.
type partitionKey struct {
	topic     uuid
	partition int32
}

// assignmentEpochs returns the assignment epochs of the partitions of cur
// (assigned and pending revocation), given the epochs of the member's
// previous current assignment: a partition it already owned keeps its
// epoch, a new one gets cur.epoch.
func assignmentEpochs(old map[partitionKey]int32, cur current) map[partitionKey]int32 {
	out := make(map[partitionKey]int32)
	for _, a := range []assignment{cur.assigned, cur.pending} {
		for t, ps := range a {
			for _, p := range ps {
				k := partitionKey{t, p}
				if e, ok := old[k]; ok && e <= cur.epoch {
					out[k] = e
				} else {
					out[k] = cur.epoch
				}
			}
		}
	}
	return out
}

// assignmentUnconfirmed reports whether the member's assignment changed at
// its current epoch (a member in MemberUnreleasedPartitions picking up
// released partitions: prevEpoch == epoch) and the member has not
// reported owning all of it since. A client that lost the response
// carrying that assignment and resends its keep-alive (franz-go retries
// a request whose connection died) sends the same epoch and no owned
// partitions, which Kafka cannot tell from a keep-alive after a delivered
// response; it would then never learn of the partitions while the
// coordinator keeps them assigned to it. Kafka relies on the client
// sending a full request after a failed heartbeat; we also send the
// assignment again until the member reports owning it.
func (m *member) assignmentUnconfirmed() bool {
	return m.cur.prevEpoch == m.cur.epoch && len(m.cur.assigned) > 0 &&
		(m.reported == nil || !m.cur.assigned.subsetOf(m.reported))
}

// isReconciledTo is Kafka's ModernGroupMember.isReconciledTo.
func (m *member) isReconciledTo(epoch int32) bool {
	return m.cur.state == MemberStable && m.cur.epoch == epoch
}

// topicMeta is one topic of a group's subscription metadata.
type topicMeta struct {
	id         uuid
	name       string
	partitions int32
}

// group is one consumer group.
type group struct {
	id string
	// epoch is the group epoch: bumped whenever membership, subscriptions
	// or the subscribed topics' metadata change.
	epoch int32
	// assignmentEpoch is the epoch of target.
	// Invariant: assignmentEpoch <= epoch.
	assignmentEpoch int32
	members         map[string]*member
	// static maps group.instance.id to the member id holding it.
	static map[string]string
	// target is the target assignment of each member at assignmentEpoch.
	target map[string]assignment
	// subMeta is the subscription metadata: the existing topics that some
	// member subscribes to, by name.
	subMeta map[string]topicMeta
	// owners maps each partition to the member that owns it, either
	// assigned or pending revocation.
	// Invariant: a partition appears in at most one member's assigned ∪
	// pending, and owners holds exactly those partitions. This is what
	// makes "revoke before assign" hold: a partition is handed to a new
	// member only once it is absent from owners.
	owners map[uuid]map[int32]string
}

func newGroup(id string) *group {
	return &group{
		id:      id,
		members: make(map[string]*member),
		static:  make(map[string]string),
		target:  make(map[string]assignment),
		subMeta: make(map[string]topicMeta),
		owners:  make(map[uuid]map[int32]string),
	}
}

// state is Kafka's ConsumerGroup.maybeUpdateGroupState.
func (g *group) state() GroupState {
	switch {
	case len(g.members) == 0:
		return Empty
	case g.epoch > g.assignmentEpoch:
		return Assigning
	}
	for _, m := range g.members {
		if !m.isReconciledTo(g.assignmentEpoch) {
			return Reconciling
		}
	}
	return Stable
}

// ownerOf returns the member owning partition p of topic t, "" if free.
func (g *group) ownerOf(t uuid, p int32) string {
	return g.owners[t][p]
}

// setOwned replaces the partitions owned by member id: old are removed
// (only where id still owns them), now are added.
func (g *group) setOwned(id string, old, now current) {
	for _, a := range []assignment{old.assigned, old.pending} {
		for t, ps := range a {
			for _, p := range ps {
				if g.owners[t][p] == id {
					delete(g.owners[t], p)
				}
			}
			if len(g.owners[t]) == 0 {
				delete(g.owners, t)
			}
		}
	}
	for _, a := range []assignment{now.assigned, now.pending} {
		for t, ps := range a {
			if g.owners[t] == nil {
				g.owners[t] = make(map[int32]string)
			}
			for _, p := range ps {
				g.owners[t][p] = id
			}
		}
	}
}

// sortedMembers returns the members ordered by member id.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].id < ms[j].id })
	return ms
}

// preferredAssignor is Kafka's computePreferredServerAssignor: the assignor
// most members ask for; ties go to the one listed first in assignors; ""
// if no member asks for one.
func (g *group) preferredAssignor(assignors []string) string {
	counts := make(map[string]int)
	for _, m := range g.members {
		if m.sub.serverAssignor != nil {
			counts[*m.sub.serverAssignor]++
		}
	}
	best, bestN := "", 0
	for _, a := range assignors {
		if counts[a] > bestN {
			best, bestN = a, counts[a]
		}
	}
	return best
}

// nextDeadline is the earliest timer of the group, zero if none.
func (g *group) nextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, m := range g.members {
		consider(m.sessionDeadline)
		consider(m.revokeDeadline)
	}
	return next
}

// timeZero is the zero time, for clearing deadlines.
var timeZero time.Time

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
