package coordhost

// Share groups in cluster mode, with Kafka's split (KIP-932): a broker's
// share coordinator (share.Coordinator, Config.LoadOnDemand) holds the
// membership of the share groups whose __consumer_offsets partition it
// leads, and the share sessions and in-flight records of the data
// partitions it leads; the persisted state of every share-partition lives
// at its share coordinator, the leader of its __share_group_state
// partition (share_store.go), reached directly when that is this broker
// and with ReadShareGroupState / WriteShareGroupState /
// DeleteShareGroupState otherwise (Kafka's Persister).
//
// Reads: before a ShareFetch acquires from a share-partition it has not
// seen since it became leader, LoadStates reads its state and installs it
// (nothing persisted: the first fetch initializes it from
// share.auto.offset.reset and writes that). Writes: every call's state
// records go, in the order the calls made them, through one writer
// goroutine (shareWriter) that sends each share-partition's whole state
// with the data partition's current leader epoch; the call answers once
// its records are written, so an acknowledgement is answered only when it
// is replicated at the share coordinator. A write that fails for good
// drops the share-partition here (DropState), so it is read again, and
// fails the call (its connection is closed): what it acknowledged may be
// delivered again, never lost. A write is never sent for a partition this
// broker no longer leads; a zombie leader's write is refused by the share
// coordinator's leader-epoch check.
//
// Leadership: losing (or gaining) a data partition drops its in-flight
// state (dataLeadershipChanged); losing a __consumer_offsets partition
// drops the membership of its share groups (the members rejoin at the new
// coordinator, which has none: membership is in memory, unlike Kafka,
// which keeps it in __consumer_offsets).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// shareStateTimeout bounds the retries of one state read or write
	// while its share coordinator moves or loads.
	shareStateTimeout = 10 * time.Second
	// shareStateBackoff is the pause between those retries.
	shareStateBackoff = 100 * time.Millisecond
	// shareLoadTimeout bounds LoadStates' reads within one ShareFetch.
	shareLoadTimeout = 3 * time.Second
	// shareDrainTimeout bounds how long a closing share host lets its
	// writer finish the writes already queued (shareWriter.stop).
	shareDrainTimeout = 5 * time.Second
)

// shareCluster is the cluster-mode state of the share host, under ShareHost.mu.
type shareCluster struct {
	// gen counts the leadership changes of each data partition; a state
	// read is installed only if none happened meanwhile.
	gen map[share.TopicPartition]uint64
	// pending counts the writes of each share-partition queued or in
	// flight: it is not read again until they finish, so a read cannot
	// return state older than what this broker already wrote.
	pending map[shareKey]int
	writer  *shareWriter
}

// shareWriteJob is the state records of one call, written in order.
type shareWriteJob struct {
	recs []share.StateRecord
	done chan error // buffered: the writer never blocks on it
}

// shareWriter writes the jobs FIFO on one goroutine, which it owns: start
// starts it; stop refuses new jobs, lets the queued ones finish for up to
// shareDrainTimeout (their calls were answered to nobody yet, and a write
// cut short has an unknown outcome), then cancels what is in flight, fails
// what is left and waits for the goroutine. Invariant: every job pushed
// gets exactly one outcome on done.
type shareWriter struct {
	h      *ShareHost
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	exited chan struct{}
	mu     struct {
		sync.Mutex
		queue   []*shareWriteJob
		stopped bool
	}
}

// startCluster puts the share host in cluster mode; called by SetCluster.
func (h *ShareHost) startCluster() {
	ctx, cancel := context.WithCancel(context.Background())
	w := &shareWriter{h: h, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	h.mu.Lock()
	h.mu.cl = &shareCluster{gen: map[share.TopicPartition]uint64{}, pending: map[shareKey]int{}, writer: w}
	h.mu.Unlock()
	go w.run()
}

// enqueueLocked hands the records of the last call to the writer; the
// returned job's done reports their outcome. h.mu must be held.
func (h *ShareHost) enqueueLocked(now time.Time) *shareWriteJob {
	recs := h.mu.c.TakeStateRecords(now)
	job := &shareWriteJob{recs: recs, done: make(chan error, 1)}
	if len(recs) == 0 {
		job.done <- nil
		return job
	}
	for _, r := range recs {
		h.mu.cl.pending[shareKey{r.Group, r.TP}]++
	}
	h.mu.cl.writer.push(job)
	return job
}

func (w *shareWriter) push(job *shareWriteJob) {
	w.mu.Lock()
	if w.mu.stopped {
		w.mu.Unlock()
		job.done <- errShareClosed
		return
	}
	w.mu.queue = append(w.mu.queue, job)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// pop takes the next job; nil when none is queued or stop gave up waiting.
func (w *shareWriter) pop() *shareWriteJob {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.mu.queue) == 0 || w.ctx.Err() != nil {
		return nil
	}
	job := w.mu.queue[0]
	w.mu.queue[0] = nil
	w.mu.queue = w.mu.queue[1:]
	return job
}

// drained reports whether stop was called and nothing is left to write.
func (w *shareWriter) drained() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.stopped && len(w.mu.queue) == 0
}

// run writes the queued jobs in order until stop was called and the queue
// is empty, or stop gave up waiting.
func (w *shareWriter) run() {
	defer close(w.exited)
	for {
		for job := w.pop(); job != nil; job = w.pop() {
			var first error
			for _, r := range job.recs {
				err := w.h.writeState(w.ctx, r)
				w.h.writeDone(r, err)
				if err != nil && first == nil {
					first = err
				}
			}
			job.done <- first
		}
		if w.drained() {
			return
		}
		select {
		case <-w.wake:
		case <-w.ctx.Done():
			return
		}
	}
}

// stop ends the writer: push refuses new jobs, the queued ones are
// written for up to shareDrainTimeout, then the write in flight is
// cancelled and the jobs left fail.
func (w *shareWriter) stop() {
	w.mu.Lock()
	w.mu.stopped = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	t := time.AfterFunc(shareDrainTimeout, w.cancel)
	<-w.exited
	t.Stop()
	w.cancel()
	w.mu.Lock()
	q := w.mu.queue
	w.mu.queue = nil
	w.mu.Unlock()
	for _, job := range q {
		job.done <- errShareClosed
	}
}

// writeDone settles one record's write: on failure the share-partition is
// dropped here, to be read again from its share coordinator.
func (h *ShareHost) writeDone(r share.StateRecord, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := shareKey{r.Group, r.TP}
	if h.mu.cl.pending[k]--; h.mu.cl.pending[k] <= 0 {
		delete(h.mu.cl.pending, k)
	}
	if err != nil && h.mu.c != nil && !errors.Is(err, errShareClosed) {
		h.b.log.Warn("writing share-partition state failed; it is read again from the share coordinator",
			"group", r.Group, "key", r.CoordinatorKey, "err", err)
		h.mu.c.DropState(r.Group, r.TP)
		h.afterLocked()
	}
}

// errShareNotLeader fails a write for a data partition this broker no longer leads.
var errShareNotLeader = errors.New("no longer the leader of the data partition")

// writeState writes one record at its share coordinator, retrying while
// the coordinator moves or loads, up to shareStateTimeout. A state write
// that was sent and then finds the data partition led elsewhere had an
// unknown outcome (its share coordinator may have appended it and lost
// its leadership before answering, and the next one replays it): it is
// settled by reading the state back (writeSettled), so a call is failed
// only when what it acknowledged did not take effect.
func (h *ShareHost) writeState(ctx context.Context, r share.StateRecord) error {
	sent := false
	code, err := retryShare(ctx, func() (int16, error) {
		p := h.b.dataPartition(r.TP)
		if p == nil || !p.IsLeader() {
			return 0, errShareNotLeader
		}
		sent = true
		return h.b.sendState(ctx, r, p.LeaderEpoch())
	})
	switch {
	case errors.Is(err, errShareNotLeader):
		if r.Snapshot == nil {
			return nil // a deletion (DeleteGroups) reaches the state by the admin path
		}
		if sent && h.writeSettled(ctx, r) {
			return nil
		}
		return err
	case ctx.Err() != nil:
		return errShareClosed
	case err == nil && code == 0:
		return nil
	case err == nil && !shareRetriable(code):
		return fmt.Errorf("share coordinator: %w", kerr.ErrorForCode(code))
	}
	if err == nil {
		err = kerr.ErrorForCode(code)
	}
	return fmt.Errorf("share coordinator unavailable for %s: %w", shareStateTimeout, err)
}

// writeSettled reports whether the state r wrote took effect after all:
// the share-partition's persisted state, read without a leader epoch (it
// must neither be fenced by the next leader's read nor fence it), covers
// r's snapshot (share.Snapshot.Covers). False when it does not or cannot
// be read within shareStateTimeout. Called once this broker no longer
// leads the data partition, so it writes nothing more there: the state
// read is what the next leader reads too.
func (h *ShareHost) writeSettled(ctx context.Context, r share.StateRecord) bool {
	var s *share.Snapshot
	code, err := retryShare(ctx, func() (code int16, err error) {
		s, code, err = h.b.readState(ctx, r.Group, r.TP, -1)
		return code, err
	})
	settled := err == nil && code == 0 && s != nil && s.Covers(*r.Snapshot)
	h.b.log.Info("share-partition state write settled by reading it back", "group", r.Group, "key", r.CoordinatorKey, "took_effect", settled, "code", code, "err", err)
	return settled
}

// retryShare runs f until it answers a code that is not retriable, fails
// with errShareNotLeader, ctx ends or shareStateTimeout passes, and
// returns its last answer. Other errors (the network) are retried.
func retryShare(ctx context.Context, f func() (int16, error)) (int16, error) {
	deadline := time.Now().Add(shareStateTimeout)
	for {
		code, err := f()
		if err == nil && !shareRetriable(code) || errors.Is(err, errShareNotLeader) || ctx.Err() != nil || time.Now().After(deadline) {
			return code, err
		}
		select {
		case <-time.After(shareStateBackoff):
		case <-ctx.Done():
		}
	}
}

// awaitCode makes a call of this broker's share coordinator (share_store.go)
// and waits for its done.
func awaitCode(ctx context.Context, call func(done func(code int16))) (int16, error) {
	ch := make(chan int16, 1)
	call(func(code int16) { ch <- code })
	select {
	case code := <-ch:
		return code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// shareRetriable are the share coordinator answers that mean "try again":
// it moved, is loading, or its topic is being created.
func shareRetriable(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code,
		kerr.NotLeaderForPartition.Code, kerr.LeaderNotAvailable.Code, kerr.UnknownTopicOrPartition.Code:
		return true
	}
	return false
}

// dataPartition is the partition of a share-partition, nil if unknown here.
func (h *Host) dataPartition(tp share.TopicPartition) *replica.Partition {
	t := h.rm.TopicByID(tp.TopicID)
	if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
		return nil
	}
	return t.Partitions[tp.Partition]
}

// shareStatePartitions is __share_group_state's partition count.
func (h *Host) shareStatePartitions() int32 {
	if t := h.rm.TopicByName(share.StateTopic); t != nil && len(t.Partitions) > 0 {
		return int32(len(t.Partitions))
	}
	if n := h.cfg.ShareStateTopicNumPartitions; n > 0 {
		return n
	}
	return 50
}

// errNoStateTopic reports that __share_group_state does not exist: no
// share-partition has persisted state yet.
var errNoStateTopic = errors.New(share.StateTopic + " does not exist")

// shareCoordinator returns the broker that leads the share-partition's
// state partition, and whether that is this broker with the partition
// loaded. A retriable code means not now; errNoStateTopic that the topic
// is missing (create says whether to create it).
func (h *Host) shareCoordinator(group string, tp share.TopicPartition, create bool) (broker int32, local bool, code int16, err error) {
	n := h.shareStatePartitions()
	part := share.StatePartitionFor(share.CoordinatorKey(group, tp), n)
	leader, exists := h.cluster.Leader(share.StateTopic, part)
	if !exists {
		if _, ok := h.store.Topic(share.StateTopic); !ok {
			if !create {
				return -1, false, 0, errNoStateTopic
			}
			h.createShareStateTopic(n)
		}
		return -1, false, kerr.CoordinatorNotAvailable.Code, nil
	}
	if leader < 0 {
		return -1, false, kerr.CoordinatorNotAvailable.Code, nil
	}
	if leader != h.cluster.BrokerID() {
		return leader, false, 0, nil
	}
	if p := h.rm.PartitionOf(share.StateTopic, part); p == nil || !p.IsLeader() {
		// The cache names this broker; LeaderAndIsr has not made it leader yet.
		return -1, false, kerr.CoordinatorLoadInProgress.Code, nil
	}
	return leader, true, 0, nil
}

// createShareStateTopic creates __share_group_state in the metadata store
// (the controller assigns its replicas), as Kafka does on first use:
// share.coordinator.state.topic.replication.factor capped at the live
// brokers, min.insync.replicas share.coordinator.state.topic.min.isr
// capped at that.
func (h *Host) createShareStateTopic(n int32) {
	rf := config.InternalReplicationFactor(h.cfg.Cluster.ShareStateReplicationFactor, h.cluster.LiveBrokers())
	if rf < 1 {
		rf = 1
	}
	minISR := min(max(h.cfg.Cluster.ShareStateMinISR, 1), int32(rf))
	err := h.store.CreateTopic(controller.Topic{Name: share.StateTopic, Partitions: n, ReplicationFactor: rf, Configs: map[string]string{
		"cleanup.policy":      "compact",
		"compression.type":    "producer",
		"segment.bytes":       fmt.Sprint(h.cfg.OffsetsTopicSegmentBytes),
		"min.insync.replicas": fmt.Sprint(minISR),
	}})
	if err != nil && !errors.Is(err, controller.ErrTopicExists) {
		h.log.Error("creating internal topic", "topic", share.StateTopic, "err", err)
	}
}

// sendState sends one record's state (or its deletion) to its share
// coordinator and returns the coordinator's error code. A state creates
// __share_group_state if it is missing; a deletion finds nothing to delete.
func (h *Host) sendState(ctx context.Context, r share.StateRecord, leaderEpoch int32) (int16, error) {
	broker, local, code, err := h.shareCoordinator(r.Group, r.TP, r.Snapshot != nil)
	if errors.Is(err, errNoStateTopic) {
		return 0, nil // a deletion, and no share-partition has state
	}
	if err != nil || code != 0 {
		return code, err
	}
	if local {
		return awaitCode(ctx, func(done func(int16)) {
			if r.Snapshot == nil {
				h.ShareStateDelete(r.Group, r.TP, done)
				return
			}
			s := *r.Snapshot
			s.LeaderEpoch = leaderEpoch
			h.ShareStateWrite(r.Group, r.TP, s, done)
		})
	}
	rctx, cancel := context.WithTimeout(ctx, shareStateTimeout)
	defer cancel()
	if r.Snapshot == nil {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = r.Group
		rt := kmsg.NewDeleteShareGroupStateRequestTopic()
		rt.TopicID = r.TP.TopicID
		rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		rp.Partition = r.TP.Partition
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := h.cluster.Send(rctx, broker, req)
		if err != nil {
			return 0, err
		}
		dr, ok := resp.(*kmsg.DeleteShareGroupStateResponse)
		if !ok || len(dr.Topics) != 1 || len(dr.Topics[0].Partitions) != 1 {
			return kerr.UnknownServerError.Code, nil
		}
		return dr.Topics[0].Partitions[0].ErrorCode, nil
	}
	s := r.Snapshot
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = r.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = r.TP.TopicID
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = r.TP.Partition, s.StateEpoch, leaderEpoch, s.StartOffset
	for _, b := range s.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := h.cluster.Send(rctx, broker, req)
	if err != nil {
		return 0, err
	}
	wr, ok := resp.(*kmsg.WriteShareGroupStateResponse)
	if !ok || len(wr.Topics) != 1 || len(wr.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError.Code, nil
	}
	return wr.Topics[0].Partitions[0].ErrorCode, nil
}

// readState reads a share-partition's persisted state at its share
// coordinator: nil when it has none.
func (h *Host) readState(ctx context.Context, group string, tp share.TopicPartition, leaderEpoch int32) (*share.Snapshot, int16, error) {
	broker, local, code, err := h.shareCoordinator(group, tp, false)
	if errors.Is(err, errNoStateTopic) {
		return nil, 0, nil
	}
	if err != nil || code != 0 {
		return nil, code, err
	}
	if local {
		s, found, code := h.ShareStateRead(group, tp, leaderEpoch)
		if code != 0 || !found {
			return nil, code, nil
		}
		return &s, 0, nil
	}
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = tp.TopicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = tp.Partition, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, shareStateTimeout)
	defer cancel()
	resp, err := h.cluster.Send(rctx, broker, req)
	if err != nil {
		return nil, 0, err
	}
	rr, ok := resp.(*kmsg.ReadShareGroupStateResponse)
	if !ok || len(rr.Topics) != 1 || len(rr.Topics[0].Partitions) != 1 {
		return nil, kerr.UnknownServerError.Code, nil
	}
	pr := rr.Topics[0].Partitions[0]
	if pr.ErrorCode != 0 {
		return nil, pr.ErrorCode, nil
	}
	if pr.StartOffset < 0 {
		return nil, 0, nil // uninitialized: no state
	}
	s := share.Snapshot{StateEpoch: pr.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: pr.StartOffset}
	for _, b := range pr.StateBatches {
		s.Batches = append(s.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
	}
	if err := s.Validate(); err != nil {
		return nil, 0, fmt.Errorf("share state from broker %d: %w", broker, err)
	}
	return &s, 0, nil
}

// LoadStates reads and installs the persisted state of the
// share-partitions of targets that this broker leads and has not loaded
// (cluster mode; a no-op on a single node). What cannot be read within
// shareLoadTimeout stays unloaded: the fetch acquires nothing from it
// and the next one tries again.
func (h *ShareHost) LoadStates(group string, targets []share.TopicPartition) {
	type want struct {
		tp    share.TopicPartition
		gen   uint64
		epoch int32
	}
	h.mu.Lock()
	if h.mu.cl == nil || h.mu.c == nil || h.mu.closed {
		h.mu.Unlock()
		return
	}
	c, wctx := h.mu.c, h.mu.cl.writer.ctx
	var todo []want
	for _, tp := range c.Unloaded(group, targets) {
		p := h.b.dataPartition(tp)
		if p == nil || !p.IsLeader() || h.mu.cl.pending[shareKey{group, tp}] > 0 {
			continue
		}
		todo = append(todo, want{tp, h.mu.cl.gen[tp], p.LeaderEpoch()})
	}
	h.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	// The writer's context ends when the share host closes (shutdown).
	ctx, cancel := context.WithTimeout(wctx, shareLoadTimeout)
	defer cancel()
	refreshed := false
	for _, w := range todo {
		var s *share.Snapshot
		code, err := retryShare(ctx, func() (code int16, err error) {
			s, code, err = h.b.readState(ctx, group, w.tp, w.epoch)
			return code, err
		})
		if err != nil || code != 0 {
			if err == nil {
				err = kerr.ErrorForCode(code)
			}
			h.b.log.Debug("reading share-partition state failed", "group", group, "key", share.CoordinatorKey(group, w.tp), "err", err)
			continue
		}
		if s == nil && !refreshed {
			// The first fetch initializes it from share.auto.offset.reset:
			// read the group's configs as stored, not as last announced.
			h.b.refreshGroupConfig(group)
			refreshed = true
		}
		h.mu.Lock()
		if h.mu.c == c && h.mu.cl.gen[w.tp] == w.gen && h.mu.cl.pending[shareKey{group, w.tp}] == 0 {
			c.InstallState(group, w.tp, s)
			h.afterLocked()
		}
		h.mu.Unlock()
	}
}

// dataLeadershipChanged forgets the in-flight state of a data partition
// whose leadership this broker gained or lost.
func (h *ShareHost) dataLeadershipChanged(topic string, partition int32) {
	t := h.b.rm.TopicByName(topic)
	if t == nil {
		return
	}
	tp := share.TopicPartition{TopicID: t.Meta.ID, Partition: partition}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.cl == nil {
		return
	}
	h.mu.cl.gen[tp]++
	if h.mu.c != nil && !h.mu.closed {
		h.mu.c.DropPartition(tp)
		h.afterLocked()
	}
}

// groupsLeadershipLost drops the membership of the share groups of a
// __consumer_offsets partition this broker no longer leads.
func (h *ShareHost) groupsLeadershipLost(part int32) {
	n := h.b.cfg.OffsetsTopicNumPartitions
	if t := h.b.rm.TopicByName(offsetsTopic); t != nil && len(t.Partitions) > 0 {
		n = int32(len(t.Partitions))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.c == nil || h.mu.closed {
		return
	}
	h.mu.c.DropMembers(func(g string) bool { return group.PartitionFor(g, n) != part })
}
