package coordhost

// The share-group coordinator's home in the broker (KIP-932). One
// share.Coordinator serves every share group under one lock, ShareHost.mu;
// a timer calls its Tick at NextDeadline (member session timeouts,
// acquisition lock expiry). ShareFetch reads partitions under that lock so
// that what it acquires and what it returns agree.
//
// Share state is in memory only (see coordinator/share): nothing is written
// to __share_group_state or __consumer_offsets, so a restart forgets share
// groups, their configs and their in-flight records.
//
// Lock order: groups.mu → ShareHost.mu → partition and log locks. Nothing
// here takes groups.mu while holding ShareHost.mu.

import (
	"errors"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareHost owns the share coordinator, its timer and the wake-up channel
// of parked ShareFetches.
type ShareHost struct {
	b *Host

	mu struct {
		sync.Mutex
		c      *share.Coordinator
		timer  *time.Timer
		closed bool
		// changes is the coordinator's Changes value wake was last closed at.
		changes uint64
		// wake is closed and replaced when records may have become
		// acquirable (released, lock expired, SPSO moved), to wake parked fetches.
		wake chan struct{}
		// rotation picks the partition a ShareFetch starts with, for fairness.
		rotation uint64
	}
}

// Shares returns the broker's share host.
func (h *Host) Shares() *ShareHost { return &h.shares }

// initShares prepares the share host; called from New.
func (h *Host) initShares() {
	h.shares.b = h
	h.shares.mu.wake = make(chan struct{})
}

func (h *Host) shareConfig() share.Config {
	c := share.DefaultConfig()
	set := func(dst *int32, v int32) {
		if v > 0 {
			*dst = v
		}
	}
	set(&c.HeartbeatIntervalMs, h.cfg.GroupShareHeartbeatIntervalMs)
	set(&c.SessionTimeoutMs, h.cfg.GroupShareSessionTimeoutMs)
	set(&c.DeliveryCountLimit, h.cfg.GroupShareDeliveryCountLimit)
	set(&c.RecordLockDurationMs, h.cfg.GroupShareRecordLockDurationMs)
	set(&c.PartitionMaxRecordLocks, h.cfg.GroupSharePartitionMaxRecordLocks)
	set(&c.MaxGroupSize, h.cfg.GroupShareMaxSize)
	c.GroupConfigs = h.groupCfgs.Values
	return c
}

// shareTopics is the topic snapshot share-group assignment works from:
// every topic but the internal ones.
func (h *Host) shareTopics() []share.TopicInfo {
	ts := h.rm.Topics()
	out := make([]share.TopicInfo, 0, len(ts))
	for _, t := range ts {
		if replica.IsInternal(t.Meta.Name) {
			continue
		}
		out = append(out, share.TopicInfo{Name: t.Meta.Name, ID: t.Meta.ID, Partitions: int32(len(t.Partitions))})
	}
	return out
}

var errShareClosed = errors.New("broker is shutting down")

// Call runs f against the coordinator under its lock, then wakes parked
// fetches if records may have become acquirable and rearms the timer.
func (h *ShareHost) Call(f func(c *share.Coordinator, now time.Time)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.closed {
		return errShareClosed
	}
	if h.mu.c == nil {
		c, err := share.New(h.b.shareConfig(), h.b.shareTopics)
		if err != nil {
			return err
		}
		h.mu.c = c
	}
	f(h.mu.c, h.b.now())
	h.afterLocked()
	return nil
}

// afterLocked wakes parked fetches when the coordinator changed and
// schedules the next Tick.
func (h *ShareHost) afterLocked() {
	c := h.mu.c
	if n := c.Changes(); n != h.mu.changes {
		h.mu.changes = n
		close(h.mu.wake)
		h.mu.wake = make(chan struct{})
	}
	next := c.NextDeadline()
	if next.IsZero() {
		return
	}
	d := max(next.Sub(h.b.now()), 0)
	if h.mu.timer == nil {
		h.mu.timer = time.AfterFunc(d, h.tick)
		return
	}
	h.mu.timer.Reset(d)
}

// NextRotationLocked returns the next start index seed for a ShareFetch.
func (h *ShareHost) NextRotationLocked() uint64 {
	h.mu.rotation++
	return h.mu.rotation
}

// WakeLocked is the channel closed when records may have become
// acquirable; call it inside call.
func (h *ShareHost) WakeLocked() <-chan struct{} { return h.mu.wake }

func (h *ShareHost) tick() {
	// Share-group state lives only in the coordinator (not yet persisted),
	// so after a panic it is kept as it is rather than dropped.
	defer h.b.recoverTimer("share group coordinator tick", nil)
	err := h.Call(func(c *share.Coordinator, now time.Time) { c.Tick(now) })
	if err != nil && !errors.Is(err, errShareClosed) {
		h.b.log.Debug("share group tick skipped", "err", err)
	}
}

func (h *ShareHost) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.closed = true
	if h.mu.timer != nil {
		h.mu.timer.Stop()
	}
}

// ShareAcks is the acknowledgement batches of one partition, from
// ShareFetch or ShareAcknowledge.
type ShareAcks struct {
	TP      share.TopicPartition
	Batches []share.AckBatch
}

// ApplyShareAcks applies each partition's acknowledgements and returns
// their error codes (0 on success), in request order.
func (h *Host) ApplyShareAcks(c *share.Coordinator, now time.Time, group, member string, renew bool, acks []ShareAcks) []int16 {
	codes := make([]int16, len(acks))
	for i, a := range acks {
		t := h.rm.TopicByID(a.TP.TopicID)
		switch {
		case t == nil:
			codes[i] = kerr.UnknownTopicID.Code
		case a.TP.Partition < 0 || int(a.TP.Partition) >= len(t.Partitions):
			codes[i] = kerr.UnknownTopicOrPartition.Code
		default:
			codes[i] = c.Acknowledge(now, group, member, a.TP, a.Batches, renew)
		}
	}
	return codes
}
