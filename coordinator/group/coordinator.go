// Package group is the classic (pre-KIP-848) consumer group coordinator of
// Apache Kafka written as a deterministic state machine.
//
// A Coordinator does no I/O, starts no goroutines, takes no locks and reads
// no clock: every input (a decoded kmsg request, a Tick, a replayed
// __consumer_offsets record) carries the current time, and every output is a
// value the caller acts on:
//
//   - Reply: a response to send for the pending request identified by Token.
//     JoinGroup and SyncGroup are answered only when the rebalance allows, so
//     a call may return replies for requests parked by earlier calls of other
//     members, and may return none for its own request.
//   - Record: a key/value (nil value = tombstone) for the __consumer_offsets
//     partition of the group, encoded with Kafka's own schemas.
//
// Contract with the caller (the broker):
//
//   - Calls are serialised; the Coordinator is not safe for concurrent use.
//   - Records returned by a call must be appended to __consumer_offsets before
//     the Replies of that same call are sent, as Kafka answers commits and
//     SyncGroup only after the append. Once the append is acknowledged (or
//     failed) the caller passes the same records to Appended, and sends the
//     Replies it returns too: what the records store becomes visible only
//     then (committed offsets, a rebalance's assignment), as Kafka's pending
//     offset commits and its SyncGroup append callback.
//   - Every token passed to a request method receives exactly one Reply,
//     possibly from a later call (including Tick). Tokens are compared by
//     nothing; they are only handed back.
//   - Tick must be called at or after NextDeadline; early or extra Ticks are
//     harmless.
//   - After Replay of a partition, Loaded(now) starts the session timers of
//     the members that were loaded. A Coordinator replayed to replace one
//     dropped after a failed write first takes over the dropped one's
//     session deadlines (InheritTimers).
//
// Semantics follow Kafka's GroupCoordinator/GroupMetadata (classic protocol):
// states Empty, PreparingRebalance, CompletingRebalance, Stable, Dead; member
// ids required from JoinGroup v4 (KIP-394); static membership (KIP-345);
// group.initial.rebalance.delay.ms; pending-sync timeouts; KIP-211 offset
// expiration.
package group

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config holds the coordinator settings, named after Kafka's broker
// properties (group.min.session.timeout.ms etc.). The zero value is not
// valid; start from DefaultConfig.
type Config struct {
	// GroupMinSessionTimeoutMs is group.min.session.timeout.ms: the
	// smallest session timeout a JoinGroup may ask for.
	GroupMinSessionTimeoutMs int32
	// GroupMaxSessionTimeoutMs is group.max.session.timeout.ms.
	GroupMaxSessionTimeoutMs int32
	// GroupInitialRebalanceDelayMs is group.initial.rebalance.delay.ms: how
	// long the first rebalance of an Empty group waits for more members.
	GroupInitialRebalanceDelayMs int32
	// GroupMaxSize is group.max.size: the most members a group may hold.
	GroupMaxSize int32
	// OffsetsRetentionMs is offsets.retention.minutes in milliseconds.
	OffsetsRetentionMs int64
	// OffsetsRetentionCheckIntervalMs is
	// offsets.retention.check.interval.ms: how often Tick expires offsets.
	OffsetsRetentionCheckIntervalMs int64
	// OffsetMetadataMaxBytes is offset.metadata.max.bytes: commits with
	// longer metadata get OFFSET_METADATA_TOO_LARGE.
	OffsetMetadataMaxBytes int32
	// NewMemberID makes the member id handed to a joining member. Nil
	// means Kafka's scheme: clientID + "-" + a random UUID.
	NewMemberID func(clientID string) string
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		GroupMinSessionTimeoutMs:        6000,
		GroupMaxSessionTimeoutMs:        1800000,
		GroupInitialRebalanceDelayMs:    3000,
		GroupMaxSize:                    math.MaxInt32,
		OffsetsRetentionMs:              7 * 24 * 60 * 60 * 1000,
		OffsetsRetentionCheckIntervalMs: 600000,
		OffsetMetadataMaxBytes:          4096,
	}
}

// Validate reports the first setting that Kafka would refuse.
func (c Config) Validate() error {
	switch {
	case c.GroupMinSessionTimeoutMs < 0:
		return errors.New("group.min.session.timeout.ms must be >= 0")
	case c.GroupMaxSessionTimeoutMs < c.GroupMinSessionTimeoutMs:
		return errors.New("group.max.session.timeout.ms must be >= group.min.session.timeout.ms")
	case c.GroupInitialRebalanceDelayMs < 0:
		return errors.New("group.initial.rebalance.delay.ms must be >= 0")
	case c.GroupMaxSize < 1:
		return errors.New("group.max.size must be >= 1")
	case c.OffsetsRetentionMs < 1:
		return errors.New("offsets.retention.minutes must be >= 1")
	case c.OffsetsRetentionCheckIntervalMs < 1:
		return errors.New("offsets.retention.check.interval.ms must be >= 1")
	case c.OffsetMetadataMaxBytes < 0:
		return errors.New("offset.metadata.max.bytes must be >= 0")
	}
	return nil
}

// newMemberJoinTimeout is Kafka's GroupCoordinator.NewMemberJoinTimeoutMs:
// a member added by JoinGroup is removed if it has not completed a join
// within this time, whatever its session timeout.
const newMemberJoinTimeout = 5 * time.Minute

// Client identifies the sender of a request: the client.id of the request
// header and the client host as Kafka prints it ("/" + IP address).
type Client struct {
	ID   string
	Host string
}

// Reply is a response to send now for the request that was passed in with
// Token. Resp has its Version set to the version of that request.
type Reply struct {
	Token any
	Resp  kmsg.Response
}

// Record is one record for __consumer_offsets. Group names the group it
// belongs to, so the caller can pick the partition with PartitionFor; Value
// nil is a tombstone.
type Record struct {
	Group string
	Key   []byte
	Value []byte
	// w is what the coordinator applies when the record's append
	// completes (Appended); nil if nothing.
	w *write
}

// write is the state a call stored in its records and keeps pending until
// their append completes: offsets committed (Kafka's pendingOffsetCommits)
// and the assignment of a generation (the leader's SyncGroup).
type write struct {
	seq     uint64
	g       *group
	offsets []stagedOffset
	// sync is set when the write stores the assignment of generation gen.
	sync bool
	gen  int32
}

// stagedOffset is one offset a write commits.
type stagedOffset struct {
	topic     string
	partition int32
	off       *offset
}

// out accumulates what one input produces.
type out struct {
	replies []Reply
	records []Record
}

func (o *out) reply(token any, resp kmsg.Response) {
	o.replies = append(o.replies, Reply{Token: token, Resp: resp})
}

// Coordinator holds the classic groups and committed offsets of the
// __consumer_offsets partitions this broker leads. See the package comment
// for the calling contract.
type Coordinator struct {
	cfg    Config
	groups map[string]*group
	// nextRetentionCheck is when Tick next expires offsets; zero until the
	// first input that carries a clock.
	nextRetentionCheck time.Time
	// memberSeq orders members by the time they were added.
	memberSeq uint64
	// writeSeq orders writes (and so committed offsets) by the call that
	// made them, which is their order in the log.
	writeSeq uint64
}

// New returns an empty Coordinator, or an error if cfg is invalid.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Coordinator{cfg: cfg, groups: make(map[string]*group)}, nil
}

// Handle dispatches a decoded request to its method. It returns an error,
// and no replies, for a request kind or version this coordinator does not
// serve; the broker should have refused those already.
func (c *Coordinator) Handle(now time.Time, token any, client Client, req kmsg.Request) ([]Reply, []Record, error) {
	var r []Reply
	var rec []Record
	ok := func(max int16) bool {
		v := req.GetVersion()
		return v >= 0 && v <= max
	}
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		if !ok(9) {
			break
		}
		r, rec = c.JoinGroup(now, token, client, req)
		return r, rec, nil
	case *kmsg.SyncGroupRequest:
		if !ok(5) {
			break
		}
		r, rec = c.SyncGroup(now, token, req)
		return r, rec, nil
	case *kmsg.HeartbeatRequest:
		if !ok(4) {
			break
		}
		r, rec = c.Heartbeat(now, token, req)
		return r, rec, nil
	case *kmsg.LeaveGroupRequest:
		if !ok(5) {
			break
		}
		r, rec = c.LeaveGroup(now, token, req)
		return r, rec, nil
	case *kmsg.OffsetCommitRequest:
		if !ok(9) {
			break
		}
		r, rec = c.OffsetCommit(now, token, req)
		return r, rec, nil
	case *kmsg.OffsetFetchRequest:
		if !ok(9) {
			break
		}
		r, rec = c.OffsetFetch(now, token, req)
		return r, rec, nil
	case *kmsg.DescribeGroupsRequest:
		if !ok(6) {
			break
		}
		r, rec = c.DescribeGroups(now, token, req)
		return r, rec, nil
	case *kmsg.ListGroupsRequest:
		if !ok(5) {
			break
		}
		r, rec = c.ListGroups(now, token, req)
		return r, rec, nil
	case *kmsg.DeleteGroupsRequest:
		if !ok(3) {
			break
		}
		r, rec = c.DeleteGroups(now, token, req)
		return r, rec, nil
	case *kmsg.OffsetDeleteRequest:
		if !ok(0) {
			break
		}
		r, rec = c.OffsetDelete(now, token, req)
		return r, rec, nil
	}
	return nil, nil, fmt.Errorf("group coordinator: unsupported request key %d version %d", req.Key(), req.GetVersion())
}

// newWrite opens a write for g's records of the current call.
func (c *Coordinator) newWrite(g *group) *write {
	c.writeSeq++
	return &write{seq: c.writeSeq, g: g}
}

// Appended completes the writes of records a call returned, once their
// append to __consumer_offsets was acknowledged (err nil) or failed. On
// success the offsets they commit become visible, unless newer ones are or
// the partition's offsets were deleted meanwhile, and a rebalance whose
// assignment they store becomes Stable: its parked SyncGroups are answered.
// On failure the offsets are dropped and a rebalance still waiting for
// its assignment is answered COORDINATOR_NOT_AVAILABLE and restarted, as
// Kafka does. Records of a group unloaded or deleted since are ignored.
func (c *Coordinator) Appended(now time.Time, recs []Record, err error) []Reply {
	c.begin(now)
	var o out
	var done map[*write]bool
	for _, r := range recs {
		w := r.w
		if w == nil || done[w] {
			continue
		}
		if done == nil {
			done = map[*write]bool{}
		}
		done[w] = true
		c.complete(&o, now, w, err)
	}
	return o.replies
}

func (c *Coordinator) complete(o *out, now time.Time, w *write, err error) {
	g := w.g
	if c.groups[g.id] != g {
		return
	}
	for _, s := range w.offsets {
		staged := g.pendingOffsets[s.topic][s.partition]
		if staged == nil {
			continue // deleted meanwhile
		}
		if err == nil {
			if cur := g.offsets[s.topic][s.partition]; cur == nil || cur.seq < s.off.seq {
				g.setOffset(s.topic, s.partition, s.off)
			}
		}
		if staged == s.off {
			g.unstage(s.topic, s.partition)
		}
	}
	if w.sync && g.state == CompletingRebalance && g.generation == w.gen {
		if err != nil {
			c.resetAssignments(o, g, kerr.CoordinatorNotAvailable.Code)
			c.prepareRebalance(o, g, now)
		} else {
			c.assignmentStored(o, g, now)
		}
	}
	c.maybeForget(g)
}

// HasPendingOffset reports whether a commit of the group's topic partition
// waits for its append (OffsetFetch require_stable).
func (c *Coordinator) HasPendingOffset(groupID, topic string, partition int32) bool {
	g := c.groups[groupID]
	return g != nil && g.pendingOffsets[topic][partition] != nil
}

// begin is called at the start of every input that carries a clock.
func (c *Coordinator) begin(now time.Time) {
	if c.nextRetentionCheck.IsZero() {
		c.nextRetentionCheck = now.Add(ms64(c.cfg.OffsetsRetentionCheckIntervalMs))
	}
}

// Loaded starts the session timers of members restored by Replay, as Kafka
// does when it finishes loading a partition. Calling it again only affects
// members not yet timed (nor given their deadlines by InheritTimers).
func (c *Coordinator) Loaded(now time.Time) {
	c.begin(now)
	for _, g := range c.groups {
		for _, m := range g.members {
			if m.deadline.IsZero() {
				m.deadline = now.Add(ms(m.sessionTimeoutMs))
			}
		}
	}
}

// InheritTimers gives the members restored by Replay the session deadlines
// that old, the Coordinator this one replaces after a failed write (see the
// calling contract), had for them. Call it after Replay and before Loaded,
// with now the time of the reload.
//
// Kafka does not rebuild a classic group whose append failed: the group in
// memory, its membership changes and its members' heartbeat timers carry
// on. A replay instead brings back the group's last persisted generation,
// and starting every session afresh would let a member that stopped
// heartbeating stay in its group, holding its partitions, for as long as
// writes keep failing less than a session timeout apart. So a replayed
// member, matched in old by member id or, if static, by group.instance.id
// (old may have given the instance a new member id), gets:
//
//   - old's deadline for it, if old held no join or sync of it;
//   - a full session from Loaded, if old held its JoinGroup or SyncGroup,
//     or it was new: the host answered that request when old was dropped,
//     and a member's session restarts when its join or sync is answered;
//   - now, if old has its group but not the member: old removed it (it
//     left, or its session or rebalance timed out) and the log does not
//     say so yet. It expires at the next Tick, as it stays removed in
//     Kafka.
//
// Groups old does not have start afresh; the groups of partitions that
// changed leader since old was dropped must be unloaded from old first
// (Unload): a coordinator loading a partition anew starts every session,
// as Kafka's does. Only session deadlines carry over: a replayed group is
// Stable or Empty, with no rebalance, pending member id or pending sync to
// time (old's rebalance ended when it was dropped, its parked requests
// answered COORDINATOR_NOT_AVAILABLE).
func (c *Coordinator) InheritTimers(old *Coordinator, now time.Time) {
	for id, g := range c.groups {
		og := old.groups[id]
		if og == nil {
			continue
		}
		for _, m := range g.members {
			if !m.deadline.IsZero() {
				continue
			}
			om := og.members[m.id]
			if m.instanceID != nil {
				om = og.members[og.static[*m.instanceID]]
			}
			switch {
			case om == nil:
				m.deadline = now
			case om.isNew || om.join != nil || om.sync != nil || om.deadline.IsZero():
				// Loaded starts its session.
			default:
				m.deadline = om.deadline
			}
		}
	}
}

// Unload forgets the groups (members, pending joins and committed offsets)
// of __consumer_offsets partition partition of numPartitions, as Kafka does
// when this broker stops leading it. Requests the coordinator held for
// those groups are not answered here: the caller knows them.
func (c *Coordinator) Unload(partition, numPartitions int32) {
	for id := range c.groups {
		if PartitionFor(id, numPartitions) == partition {
			delete(c.groups, id)
		}
	}
}

// NextDeadline returns the earliest time at which Tick has work to do, or
// the zero time if nothing is scheduled.
func (c *Coordinator) NextDeadline() time.Time {
	next := c.nextRetentionCheck
	for _, g := range c.groups {
		if d := g.nextDeadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// Tick performs everything due at now: session expiry of members and of
// pending (MEMBER_ID_REQUIRED) members, completion of joins whose rebalance
// timeout or initial delay passed, pending-sync timeouts, and offset
// expiration every OffsetsRetentionCheckIntervalMs.
func (c *Coordinator) Tick(now time.Time) ([]Reply, []Record) {
	c.Loaded(now) // also times members that were replayed but not yet timed
	var o out
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		// Process this group's due events in time order; each event moves
		// its own deadline, so the loop ends.
		for i := 0; i < 10000; i++ {
			d := g.nextDeadline()
			if d.IsZero() || d.After(now) {
				break
			}
			c.fire(&o, g, d)
		}
		c.maybeForget(g)
	}
	if !now.Before(c.nextRetentionCheck) {
		c.expireOffsets(&o, now)
		c.nextRetentionCheck = now.Add(ms64(c.cfg.OffsetsRetentionCheckIntervalMs))
	}
	return o.replies, o.records
}

// newMemberID returns a fresh member id for clientID.
func (c *Coordinator) newMemberID(clientID string) string {
	if c.cfg.NewMemberID != nil {
		return c.cfg.NewMemberID(clientID)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// maybeForget drops a group that holds nothing: no members, no pending
// members, no offsets, and no generation ever persisted. Such a group was
// only created by a request that then failed, and Kafka would remove it at
// its next cleanup without writing anything.
func (c *Coordinator) maybeForget(g *group) {
	if g.state == Empty && len(g.members) == 0 && len(g.pending) == 0 &&
		len(g.offsets) == 0 && len(g.pendingOffsets) == 0 && g.generation == 0 && !g.metadataStored {
		delete(c.groups, g.id)
	}
}

func ms(v int32) time.Duration   { return time.Duration(v) * time.Millisecond }
func ms64(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
