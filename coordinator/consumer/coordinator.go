// Package consumer is the KIP-848 consumer group coordinator of Apache
// Kafka ("group.protocol=consumer"): ConsumerGroupHeartbeat (key 68, v0-v1)
// and ConsumerGroupDescribe (key 69, v0-v1), written as a deterministic
// state machine.
//
// A Coordinator does no I/O, starts no goroutines, takes no locks and reads
// no clock: every input carries the current time, topic metadata comes
// from the Topics the caller supplies, and every output is a value the
// caller acts on:
//
//   - Reply: the response to a request, identified by the caller's Token.
//     Every request is answered by the call that passes it in; nothing is
//     parked (the protocol has no barrier).
//   - Record: a key/value (nil value = tombstone) for the __consumer_offsets
//     partition of the group, in Kafka's own record schemas.
//
// Contract with the caller (the broker):
//
//   - Calls are serialised; the Coordinator is not safe for concurrent use.
//   - Records returned by a call must be appended to __consumer_offsets, in
//     order, before the Replies of that call are sent. If the append fails,
//     the state of the partition is ahead of the log: drop this
//     Coordinator's state for the partition and reload it by Replay.
//   - Tick must be called at or after NextDeadline; early or extra Ticks
//     are harmless.
//   - MetadataChanged must be called after topics are created, deleted or
//     grow partitions, so that groups pick them up (regex subscriptions
//     included).
//   - After Replay of a partition, Loaded(now) starts the session and
//     revocation timers of the members that were loaded.
//
// Semantics follow Kafka 4.0's GroupMetadataManager.consumerGroupHeartbeat,
// ConsumerGroup and CurrentAssignmentBuilder: a group epoch bumped by
// membership, subscription and metadata changes; a target assignment
// computed by a server-side assignor ("uniform" or "range") at the group
// epoch; and per member a reconciliation that revokes before it assigns: a
// partition moves to its new owner only after the previous owner's
// heartbeat has stopped reporting it.
//
// State is persisted as ConsumerGroupMetadata (key version 3),
// ConsumerGroupPartitionMetadata (4), ConsumerGroupMemberMetadata (5),
// ConsumerGroupTargetAssignmentMetadata (6),
// ConsumerGroupTargetAssignmentMember (7) and
// ConsumerGroupCurrentMemberAssignment (8) records, each value at version
// 0, in the layout of Kafka 3.9/4.0's schemas (kmsg has no types for
// these, so records.go encodes them; unknown tagged fields are skipped). Every state change is made by applying such a
// record, on the request path exactly as on Replay. Regular expressions
// are resolved against the current topics whenever needed rather than
// persisted as ConsumerGroupRegularExpression records (key version 16).
//
// Committed offsets are not held here: the classic coordinator
// (coordinator/group) stores them for both kinds of group, and
// ValidateCommit checks a commit's member epoch against this package.
package consumer

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicInfo describes one topic of the cluster.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Topics supplies the cluster's current topics. The Coordinator calls it
// during Handle and MetadataChanged and keeps nothing it returns.
type Topics interface {
	Topics() []TopicInfo
}

// TopicsFunc adapts a function to Topics.
type TopicsFunc func() []TopicInfo

// Topics calls f.
func (f TopicsFunc) Topics() []TopicInfo { return f() }

// Assignor names.
const (
	UniformAssignor = "uniform"
	RangeAssignor   = "range"
)

// Config holds the coordinator settings, named after Kafka's broker
// properties. Start from DefaultConfig.
type Config struct {
	// HeartbeatIntervalMs is group.consumer.heartbeat.interval.ms,
	// returned to members as HeartbeatIntervalMs.
	HeartbeatIntervalMs int32
	// SessionTimeoutMs is group.consumer.session.timeout.ms: a member that
	// does not heartbeat for this long is fenced.
	SessionTimeoutMs int32
	// Assignors is group.consumer.assignors: the server-side assignors
	// members may ask for; the first is the default.
	Assignors []string
	// MaxSize is group.consumer.max.size: the most members a group holds.
	MaxSize int32
	// NewMemberID makes the member id of a v0 member that joins without
	// one. Nil means Kafka's scheme, Uuid.randomUuid().toString().
	NewMemberID func() string
	// GroupTimeouts returns a group's consumer.session.timeout.ms and
	// consumer.heartbeat.interval.ms group configs (KIP-848), validated by
	// the caller against the broker's bounds. Nil means SessionTimeoutMs and
	// HeartbeatIntervalMs for every group.
	GroupTimeouts func(group string) (sessionTimeoutMs, heartbeatIntervalMs int32)
	// ClassicGroupHasMembers reports whether the classic coordinator holds
	// a group with members under this id; a heartbeat for it then fails
	// with GROUP_ID_NOT_FOUND (online migration is not supported). Nil
	// means never.
	ClassicGroupHasMembers func(group string) bool
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		HeartbeatIntervalMs: 5000,
		SessionTimeoutMs:    45000,
		Assignors:           []string{UniformAssignor, RangeAssignor},
		MaxSize:             math.MaxInt32,
	}
}

// ParseAssignors parses the group.consumer.assignors property, a comma
// separated list such as "uniform,range".
func ParseAssignors(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Validate reports the first setting that Kafka would refuse.
func (c Config) Validate() error {
	switch {
	case c.HeartbeatIntervalMs < 1:
		return errors.New("group.consumer.heartbeat.interval.ms must be >= 1")
	case c.SessionTimeoutMs < 1:
		return errors.New("group.consumer.session.timeout.ms must be >= 1")
	case c.HeartbeatIntervalMs >= c.SessionTimeoutMs:
		return errors.New("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms")
	case len(c.Assignors) == 0:
		return errors.New("group.consumer.assignors must name at least one assignor")
	case c.MaxSize < 1:
		return errors.New("group.consumer.max.size must be >= 1")
	}
	for i, a := range c.Assignors {
		if a != UniformAssignor && a != RangeAssignor {
			return fmt.Errorf("group.consumer.assignors: unknown assignor %q (supported: uniform, range)", a)
		}
		if slices.Index(c.Assignors, a) != i {
			return fmt.Errorf("group.consumer.assignors: %q listed twice", a)
		}
	}
	return nil
}

// Client identifies the sender of a request: the client.id of the request
// header and the client host as Kafka prints it ("/" + IP address).
type Client struct {
	ID   string
	Host string
}

// Reply is a response to send for the request passed in with Token. Resp
// has its Version set to the version of that request.
type Reply struct {
	Token any
	Resp  kmsg.Response
}

// Record is one record for __consumer_offsets. Group names the group it
// belongs to, so the caller can pick the partition; Value nil is a
// tombstone.
type Record struct {
	Group string
	Key   []byte
	Value []byte
}

// Coordinator holds the consumer groups of the __consumer_offsets
// partitions this broker leads. See the package comment for the calling
// contract.
type Coordinator struct {
	cfg    Config
	topics Topics
	groups map[string]*group
}

// New returns an empty Coordinator reading topic metadata from topics, or
// an error if cfg is invalid.
func New(cfg Config, topics Topics) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if topics == nil {
		return nil, errors.New("consumer coordinator: nil Topics")
	}
	cfg.Assignors = slices.Clone(cfg.Assignors)
	return &Coordinator{cfg: cfg, topics: topics, groups: make(map[string]*group)}, nil
}

// Handle dispatches a decoded request. It returns an error, and no
// replies, for a request kind or version this coordinator does not serve;
// the broker should have refused those already.
func (c *Coordinator) Handle(now time.Time, token any, client Client, req kmsg.Request) ([]Reply, []Record, error) {
	v := req.GetVersion()
	switch req := req.(type) {
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if v >= 0 && v <= 1 {
			resp, recs := c.Heartbeat(now, client, req)
			return []Reply{{Token: token, Resp: resp}}, recs, nil
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		if v >= 0 && v <= 1 {
			return []Reply{{Token: token, Resp: c.Describe(req)}}, nil, nil
		}
	}
	return nil, nil, fmt.Errorf("consumer group coordinator: unsupported request key %d version %d", req.Key(), v)
}

// out accumulates the records of one input.
type out struct {
	records []Record
}

// emit applies o to the state and queues its record.
func (c *Coordinator) emit(w *out, o op) {
	o.apply(c)
	w.records = append(w.records, o.record())
}

// timeouts are a group's session timeout and heartbeat interval.
func (c *Coordinator) timeouts(group string) (sessionMs, heartbeatMs int32) {
	if c.cfg.GroupTimeouts != nil {
		return c.cfg.GroupTimeouts(group)
	}
	return c.cfg.SessionTimeoutMs, c.cfg.HeartbeatIntervalMs
}

// Loaded starts the timers of members restored by Replay, as Kafka does
// when it finishes loading a partition: a session timeout for every member,
// a rebalance timeout for members that are revoking. Calling it again only
// affects members not yet timed (nor given their timers by InheritTimers).
func (c *Coordinator) Loaded(now time.Time) {
	for _, g := range c.groups {
		session, _ := c.timeouts(g.id)
		for _, m := range g.members {
			if m.sessionDeadline.IsZero() {
				m.sessionDeadline = now.Add(ms(session))
			}
			if m.cur.state == MemberUnrevokedPartitions && m.revokeDeadline.IsZero() {
				m.revokeDeadline = now.Add(ms(m.sub.rebalanceTimeoutMs))
				m.revokeEpoch = m.cur.epoch
			}
		}
	}
}

// InheritTimers gives the members restored by Replay the session and
// revocation deadlines that old, the Coordinator this one replaces after a
// failed write (see the calling contract), had for them. Call it after
// Replay and before Loaded, with now the time of the reload.
//
// Kafka's coordinator reverts its in-memory state to the last written one
// when an append fails but keeps its timers, and it schedules a member's
// session and rebalance timeouts with retry: a fence whose write failed
// runs again after a short backoff (GroupMetadataManager's
// scheduleConsumerGroupSessionTimeout and
// scheduleConsumerGroupRebalanceTimeout, CoordinatorRuntime's timer). A
// replay instead brings back the last persisted state with no timers, and
// starting every session afresh would let a member that stopped
// heartbeating, or whose fence kept failing, stay in its group with its
// partitions for as long as writes keep failing less than a session
// timeout apart. So a replayed member, matched in old by member id or, if
// static, by group.instance.id (old may have handed the instance to a new
// member id, replacing one that left with epoch -2), gets:
//
//   - old's session deadline for it, and its revocation deadline if it is
//     the same member still revoking at the same epoch;
//   - a full session from Loaded, if old had not timed it yet;
//   - now, if old has its group but not the member: old fenced it (its
//     session or rebalance timed out, or it left with epoch -1) and the
//     log does not say so yet. It is fenced again at the next Tick, as
//     Kafka retries a timed-out member's fence, and stays removed (a
//     member that left asked to be removed; its client was answered an
//     error and may not retry the leave).
//
// Groups old does not have start afresh; the groups of partitions that
// changed leader since old was dropped must be unloaded from old first
// (Unload): a coordinator loading a partition anew starts every session,
// as Kafka's does. Nothing else is timed: the protocol parks no request.
func (c *Coordinator) InheritTimers(old *Coordinator, now time.Time) {
	for id, g := range c.groups {
		og := old.groups[id]
		if og == nil {
			continue
		}
		for _, m := range g.members {
			if !m.sessionDeadline.IsZero() {
				continue
			}
			om := og.members[m.id]
			if m.sub.instanceID != nil {
				om = og.members[og.static[*m.sub.instanceID]]
			}
			switch {
			case om == nil:
				m.sessionDeadline = now
			case om.sessionDeadline.IsZero():
				// Loaded starts its session.
			default:
				m.sessionDeadline = om.sessionDeadline
				if om.id == m.id && m.cur.state == MemberUnrevokedPartitions && !om.revokeDeadline.IsZero() && om.revokeEpoch == m.cur.epoch {
					m.revokeDeadline, m.revokeEpoch = om.revokeDeadline, om.revokeEpoch
				}
			}
		}
	}
}

// Unload forgets the consumer groups for which inPartition is true: those
// of a __consumer_offsets partition this broker stops leading, as Kafka
// unloads it.
func (c *Coordinator) Unload(inPartition func(groupID string) bool) {
	for id := range c.groups {
		if inPartition(id) {
			delete(c.groups, id)
		}
	}
}

// NextDeadline returns the earliest time at which Tick has work to do, or
// the zero time if nothing is scheduled.
func (c *Coordinator) NextDeadline() time.Time {
	var next time.Time
	for _, g := range c.groups {
		if d := g.nextDeadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// Tick fences every member whose session expired, and every member that
// did not revoke its partitions within its rebalance timeout, as of now.
// It returns the records of those changes; nothing else is answered.
func (c *Coordinator) Tick(now time.Time) []Record {
	c.Loaded(now) // times members that were replayed but not yet timed
	var w out
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		for _, m := range g.sortedMembers() {
			switch {
			case !m.sessionDeadline.IsZero() && !now.Before(m.sessionDeadline):
				c.fence(&w, g, m)
			case !m.revokeDeadline.IsZero() && !now.Before(m.revokeDeadline):
				if m.cur.epoch == m.revokeEpoch && m.cur.state == MemberUnrevokedPartitions {
					c.fence(&w, g, m)
				} else {
					m.revokeDeadline = time.Time{}
				}
			}
		}
	}
	return w.records
}

// MetadataChanged recomputes every group's subscription metadata from the
// current topics: topics created (a regex may now match them), deleted, or
// grown. A group whose metadata changed gets a new group epoch, so the
// next heartbeat of any member computes a new target assignment.
func (c *Coordinator) MetadataChanged(now time.Time) []Record {
	_ = now // no timer depends on metadata; kept for the uniform input shape
	var w out
	idx := c.topicIndex()
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		if len(g.members) == 0 && len(g.subMeta) == 0 {
			continue
		}
		if c.refreshSubMeta(&w, g, idx) {
			c.bumpEpoch(&w, g)
		}
	}
	return w.records
}

// newMemberID returns a fresh server-generated member id.
func (c *Coordinator) newMemberID() string {
	if c.cfg.NewMemberID != nil {
		return c.cfg.NewMemberID()
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func ms(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
