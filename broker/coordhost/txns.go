package coordhost

// The transaction coordinator's home in the broker. One txn.Coordinator
// serves every transactional id (a single node leads every partition of
// __transaction_state, created on first use and replayed at start-up).
//
// Order of effects for every call, under txns.mu (lock order: txns.mu →
// groups.mu → partition.mu): the coordinator's records are appended to
// __transaction_state; then replies are delivered; then markers are written
// as control batches to every partition of the transaction (for
// __consumer_offsets partitions the group coordinator then applies or drops
// the transaction's pending offsets); then MarkersWritten completes the
// transaction and its record is appended. A marker that cannot be written is
// kept and retried on the next tick; after a crash, Loaded returns the
// markers of prepared transactions again.
//
// The coordinator changes its state when it handles a call, before the
// call's records are acknowledged (it has no pending states), so nothing
// leaves the host before they are: replies and markers wait for the
// acknowledgement, a call with no records waits for every call that
// appended before it, and the in-process checks of produce wait for their
// call's outcome (callAndWait). A record acknowledged after its
// coordinator was dropped or its partition reloaded counts for nothing
// (NOT_COORDINATOR, no markers): the coordinator replayed meanwhile read
// the log only up to its high watermark and does not have it.

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/coordinator/txn"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnStateTopic is Kafka's internal topic of transaction state.
const txnStateTopic = "__transaction_state"

// markerRetry is how soon a marker that failed to write is tried again.
const markerRetry = time.Second

// txns owns the transaction coordinator, its timer and its topic.
type txns struct {
	b *Host
	// sender delivers markers to partition leaders in cluster mode (nil on
	// a single node); set by Host.SetCluster before the broker serves.
	sender *markerSender

	mu struct {
		sync.Mutex
		c     *txn.Coordinator
		topic *replica.Topic
		// loaded are the __transaction_state partitions whose
		// transactional ids c holds: all of them on a single node, those
		// this broker leads in a cluster.
		loaded map[int32]bool
		timer  *time.Timer
		closed bool
		// unwritten are markers some partition of which could not be written yet.
		unwritten []txn.Marker
		// loadGen numbers the loads of partitions: loadGens holds, by
		// partition, the number of the load c's state of it comes from.
		// A call's outcome counts only if c and the loads of its records'
		// partitions are still the ones it ran with (stale).
		loadGen  uint64
		loadGens map[int32]uint64
		// seq numbers the calls that append records; inflight holds those
		// not acknowledged yet (of any coordinator), and waiting the calls
		// with no records that answer only after them (afterInflight).
		seq      uint64
		inflight map[uint64]bool
		waiting  []txnWaiter
	}
}

// txnWaiter is a call with no records of its own, answered once every call
// that appended before it is acknowledged.
type txnWaiter struct {
	upTo uint64
	run  func()
}

func (h *Host) txnConfig() txn.Config {
	tc := txn.DefaultConfig()
	tc.TransactionMaxTimeoutMs = h.cfg.TransactionMaxTimeoutMs
	tc.TransactionalIDExpirationMs = h.cfg.TransactionalIDExpirationMs
	tc.AbortTimedOutTransactionCleanupIntervalMs = h.cfg.TransactionAbortTimedOutCleanupIntervalMs
	tc.TransactionStateLogNumPartitions = h.cfg.TransactionStateLogNumPartitions
	tc.OffsetsTopicNumPartitions = h.cfg.OffsetsTopicNumPartitions
	tc.NextProducerID = h.pids.allocate
	tc.PartitionExists = h.partitionExists
	return tc
}

// partitionExists reports whether the partition exists in the cluster: in
// cluster mode the metadata cache knows it, as Kafka's coordinators ask
// (this broker may host no replica of it); on a single node the replica
// manager holds it.
func (h *Host) partitionExists(topic string, partition int32) bool {
	if h.cluster != nil {
		_, ok := h.cluster.Leader(topic, partition)
		return ok
	}
	return h.rm.PartitionOf(topic, partition) != nil
}

// loadTxns replays __transaction_state if it exists; called from New.
func (h *Host) loadTxns() error {
	if h.rm.TopicByName(txnStateTopic) == nil || h.cfg.Cluster.Enabled() {
		// In a cluster this broker leads no partition yet: the coordinator
		// loads when LeaderAndIsr makes it a leader (OnLeadershipChange).
		return nil
	}
	return h.txns.ensure()
}

// ensure loads the coordinator, creating __transaction_state first if needed.
func (x *txns) ensure() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.ensureLocked()
}

func (x *txns) ensureLocked() error {
	if x.mu.closed {
		return errors.New("broker is shutting down")
	}
	if x.mu.c != nil {
		return nil
	}
	b := x.b
	t, err := x.topicLocked()
	if err != nil {
		return err
	}
	c, err := txn.New(b.txnConfig())
	if err != nil {
		return err
	}
	x.mu.c, x.mu.topic, x.mu.loaded = c, t, map[int32]bool{}
	n := 0
	for _, p := range t.Partitions {
		// In a cluster a coordinator serves the partitions this broker
		// leads; it loads the others when it gains them
		// (leadershipChanged).
		if b.cfg.Cluster.Enabled() && !p.IsLeader() {
			continue
		}
		k, err := x.loadPartitionLocked(p)
		if err != nil {
			x.mu.c, x.mu.topic, x.mu.loaded = nil, nil, nil
			return err
		}
		n += k
	}
	// Loaded returns the markers of every prepared transaction, so markers
	// kept for a retry by the coordinator dropped before are not needed.
	x.mu.unwritten = nil
	markers := c.Loaded(b.now())
	b.log.Info("loaded transaction coordinator", "records", n, "partitions", len(x.mu.loaded), "markers_to_finish", len(markers))
	x.writeMarkersLocked(markers) // may drop the coordinator again
	x.rearmLocked()
	return nil
}

// loadPartitionLocked replays __transaction_state partition p into the
// coordinator and returns the number of records applied. It reads to the
// log end, as Kafka does: a new leader's HW can lag records its ISR
// already acknowledged (a PrepareCommit the old coordinator answered), and
// missing one would let this coordinator abort a committed transaction.
func (x *txns) loadPartitionLocked(p *replica.Partition) (int, error) {
	c := x.mu.c
	c.SetCoordinatorEpoch(p.Index, p.LeaderEpoch())
	n := 0
	err := replica.ReplayPartition(p, func(h records.Header, recs []records.Record) {
		if h.IsControl() {
			return
		}
		for _, r := range recs {
			n++
			if err := c.Replay(r.Key, r.Value); err != nil {
				x.b.log.Warn("skipping bad __transaction_state record", "partition", p.Index, "err", err)
			}
		}
	})
	if err != nil {
		c.Unload(p.Index)
		return 0, fmt.Errorf("loading %s-%d: %w", txnStateTopic, p.Index, err)
	}
	x.mu.loaded[p.Index] = true
	x.mu.loadGen++
	if x.mu.loadGens == nil {
		x.mu.loadGens = map[int32]uint64{}
	}
	x.mu.loadGens[p.Index] = x.mu.loadGen
	return n, nil
}

// inPartition returns whether a transactional id belongs to
// __transaction_state partition part.
func (x *txns) inPartition(part int32) func(txnID string) bool {
	n := int32(len(x.mu.topic.Partitions))
	return func(id string) bool { return txn.PartitionFor(id, n) == part }
}

// leadershipChanged loads (leader) or unloads the transactional ids of
// __transaction_state partition part, as Kafka's TransactionStateManager
// does on election and resignation; the other partitions' transactions
// are untouched. A gained partition's prepared transactions get their
// markers sent again, so the new coordinator finishes what the old one
// left prepared. A coordinator not loaded yet is loaded by the next call,
// or by the timer armed here when this broker gains a partition (its
// prepared transactions must not wait for a client).
func (x *txns) leadershipChanged(part int32, leader bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.closed {
		return
	}
	if x.mu.c == nil {
		if leader {
			now := x.b.now()
			rearm(&x.mu.timer, now, now.Add(leadershipReloadDelay), x.tick)
		}
		return
	}
	if part < 0 || int(part) >= len(x.mu.topic.Partitions) {
		return
	}
	switch {
	case leader && !x.mu.loaded[part]:
		n, err := x.loadPartitionLocked(currentPartition(x.b.rm, x.mu.topic, part))
		if err != nil {
			x.b.log.Error("loading transaction coordinator partition failed; reloading the coordinator", "err", err)
			x.dropLocked()
			x.rearmLocked()
			return
		}
		in := x.inPartition(part)
		var markers []txn.Marker
		for _, m := range x.mu.c.Loaded(x.b.now()) {
			if in(m.TxnID) {
				markers = append(markers, m)
			}
		}
		x.b.log.Info("loaded transaction coordinator partition", "partition", part, "records", n, "markers_to_finish", len(markers))
		x.writeMarkersLocked(markers) // may drop the coordinator
	case !leader && x.mu.loaded[part]:
		x.unloadPartitionLocked(part)
		x.b.log.Info("unloaded transaction coordinator partition", "partition", part)
	default:
		return
	}
	x.rearmLocked()
}

// unloadPartitionLocked forgets the transactional ids of
// __transaction_state partition part and the markers this coordinator was
// sending for them: the partition's new coordinator sends them again.
func (x *txns) unloadPartitionLocked(part int32) {
	in := x.inPartition(part)
	x.mu.c.Unload(part)
	if x.sender != nil {
		x.sender.forget(in)
	}
	var keep []txn.Marker
	for _, m := range x.mu.unwritten {
		if !in(m.TxnID) {
			keep = append(keep, m)
		}
	}
	x.mu.unwritten = keep
	delete(x.mu.loaded, part)
	delete(x.mu.loadGens, part)
}

// topicLocked returns __transaction_state (coordinatorTopic).
func (x *txns) topicLocked() (*replica.Topic, error) {
	b := x.b
	return b.coordinatorTopic(txnStateTopic, b.cfg.TransactionStateLogNumPartitions, map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "uncompressed",
		"segment.bytes":    fmt.Sprint(b.cfg.TransactionStateLogSegmentBytes),
	})
}

func (x *txns) close() {
	if x.sender != nil {
		x.sender.stop() // before x.mu: its completions take x.mu
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.mu.closed = true
	if x.mu.timer != nil {
		x.mu.timer.Stop()
	}
}

// dropLocked drops the coordinator after a failed write of
// __transaction_state (or a recovered panic): its in-memory state may be
// ahead of the log. The next call, or the reload timer armed by
// rearmLocked, replays the log; Loaded then returns the markers of the
// transactions that were prepared, so none is left half-written.
func (x *txns) dropLocked() {
	x.mu.c, x.mu.loaded, x.mu.loadGens = nil, nil, nil
	if x.sender != nil {
		x.sender.clear()
	}
	// The calls waiting for appends in flight answer now (NOT_COORDINATOR:
	// their coordinator is gone); the next one replays the log and waits
	// for nothing of this one's. A callback that never comes (a panic in
	// the append) then holds nobody up.
	x.mu.inflight = nil
	x.runWaitersLocked()
}

// errTxnStateWrite wraps a failed append to __transaction_state: the call's
// replies were answered with COORDINATOR_NOT_AVAILABLE and its effects dropped.
var errTxnStateWrite = errors.New("writing transaction state failed")

// errTxnCoordinatorMoved is the outcome of a call whose records were
// acknowledged after the coordinator that wrote them was dropped, or after
// their partition was unloaded or loaded again: the state they came from is
// gone, and the coordinator now serving them was replayed from a log that
// may lack them. As Kafka's TransactionStateManager answers an append whose
// coordinator epoch changed meanwhile, the replies are NOT_COORDINATOR and
// the markers are not sent (the current coordinator sends those of the
// transactions its log shows prepared).
var errTxnCoordinatorMoved = errors.New("the transaction coordinator was reloaded before the write was acknowledged")

// call runs f under the lock and carries out its effects in order: f's
// records are appended; once they are acknowledged its replies are
// delivered, its markers written, and then done (if not nil) is called
// with the outcome: nil, or an error wrapping errTxnStateWrite (the append
// failed: the replies say COORDINATOR_NOT_AVAILABLE) or
// errTxnCoordinatorMoved. A call with no records of its own is answered
// only after every call that appended before it, so nothing is answered
// from state whose write is still in flight (Kafka answers
// CONCURRENT_TRANSACTIONS while a transition is pending); the in-process
// checks of produce (VerifyTxnPartition, AddTxnPartition) wait for done.
// All of it runs under the lock: before call returns on a single node,
// when replication completes in a cluster. call itself returns only an
// error loading the coordinator.
func (x *txns) call(f func(c *txn.Coordinator, now time.Time) ([]txn.Reply, []txn.Record, []txn.Marker), done func(error)) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := x.ensureLocked(); err != nil {
		return err
	}
	c := x.mu.c
	if c == nil {
		return errors.New("transaction coordinator dropped while loading")
	}
	replies, recs, markers := f(c, x.b.now())
	gens := x.loadGensLocked(recs)
	finish := func(err error) {
		switch {
		case err != nil:
			err = fmt.Errorf("%w: %v", errTxnStateWrite, err)
			for _, r := range replies {
				failTxnResponse(r.Resp, kerr.CoordinatorNotAvailable.Code)
			}
			if x.mu.c == c {
				x.b.log.Error("writing transaction state failed; reloading the coordinator", "err", err)
				x.dropLocked()
			}
		case x.staleLocked(c, gens):
			err = errTxnCoordinatorMoved
			for _, r := range replies {
				failTxnResponse(r.Resp, kerr.NotCoordinator.Code)
			}
		}
		for _, r := range replies {
			deliver(r.Token, r.Resp)
		}
		if err == nil {
			x.writeMarkersLocked(markers) // may drop the coordinator
		}
		if done != nil {
			done(err)
		}
		x.rearmLocked()
	}
	if len(recs) == 0 {
		x.afterInflightLocked(func() { finish(nil) })
		return nil
	}
	if x.mu.inflight == nil {
		x.mu.inflight = map[uint64]bool{}
	}
	x.mu.seq++
	seq := x.mu.seq
	x.mu.inflight[seq] = true
	gate := newAckGate(&x.mu)
	x.persistLocked(recs, gate.wrap(func(err error) {
		delete(x.mu.inflight, seq)
		finish(err)
		x.runWaitersLocked()
	}))
	gate.release()
	return nil
}

// loadGensLocked returns the loads of the partitions recs go to.
func (x *txns) loadGensLocked(recs []txn.Record) map[int32]uint64 {
	if len(recs) == 0 {
		return nil
	}
	n := int32(len(x.mu.topic.Partitions))
	gens := make(map[int32]uint64, 1)
	for _, r := range recs {
		p := txn.PartitionFor(r.TxnID, n)
		gens[p] = x.mu.loadGens[p]
	}
	return gens
}

// staleLocked reports whether the state a call of coordinator c ran on is
// gone: c was dropped, or a partition of its records was unloaded or loaded
// again since (gens).
func (x *txns) staleLocked(c *txn.Coordinator, gens map[int32]uint64) bool {
	if x.mu.c != c {
		return true
	}
	for p, g := range gens {
		if x.mu.loadGens[p] != g {
			return true
		}
	}
	return false
}

// afterInflightLocked runs f now if no append of a call is in flight, else
// once every call in flight now is acknowledged (runWaitersLocked).
func (x *txns) afterInflightLocked(f func()) {
	if len(x.mu.inflight) == 0 {
		f()
		return
	}
	x.mu.waiting = append(x.mu.waiting, txnWaiter{upTo: x.mu.seq, run: f})
}

// runWaitersLocked runs, in order, the waiting calls whose predecessors
// are all acknowledged.
func (x *txns) runWaitersLocked() {
	oldest := uint64(0) // the oldest call still in flight; 0: none
	for s := range x.mu.inflight {
		if oldest == 0 || s < oldest {
			oldest = s
		}
	}
	for len(x.mu.waiting) > 0 {
		w := x.mu.waiting[0]
		if oldest != 0 && oldest <= w.upTo {
			return
		}
		x.mu.waiting = x.mu.waiting[1:]
		w.run()
	}
}

// persistLocked appends records to their transactional ids' partitions and
// calls done with the outcome once they are acknowledged.
func (x *txns) persistLocked(recs []txn.Record, done func(error)) {
	gr := make([]group.Record, len(recs))
	for i, r := range recs {
		gr[i] = group.Record{Group: r.TxnID, Key: r.Key, Value: r.Value}
	}
	appendInternal(x.b.rm, x.mu.topic, x.b.now(), gr, txn.PartitionFor, done)
}

// writeMarkersLocked hands markers to the cluster's marker sender
// (txn_marker_sender.go), which completes each transaction when all its
// partitions acknowledged. On a single node it writes each marker to all
// its partitions itself and completes the transactions whose markers are
// all written: there the acknowledgements arrive before AppendMarker
// returns, so the outcome is known after the loop.
func (x *txns) writeMarkersLocked(markers []txn.Marker) {
	if x.sender != nil {
		x.sender.enqueue(markers)
		return
	}
	now := x.b.now()
	for _, m := range markers {
		ct := records.ControlAbort
		if m.Commit {
			ct = records.ControlCommit
		}
		var left []txn.TopicPartition
		for _, tp := range m.Partitions {
			p := x.b.rm.PartitionOf(tp.Topic, tp.Partition)
			if p == nil {
				continue // deleted: nothing to mark
			}
			x.b.rm.AppendMarker(p, m.ProducerID, m.ProducerEpoch, ct, m.CoordinatorEpoch, now.UnixMilli(), func(err error) {
				if err != nil {
					x.b.log.Error("writing transaction marker failed; will retry", "topic", tp.Topic, "partition", tp.Partition, "transactional_id", m.TxnID, "err", err)
					left = append(left, tp)
					return
				}
				if tp.Topic == offsetsTopic {
					x.b.groups.completeTxnOffsets(m.ProducerID, tp.Partition, m.Commit)
				}
			})
		}
		if len(left) > 0 {
			m.Partitions = left
			x.mu.unwritten = append(x.mu.unwritten, m)
			continue
		}
		x.completeLocked(now, m)
		if x.mu.c == nil {
			return // dropped: the reload finishes the rest
		}
	}
}

// completeLocked completes m's transaction, whose markers every partition
// has: MarkersWritten, then its CompleteCommit/CompleteAbort record. A
// failed write of that record drops the coordinator (the reload sends the
// markers again and completes the transaction then).
func (x *txns) completeLocked(now time.Time, m txn.Marker) {
	recs, err := x.mu.c.MarkersWritten(now, m.TxnID, m.ProducerID, m.ProducerEpoch)
	if err != nil {
		if !errors.Is(err, txn.ErrNoPendingMarkers) {
			x.b.log.Warn("completing transaction", "transactional_id", m.TxnID, "err", err)
		}
		return
	}
	gate := newAckGate(&x.mu)
	c := x.mu.c
	x.persistLocked(recs, gate.wrap(func(err error) {
		if err != nil && x.mu.c == c {
			x.b.log.Error("writing transaction completion failed; reloading the coordinator", "transactional_id", m.TxnID, "err", err)
			x.dropLocked()
			x.rearmLocked()
		}
	}))
	gate.release()
}

// markersDone is the marker sender's completion: every partition of m
// acknowledged its marker. It runs on the sender's goroutine with no lock
// held.
func (x *txns) markersDone(m txn.Marker) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.mu.c == nil || x.mu.closed {
		return // the reload sends the markers of prepared transactions again
	}
	x.completeLocked(x.b.now(), m)
}

// rearmLocked schedules the next tick: at the coordinator's next deadline,
// within markerRetry while markers wait for a retry, and within reloadRetry
// when the coordinator was dropped (the tick's call loads it again).
func (x *txns) rearmLocked() {
	now := x.b.now()
	if x.mu.closed {
		return
	}
	if x.mu.c == nil {
		rearm(&x.mu.timer, now, now.Add(reloadRetry), x.tick)
		return
	}
	next := x.mu.c.NextDeadline()
	if len(x.mu.unwritten) > 0 {
		next = earliest(next, now.Add(markerRetry))
	}
	rearm(&x.mu.timer, now, next, x.tick)
}

func (x *txns) tick() {
	defer x.b.recoverTimer("transaction coordinator tick", func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.dropLocked()
		x.rearmLocked()
	})
	err := x.call(func(c *txn.Coordinator, now time.Time) ([]txn.Reply, []txn.Record, []txn.Marker) {
		retry := x.mu.unwritten
		x.mu.unwritten = nil
		recs, markers := c.Tick(now)
		return nil, recs, append(retry, markers...)
	}, nil)
	if err != nil {
		// The coordinator could not be loaded: try again later.
		x.b.log.Warn("transaction coordinator tick skipped; retrying", "err", err)
		x.mu.Lock()
		x.rearmLocked()
		x.mu.Unlock()
	}
}

// TxnRequest hands a transaction API request to the coordinator; the answer
// arrives on tok. A failed write of transaction state is answered on tok, not
// returned.
func (h *Host) TxnRequest(client group.Client, req kmsg.Request, tok Token) error {
	var handleErr error
	err := h.txns.call(func(c *txn.Coordinator, now time.Time) ([]txn.Reply, []txn.Record, []txn.Marker) {
		r, recs, m, err := c.Handle(now, tok, client, req)
		handleErr = err
		return r, recs, m
	}, nil)
	if err == nil {
		err = handleErr
	}
	return err
}

// VerifyTxnPartition asks the coordinator whether a transactional produce's
// partition was added to the producer's open transaction (KIP-890 part 1
// verification, done in-process). It returns 0 or the Kafka error code.
func (h *Host) VerifyTxnPartition(txnID string, producerID int64, epoch int16, topic string, partition int32) int16 {
	if broker, ok := h.txnCoordinatorElsewhere(txnID); ok {
		return h.remoteTxnPartition(broker, txnID, producerID, epoch, topic, partition, true) // txn_remote.go
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = txnID, producerID, epoch, true
	tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{partition}}}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tr}
	tok := make(Token, 1)
	if code := h.txns.callAndWait(func(c *txn.Coordinator, now time.Time) ([]txn.Reply, []txn.Record, []txn.Marker) {
		r, recs, m, _ := c.Handle(now, tok, group.Client{}, req)
		return r, recs, m
	}); code != 0 {
		return code
	}
	resp, ok := (<-tok).(*kmsg.AddPartitionsToTxnResponse)
	if !ok {
		return kerr.UnknownServerError.Code
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode
	}
	for _, t := range resp.Transactions {
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				if p.ErrorCode != 0 {
					return p.ErrorCode
				}
			}
		}
	}
	return 0
}

// AddTxnPartition adds a transactional produce's partition to the
// producer's open transaction (Produce v12+, KIP-890 part 2) and persists
// that before the batch is appended. It returns 0 or the Kafka error code.
func (h *Host) AddTxnPartition(txnID string, producerID int64, epoch int16, topic string, partition int32) int16 {
	if broker, ok := h.txnCoordinatorElsewhere(txnID); ok {
		return h.remoteTxnPartition(broker, txnID, producerID, epoch, topic, partition, false) // txn_remote.go
	}
	var code int16
	if failed := h.txns.callAndWait(func(c *txn.Coordinator, now time.Time) ([]txn.Reply, []txn.Record, []txn.Marker) {
		var recs []txn.Record
		code, recs = c.PartitionsAddedByProduce(now, txnID, producerID, epoch, []txn.TopicPartition{{Topic: topic, Partition: partition}})
		return nil, recs, nil
	}); failed != 0 {
		return failed
	}
	return code
}

// callAndWait is call for the in-process checks of produce: it returns
// once the call's records (and those of every call before it) are
// acknowledged, 0 if they were, else the produce error to answer with
// (retriable: NOT_ENOUGH_REPLICAS, as produceCodeOfTxnCheck). The batch
// must not be appended before: a partition added to the transaction by a
// record that is then lost would take the batch out of the transaction's
// markers, and the next transaction's marker would decide it.
func (x *txns) callAndWait(f func(c *txn.Coordinator, now time.Time) ([]txn.Reply, []txn.Record, []txn.Marker)) int16 {
	outcome := make(chan error, 1)
	if err := x.call(f, func(err error) { outcome <- err }); err != nil {
		return produceCodeOfTxnCheck(kerr.CoordinatorNotAvailable.Code)
	}
	timer := time.NewTimer(txnCheckTimeout)
	defer timer.Stop()
	select {
	case err := <-outcome:
		if err != nil {
			return produceCodeOfTxnCheck(kerr.CoordinatorNotAvailable.Code)
		}
		return 0
	case <-timer.C:
		return produceCodeOfTxnCheck(kerr.RequestTimedOut.Code)
	case <-x.b.closing:
		return produceCodeOfTxnCheck(kerr.CoordinatorNotAvailable.Code)
	}
}

// failTxnResponse sets code on a transaction response whose write failed.
func failTxnResponse(resp kmsg.Response, code int16) {
	switch r := resp.(type) {
	case *kmsg.InitProducerIDResponse:
		r.ErrorCode, r.ProducerID, r.ProducerEpoch = code, -1, -1
	case *kmsg.EndTxnResponse:
		r.ErrorCode = code
	case *kmsg.AddOffsetsToTxnResponse:
		r.ErrorCode = code
	case *kmsg.AddPartitionsToTxnResponse:
		r.ErrorCode = code
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
		for i := range r.Transactions {
			for j := range r.Transactions[i].Topics {
				for k := range r.Transactions[i].Topics[j].Partitions {
					r.Transactions[i].Topics[j].Partitions[k].ErrorCode = code
				}
			}
		}
	}
}
