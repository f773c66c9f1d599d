// Package share is the share-group coordinator of Apache Kafka (KIP-932,
// stable in Kafka 4.2): membership through ShareGroupHeartbeat (key 76,
// v0–v1) with a server-side assignment, ShareGroupDescribe (key 77), the
// share sessions of ShareFetch/ShareAcknowledge (keys 78/79), the
// acquisition state of every share-partition's in-flight records, the
// share-group offsets admin APIs (keys 90–92) and the share.* group configs.
//
// Like the other coordinators, a Coordinator does no I/O, starts no
// goroutines, takes no locks and reads no clock: every input carries the
// current time, topic metadata comes from the Topics the caller supplies,
// and the caller reads the log itself and hands the batch headers it found
// to Acquire. Contract with the caller:
//
//   - Calls are serialised; the Coordinator is not safe for concurrent use.
//   - Tick must be called at or after NextDeadline (member session
//     timeouts, acquisition lock expiry); early or extra Ticks are harmless.
//   - Changes counts events that may let a parked ShareFetch acquire
//     records (records released, the in-flight window moved); the caller
//     wakes its parked fetches when it moves.
//
// Semantics follow Kafka 4.2's GroupMetadataManager.shareGroupHeartbeat,
// SimpleAssignor and SharePartition: a group epoch bumped by membership,
// subscription and metadata changes; no revocation protocol (a member
// adopts its new assignment at its next heartbeat); records move
// Available → Acquired (delivery count + 1, lock for
// share.record.lock.duration.ms) → Acknowledged (ACCEPT) or Archived
// (REJECT, GAP, or RELEASE/expiry at the delivery count limit) or back to
// Available (RELEASE, lock expiry, session close, member leave); the
// share-partition start offset (SPSO) moves past every finished record.
//
// Share-partition state (SPSO, finished records, delivery counts) is
// persisted as Kafka does, in __share_group_state (state.go): every call
// that changes it leaves records for the caller to take with
// TakeStateRecords and append, and a new coordinator replays them with
// ReplayState and FinishReplay. Membership and acquisition locks are in memory only
// (Kafka keeps membership in __consumer_offsets): after a restart members
// rejoin, and records delivered but not acknowledged are delivered again.
package share

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/kbroker/kbroker/coordinator/groupconfig"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Config is the coordinator's part of the broker configuration.
type Config struct {
	// HeartbeatIntervalMs is group.share.heartbeat.interval.ms.
	HeartbeatIntervalMs int32
	// SessionTimeoutMs is group.share.session.timeout.ms.
	SessionTimeoutMs int32
	// DeliveryCountLimit is group.share.delivery.count.limit: a record
	// delivered this many times is archived instead of made available again.
	DeliveryCountLimit int32
	// RecordLockDurationMs is group.share.record.lock.duration.ms, the
	// acquisition lock of a delivered record.
	RecordLockDurationMs int32
	// PartitionMaxRecordLocks is group.share.partition.max.record.locks:
	// the in-flight window of a share-partition (offsets from the SPSO to
	// the highest acquired one) never grows beyond it.
	PartitionMaxRecordLocks int32
	// MaxGroupSize is group.share.max.size.
	MaxGroupSize int32
	// MaxFetchRecords is what a ShareFetch without MaxRecords (v0) acquires at most.
	MaxFetchRecords int32
	// GroupConfigs returns a group's effective group configs (the share.*
	// overrides over the broker defaults, groupconfig.Store.Values). Nil
	// means the settings above for every group.
	GroupConfigs func(group string) groupconfig.Values
	// LoadOnDemand is cluster mode: share-partition state is not replayed
	// at creation but installed per share-partition by the caller
	// (InstallState, ondemand.go) before it can be fetched from.
	LoadOnDemand bool
}

// DefaultConfig is Kafka 4.2's defaults.
func DefaultConfig() Config {
	return Config{
		HeartbeatIntervalMs:     5000,
		SessionTimeoutMs:        45000,
		DeliveryCountLimit:      5,
		RecordLockDurationMs:    30000,
		PartitionMaxRecordLocks: 2000,
		MaxGroupSize:            200,
		MaxFetchRecords:         500,
	}
}

// Validate reports the first setting out of range.
func (c Config) Validate() error {
	switch {
	case c.HeartbeatIntervalMs <= 0:
		return errors.New("share heartbeat interval must be positive")
	case c.SessionTimeoutMs <= 0:
		return errors.New("share session timeout must be positive")
	case c.DeliveryCountLimit < 1 || c.DeliveryCountLimit > 1<<14:
		return fmt.Errorf("share delivery count limit %d out of range", c.DeliveryCountLimit)
	case c.RecordLockDurationMs <= 0:
		return errors.New("share record lock duration must be positive")
	case c.PartitionMaxRecordLocks <= 0:
		return errors.New("share partition max record locks must be positive")
	case c.MaxGroupSize <= 0:
		return errors.New("share group max size must be positive")
	case c.MaxFetchRecords <= 0:
		return errors.New("share max fetch records must be positive")
	}
	return nil
}

// TopicInfo is one topic as assignment sees it.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// TopicsFunc returns the current topics that share groups may consume
// (internal topics excluded).
type TopicsFunc func() []TopicInfo

// Client identifies the connection a request came from.
type Client struct {
	ID   string
	Host string
}

// TopicPartition names a partition by topic id, as the share APIs do; a
// recreated topic is a new share-partition.
type TopicPartition struct {
	TopicID   [16]byte
	Partition int32
}

// Coordinator holds every share group.
type Coordinator struct {
	cfg    Config
	topics TopicsFunc

	groups   map[string]*group
	sessions map[sessionKey]*session
	// changes counts events that may let a parked fetch acquire records.
	changes uint64
	// dirty are the share-partitions whose state must be written to
	// __share_group_state (state.go).
	dirty map[stateKey]struct{}
	// replay is the last value of each key read by ReplayState, until FinishReplay.
	replay map[stateKey][]byte
	// absent are the share-partitions known to have no persisted state
	// (LoadOnDemand): the first fetch initializes them.
	absent map[stateKey]bool
}

// New returns an empty coordinator.
func New(cfg Config, topics TopicsFunc) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if topics == nil {
		return nil, errors.New("share coordinator needs a topics source")
	}
	return &Coordinator{
		cfg:      cfg,
		topics:   topics,
		groups:   map[string]*group{},
		sessions: map[sessionKey]*session{},
	}, nil
}

// Changes counts the events after which a parked ShareFetch may find
// records to acquire; compare values before and after a call.
func (c *Coordinator) Changes() uint64 { return c.changes }

// IsShareGroup reports whether id names a share group.
func (c *Coordinator) IsShareGroup(id string) bool { return c.groups[id] != nil }

// Tick fences members whose session timed out and releases records whose
// acquisition lock expired.
func (c *Coordinator) Tick(now time.Time) {
	for _, id := range c.sortedGroupIDs() {
		g := c.groups[id]
		var expired []string
		for mid, m := range g.members {
			if !now.Before(m.deadline) {
				expired = append(expired, mid)
			}
		}
		sort.Strings(expired)
		for _, mid := range expired {
			c.removeMember(g, mid)
		}
		limit := c.deliveryLimit(id)
		for tp, p := range g.parts {
			if p.expire(now, limit) {
				c.changes++
				c.markDirty(id, tp)
			}
		}
	}
}

// NextDeadline is when Tick next has work: the earliest member session
// deadline or acquisition lock expiry. Zero means none.
func (c *Coordinator) NextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, g := range c.groups {
		for _, m := range g.members {
			consider(m.deadline)
		}
		for _, p := range g.parts {
			consider(p.minExpiry)
		}
	}
	return next
}

// GroupListing is one share group in ListGroups.
type GroupListing struct {
	Group string
	State string
}

// ListGroups returns every share group, sorted by id.
func (c *Coordinator) ListGroups() []GroupListing {
	out := make([]GroupListing, 0, len(c.groups))
	for _, id := range c.sortedGroupIDs() {
		out = append(out, GroupListing{Group: id, State: c.groups[id].state()})
	}
	return out
}

// DeleteGroup deletes an empty share group with its share-partition state
// (DeleteGroups). It returns a Kafka error code: GROUP_ID_NOT_FOUND (69)
// when there is no such share group, NON_EMPTY_GROUP (68) while it has members.
func (c *Coordinator) DeleteGroup(id string) int16 {
	g := c.groups[id]
	switch {
	case g == nil:
		return kerr.GroupIDNotFound.Code
	case len(g.members) > 0:
		return kerr.NonEmptyGroup.Code
	}
	for k := range c.sessions {
		if k.group == id {
			delete(c.sessions, k)
		}
	}
	for tp := range g.parts {
		c.markDirty(id, tp) // a tombstone each
	}
	delete(c.groups, id)
	return 0
}

func (c *Coordinator) sortedGroupIDs() []string {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
