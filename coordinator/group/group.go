package group

import (
	"bytes"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is the state of a classic group, spelled as Kafka spells it in
// DescribeGroups and ListGroups.
type State int8

// The classic group states. Transitions (as in Kafka's GroupMetadata):
//
//	Empty               -> PreparingRebalance, Dead
//	PreparingRebalance  -> CompletingRebalance, Empty, Dead
//	CompletingRebalance -> PreparingRebalance, Stable, Dead
//	Stable              -> PreparingRebalance, Dead
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

// String returns Kafka's name of the state.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return "Unknown"
}

// consumerProtocolType is the protocol type of Kafka consumers; only groups
// of this type have subscriptions that the coordinator understands.
const consumerProtocolType = "consumer"

// protocol is one (name, metadata) pair a member supports, in the member's
// order of preference.
type protocol struct {
	name     string
	metadata []byte
}

// parked is a JoinGroup or SyncGroup request waiting for its answer.
type parked struct {
	token   any
	version int16
}

// member is one member of a group.
type member struct {
	id         string
	instanceID *string // group.instance.id of a static member, nil if dynamic
	clientID   string
	clientHost string
	// seq orders members by the time they were added; leader succession
	// and response member lists follow it.
	seq                uint64
	sessionTimeoutMs   int32
	rebalanceTimeoutMs int32
	protocolType       string
	protocols          []protocol
	assignment         []byte
	// join and sync are the member's parked requests, nil if none.
	join *parked
	sync *parked
	// isNew is true from the member's first JoinGroup until a join
	// completes for it; a new member's deadline is newMemberJoinTimeout.
	isNew bool
	// deadline is when the member's session expires. Zero only for members
	// restored by Replay and not yet timed by InheritTimers or Loaded.
	// Invariant: a member with a parked join or sync does not expire
	// unless it is new (Kafka's hasSatisfiedHeartbeat).
	deadline time.Time
}

// metadataFor returns the member's metadata for protocol name.
func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether protos equals the member's protocols exactly.
func (m *member) matches(protos []kmsg.JoinGroupRequestProtocol) bool {
	if len(protos) != len(m.protocols) {
		return false
	}
	for i, p := range protos {
		if p.Name != m.protocols[i].name || !bytes.Equal(p.Metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// expires reports whether the member's session has run out at now.
func (m *member) expires(now time.Time) bool {
	if m.deadline.IsZero() || now.Before(m.deadline) {
		return false
	}
	return m.isNew || (m.join == nil && m.sync == nil)
}

// offset is one committed offset.
type offset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitMs    int64
	// expireMs is the explicit expiration of a v1 value record (commits
	// with a retention time, OffsetCommit v2-v4), or -1.
	expireMs int64
	// seq orders it among writes and replays (Coordinator.writeSeq): an
	// acknowledged commit replaces only an older offset.
	seq uint64
}

// group is one classic group and its committed offsets.
type group struct {
	id    string
	state State
	// stateMs is when the group last changed state (Kafka's
	// currentStateTimestamp), -1 if unknown.
	stateMs      int64
	protocolType string // "" if none: an offsets-only ("simple") group
	protocol     string // selected protocol, "" if none
	generation   int32
	leader       string // "" if no members
	// members by member id.
	// Invariant: leader == "" iff len(members) == 0, else members[leader] exists.
	members map[string]*member
	// static maps group.instance.id to the member id that holds it.
	// Invariant: static[*m.instanceID] == m.id for every static member m.
	static map[string]string
	// pending holds member ids handed out with MEMBER_ID_REQUIRED and the
	// time each expires if its owner does not join with it.
	pending map[string]time.Time
	// pendingSync holds, after a join completes, the members that have not
	// yet sent SyncGroup; syncDeadline is when they are removed.
	pendingSync  map[string]struct{}
	syncDeadline time.Time
	// joinDeadline is when the running join completes regardless of
	// stragglers. Non-zero iff state == PreparingRebalance.
	joinDeadline time.Time
	// initialDelay is set while the join is the delayed first rebalance of
	// an Empty group; initialRemaining is how much longer it may be
	// extended and newMemberAdded whether it should be.
	initialDelay     bool
	initialRemaining time.Duration
	newMemberAdded   bool
	// subscribed holds the topics all members subscribe to (consumer
	// protocol only); subscribedKnown is false when they cannot be known.
	subscribed      map[string]struct{}
	subscribedKnown bool
	// offsets by topic, then partition: the committed offsets whose
	// append was acknowledged, the only ones OffsetFetch answers.
	offsets offsetMap
	// pendingOffsets holds the latest commit of each partition whose append
	// is not acknowledged yet (Kafka's pendingOffsetCommits).
	pendingOffsets offsetMap
	// metadataStored is true once a GroupMetadata record exists for the
	// group (written or replayed).
	metadataStored bool
}

func newGroup(id string, nowMs int64) *group {
	return &group{
		id:          id,
		state:       Empty,
		stateMs:     nowMs,
		members:     make(map[string]*member),
		static:      make(map[string]string),
		pending:     make(map[string]time.Time),
		pendingSync: make(map[string]struct{}),
		offsets:     make(offsetMap),

		pendingOffsets: make(offsetMap),
	}
}

func (g *group) transition(s State, now time.Time) {
	g.state = s
	g.stateMs = now.UnixMilli()
}

// sortedMembers returns the members in the order they were added.
func (g *group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

// add adds m; the first member becomes leader.
func (g *group) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
}

// remove deletes member id; leadership passes to the oldest member left.
func (g *group) remove(id string) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	delete(g.members, id)
	if m.instanceID != nil && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, id)
	if g.leader == id {
		g.leader = ""
		if ms := g.sortedMembers(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// supportsProtocols reports whether a member with this protocol type and
// these protocols may join (Kafka's GroupMetadata.supportsProtocols).
func (g *group) supportsProtocols(ptype string, protos []kmsg.JoinGroupRequestProtocol) bool {
	if g.state == Empty {
		return ptype != "" && len(protos) > 0
	}
	if ptype != g.protocolType {
		return false
	}
	for _, p := range protos {
		if g.supportCount(p.Name) == len(g.members) {
			return true
		}
	}
	return false
}

func (g *group) supportCount(name string) int {
	n := 0
	for _, m := range g.members {
		for _, p := range m.protocols {
			if p.name == name {
				n++
				break
			}
		}
	}
	return n
}

// selectProtocol returns the protocol of the next generation: among the
// protocols every member supports, each member votes for the first in its
// own order; most votes wins, ties going to the leader's preference.
// Returns "" when there are no members or no common protocol.
func (g *group) selectProtocol() string {
	if len(g.members) == 0 {
		return ""
	}
	candidate := func(name string) bool { return g.supportCount(name) == len(g.members) }
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if candidate(p.name) {
				votes[p.name]++
				break
			}
		}
	}
	order := g.sortedMembers()
	if l, ok := g.members[g.leader]; ok {
		order = append([]*member{l}, order...)
	}
	best, bestVotes := "", -1
	for _, m := range order {
		for _, p := range m.protocols {
			if v, ok := votes[p.name]; ok && v > bestVotes {
				best, bestVotes = p.name, v
			}
		}
	}
	return best
}

// rebalanceTimeout is the largest rebalance timeout of any member.
func (g *group) rebalanceTimeout() time.Duration {
	var max int32
	for _, m := range g.members {
		if m.rebalanceTimeoutMs > max {
			max = m.rebalanceTimeoutMs
		}
	}
	return ms(max)
}

// allJoined reports whether every member has a parked join and no member
// id handed out with MEMBER_ID_REQUIRED is outstanding.
func (g *group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.join == nil {
			return false
		}
	}
	return true
}

// numAwaitingJoin counts members with a parked join.
func (g *group) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.join != nil {
			n++
		}
	}
	return n
}

// validateMember checks that memberID is in the group and, for a static
// member, still owns its instance id (Kafka's validateCurrentMember).
// It returns 0 or a Kafka error code.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		cur, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if cur != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// computeSubscribed recomputes the union of the members' subscribed
// topics. It is known only for the consumer protocol type, with all
// subscriptions parseable.
func (g *group) computeSubscribed() {
	g.subscribed, g.subscribedKnown = nil, false
	if g.protocolType != consumerProtocolType {
		return
	}
	topics := make(map[string]struct{})
	for _, m := range g.members {
		if g.protocol == "" {
			return
		}
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return
		}
		for _, t := range meta.Topics {
			topics[t] = struct{}{}
		}
	}
	g.subscribed, g.subscribedKnown = topics, true
}

// isSubscribed reports whether the group is known to consume topic.
func (g *group) isSubscribed(topic string) bool {
	_, ok := g.subscribed[topic]
	return g.subscribedKnown && ok
}

// nextDeadline is the earliest time the group has something due, zero if
// none.
func (g *group) nextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	consider(g.joinDeadline)
	consider(g.syncDeadline)
	for _, t := range g.pending {
		consider(t)
	}
	for _, m := range g.members {
		if m.isNew || (m.join == nil && m.sync == nil) {
			consider(m.deadline)
		}
	}
	return next
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
