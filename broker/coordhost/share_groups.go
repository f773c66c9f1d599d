package coordhost

// The share-group coordinator's home in the broker (KIP-932). One
// share.Coordinator serves every share group under one lock, ShareHost.mu;
// a timer calls its Tick at NextDeadline (member session timeouts,
// acquisition lock expiry). ShareFetch reads partitions under that lock so
// that what it acquires and what it returns agree.
//
// Share-partition state is persisted in __share_group_state
// (coordinator/share/state.go): after every call the records of the
// share-partitions it changed are appended, under the lock, before the
// call returns, so an acknowledgement is answered only once it is in the
// log (on a single node the append is acknowledged inside the call). The
// topic is created on the first write (share.coordinator.state.topic.num.partitions
// partitions, compacted) and replayed when the coordinator is created, the
// first call after start-up. A failed write keeps the in-memory state,
// closes the requester's connection and is retried by the next call.
// Membership is not persisted: members rejoin after a restart.
//
// Lock order: groups.mu → ShareHost.mu → partition and log locks. Nothing
// here takes groups.mu while holding ShareHost.mu. In cluster mode
// (share_cluster.go) the writer's queue lock is a leaf under ShareHost.mu,
// and no state is read or written with ShareHost.mu held.

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareHost owns the share coordinator, its timer and the watches of
// parked ShareFetches.
type ShareHost struct {
	b *Host

	mu struct {
		sync.Mutex
		c      *share.Coordinator
		timer  *time.Timer
		closed bool
		// changes is the coordinator's Changes value the watches were last signalled at.
		changes uint64
		// watches are the parked ShareFetches, signalled when records may
		// have become acquirable (released, lock expired, SPSO moved).
		watches map[*replica.Watch]struct{}
		// rotation picks the partition a ShareFetch starts with, for fairness.
		rotation uint64
		// cl is the cluster-mode state (share_cluster.go), nil on a single node.
		cl *shareCluster
	}
}

// Shares returns the broker's share host.
func (h *Host) Shares() *ShareHost { return &h.shares }

// initShares prepares the share host; called from New.
func (h *Host) initShares() {
	h.shares.b = h
	h.shares.mu.watches = map[*replica.Watch]struct{}{}
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
// every topic but the internal ones, of the whole cluster (topicInfos).
func (h *Host) shareTopics() []share.TopicInfo {
	ts := h.topicInfos()
	out := make([]share.TopicInfo, 0, len(ts))
	for _, t := range ts {
		if replica.IsInternal(t.Name) {
			continue
		}
		out = append(out, share.TopicInfo{Name: t.Name, ID: t.ID, Partitions: t.Partitions})
	}
	return out
}

var errShareClosed = errors.New("broker is shutting down")

// Call runs f against the coordinator under its lock (loading it first),
// writes the share-partition state f changed, then wakes parked fetches
// if records may have become acquirable and rearms the timer. An error
// means f did not run (shutdown, a failed load) or its state could not
// be written.
//
// In cluster mode the state goes to the share coordinators
// (share_cluster.go) after the lock is released, and Call returns once it
// is written, also while the host closes: the writer settles every job it
// took (shareWriter.stop), so a call is not failed while its write may
// still take effect.
func (h *ShareHost) Call(f func(c *share.Coordinator, now time.Time)) error {
	h.mu.Lock()
	if h.mu.closed {
		h.mu.Unlock()
		return errShareClosed
	}
	if h.mu.c == nil {
		c, err := h.load()
		if err != nil {
			h.mu.Unlock()
			return err
		}
		h.mu.c = c
	}
	now := h.b.now()
	f(h.mu.c, now)
	if h.mu.cl != nil {
		job := h.enqueueLocked(now)
		h.afterLocked()
		h.mu.Unlock()
		return <-job.done
	}
	defer h.mu.Unlock()
	err := h.persistLocked(now)
	h.afterLocked()
	return err
}

// load returns a new coordinator with the state of __share_group_state,
// if the topic exists.
func (h *ShareHost) load() (*share.Coordinator, error) {
	cfg := h.b.shareConfig()
	cfg.LoadOnDemand = h.mu.cl != nil
	c, err := share.New(cfg, h.b.shareTopics)
	if err != nil || cfg.LoadOnDemand {
		return c, err // a cluster reads each share-partition's state on demand
	}
	t := h.b.rm.TopicByName(share.StateTopic)
	if t == nil {
		return c, nil
	}
	start := time.Now()
	n := 0
	for _, p := range t.Partitions {
		err := replica.ReplayPartition(p, func(hdr records.Header, recs []records.Record) {
			if hdr.IsControl() {
				return
			}
			for _, r := range recs {
				n++
				if err := c.ReplayState(r.Key, r.Value); err != nil {
					h.b.log.Warn("skipping bad "+share.StateTopic+" record", "partition", p.Index, "err", err)
				}
			}
		})
		if err != nil {
			return nil, fmt.Errorf("loading %s-%d: %w", share.StateTopic, p.Index, err)
		}
	}
	for _, err := range c.FinishReplay() {
		h.b.log.Warn("skipping bad "+share.StateTopic+" record", "err", err)
	}
	c.ForgetDeletedTopics() // tombstones written after the first call
	h.b.log.Info("loaded share group state", "records", n, "took", time.Since(start).Round(time.Millisecond).String())
	return c, nil
}

// persistLocked appends the state records of the share-partitions the
// last call changed, creating __share_group_state on first use, and
// returns the outcome when the append was acknowledged within the call
// (always on a single node). Records that could not be written go back to
// the coordinator, which writes them again after the next call.
func (h *ShareHost) persistLocked(now time.Time) error {
	c := h.mu.c
	recs := c.TakeStateRecords(now)
	if len(recs) == 0 {
		return nil
	}
	parts := h.b.cfg.ShareStateTopicNumPartitions
	if parts < 1 {
		parts = 50 // a Config not from ParseConfig
	}
	t, err := h.b.rm.InternalTopic(share.StateTopic, parts, map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    fmt.Sprint(h.b.cfg.OffsetsTopicSegmentBytes),
	})
	if err != nil {
		c.Unwritten(recs)
		return fmt.Errorf("creating %s: %w", share.StateTopic, err)
	}
	grecs := make([]group.Record, len(recs))
	for i, r := range recs {
		grecs[i] = group.Record{Group: r.CoordinatorKey, Key: r.Key, Value: r.Value}
	}
	var werr error
	gate := newAckGate(&h.mu)
	appendInternal(h.b.rm, t, now, grecs, share.StatePartitionFor, gate.wrap(func(err error) {
		if err == nil {
			return
		}
		h.b.log.Error("writing share group state failed; retrying at the next call", "err", err)
		if h.mu.c == c {
			c.Unwritten(recs)
		}
		werr = err
	}))
	gate.release()
	return werr
}

// afterLocked wakes parked fetches when the coordinator changed and
// schedules the next Tick.
func (h *ShareHost) afterLocked() {
	c := h.mu.c
	if n := c.Changes(); n != h.mu.changes {
		h.mu.changes = n
		for w := range h.mu.watches {
			w.Signal()
		}
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

// AddWatch makes w, a parked ShareFetch's watch, receive a signal
// whenever records may have become acquirable; RemoveWatch ends that.
func (h *ShareHost) AddWatch(w *replica.Watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.watches[w] = struct{}{}
}

// RemoveWatch undoes AddWatch.
func (h *ShareHost) RemoveWatch(w *replica.Watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.mu.watches, w)
}

func (h *ShareHost) tick() {
	// The in-flight state (acquisitions, locks) lives only in the
	// coordinator, so after a panic it is kept as it is rather than dropped.
	defer h.b.recoverTimer("share group coordinator tick", nil)
	err := h.Call(func(c *share.Coordinator, now time.Time) { c.Tick(now) })
	if err != nil && !errors.Is(err, errShareClosed) {
		h.b.log.Debug("share group tick skipped", "err", err)
	}
}

func (h *ShareHost) close() {
	h.mu.Lock()
	h.mu.closed = true
	if h.mu.timer != nil {
		h.mu.timer.Stop()
	}
	cl := h.mu.cl
	h.mu.Unlock()
	if cl != nil {
		cl.writer.stop()
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
		case !t.Partitions[a.TP.Partition].IsLeader():
			codes[i] = kerr.NotLeaderForPartition.Code
		default:
			codes[i] = c.Acknowledge(now, group, member, a.TP, a.Batches, renew)
		}
	}
	return codes
}

// Watches is the number of parked ShareFetches (for tests).
func (h *ShareHost) Watches() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.mu.watches)
}
