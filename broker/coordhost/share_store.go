package coordhost

// The share coordinator of a cluster (KIP-932's split): the store of
// persisted share-partition state on the leaders of __share_group_state's
// partitions. A share-partition's leader holds its in-flight records and
// reads and writes their persisted form here, at the leader of partition
// share.StatePartitionFor(share.CoordinatorKey(group, tp), n) of
// __share_group_state (n: that topic's partition count), directly when
// that is this broker and otherwise through the inter-broker RPCs
// (broker/api/share_state.go), as Kafka's ShareCoordinatorService.
//
// For each partition of __share_group_state this broker leads, the store
// holds the last acknowledged Snapshot of every key, replayed from the
// partition's log (to the log end, as the transaction coordinator does:
// a new leader's HW may lag what its ISR acknowledged) when the leadership
// is gained and forgotten when it is lost. A partition is loaded on its own
// goroutine; requests meanwhile answer COORDINATOR_LOAD_IN_PROGRESS, and
// requests for a partition this broker does not lead NOT_COORDINATOR. On a
// single node nothing calls leadershipChanged, so nothing is loaded and
// every call answers NOT_COORDINATOR: there the share host writes
// __share_group_state itself (share_groups.go).
//
// Writes (ShareStateWrite, ShareStateInitialize, ShareStateDelete) are
// queued per partition and appended by one pump at a time, one batch of
// queued writes per append, each write checked against the state the
// writes before it leave: so writes to one key are applied in the order
// they were accepted, and an acknowledgement that arrives late (in a
// cluster, once replicated, on another goroutine) can never leave an older
// value in memory. The in-memory state changes only when its append is
// acknowledged; reads see acknowledged state only.
//
// Lock order: shareStore.mu is a leaf. Nothing is taken while it is held
// (appends, the replica manager and callbacks run after it is released),
// so a caller may hold any lock of its own (ShareHost.mu, the partition
// leader's) when it calls in, and every done runs with none of the
// store's locks held.

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// maxStateBatchBytes bounds the values one append of queued writes carries
// (at least one write is always taken).
const maxStateBatchBytes = 1 << 20

// shareStore is the share coordinator's state store (see the file comment).
type shareStore struct {
	b *Host
	// loads are the load goroutines running; close waits for them.
	loads sync.WaitGroup

	mu struct {
		sync.Mutex
		closed bool
		// n is the partition count of __share_group_state, as of the last
		// partition gained: which partition holds a key.
		n int32
		// parts are the partitions this broker leads, loading or loaded.
		parts map[int32]*statePart
	}
}

// shareKey names one share-partition of one group.
type shareKey struct {
	group string
	tp    share.TopicPartition
}

// statePart is one partition of __share_group_state this broker leads.
// Every field is guarded by shareStore.mu. The partition is current while
// shareStore.mu.parts holds this pointer; after it is unloaded, its
// in-flight append still completes but changes nothing.
type statePart struct {
	index int32
	p     *replica.Partition
	// loading is true until the replay of the log finished; states and
	// epochs are nil until then.
	loading bool
	// states is the last acknowledged snapshot of every key with state.
	states map[shareKey]share.Snapshot
	// epochs is the highest leader epoch seen of a key: its snapshot's or
	// that of a read that carried a higher one (Kafka's leaderEpochMap: a
	// new share-partition leader reads first, and from then on the old
	// one's writes are fenced). Invariant: epochs[k] >= states[k].LeaderEpoch.
	// A read's epoch is kept in memory only (Kafka 4 writes a record).
	epochs map[shareKey]int32
	// queue are the writes accepted and not yet taken by the pump, in
	// arrival order.
	queue []*stateOp
	// inflight is set while an append of this partition is not yet
	// acknowledged; pumping while a goroutine runs pump. Invariant: at most
	// one append in flight.
	inflight, pumping bool
	// appending is the batch of writes of the append in flight (nil when
	// none is), so that a read can tell that a key has a write under way.
	appending []taken
}

// writesPending reports whether a write of k was accepted and not yet
// answered: queued, or in the append in flight.
func (pp *statePart) writesPending(k shareKey) bool {
	for _, op := range pp.queue {
		if op.key == k {
			return true
		}
	}
	for _, t := range pp.appending {
		if t.op.key == k {
			return true
		}
	}
	return false
}

// stateOp is one queued write of a key. eval computes the key's next
// state from the state the writes before it leave (cur, found; epoch,
// hasEpoch: the key's highest leader epoch): the snapshot to write, nil
// for a tombstone, skip to append nothing, or an error code.
type stateOp struct {
	key  shareKey
	eval func(cur share.Snapshot, found bool, epoch int32, hasEpoch bool, nowMs int64) (next *share.Snapshot, skip bool, code int16)
	done func(code int16)
}

// stateView is a key's state as the writes taken so far leave it.
type stateView struct {
	snap            share.Snapshot
	found, hasEpoch bool
	epoch           int32
}

// taken is a write in the batch being appended, with the state it leaves.
type taken struct {
	op   *stateOp
	next *share.Snapshot // nil: tombstone
	// skip: nothing was appended (a delete of a key with no state).
	skip bool
}

func (s *shareStore) init(b *Host) {
	s.b = b
	s.mu.parts = map[int32]*statePart{}
}

// close refuses further calls, answers the queued writes
// COORDINATOR_NOT_AVAILABLE (the ones in flight answer when their append
// does) and waits for the loads under way.
func (s *shareStore) close() {
	s.mu.Lock()
	s.mu.closed = true
	var queued []*stateOp
	for _, pp := range s.mu.parts {
		queued = append(queued, pp.queue...)
		pp.queue = nil
	}
	s.mu.Unlock()
	for _, op := range queued {
		op.done(kerr.CoordinatorNotAvailable.Code)
	}
	s.loads.Wait()
}

// leadershipChanged loads (leader) or unloads __share_group_state partition
// part, as Kafka's ShareCoordinatorService.onElection/onResignation. A gained
// partition is replayed on its own goroutine (COORDINATOR_LOAD_IN_PROGRESS
// meanwhile); a lost one forgets its keys and answers its queued writes
// NOT_COORDINATOR. A partition already loading or loaded is left alone.
func (s *shareStore) leadershipChanged(part int32, leader bool) {
	var p *replica.Partition
	if leader {
		if p = s.b.rm.PartitionOf(share.StateTopic, part); p == nil {
			return
		}
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return
	}
	old := s.mu.parts[part]
	if leader {
		if old != nil {
			s.mu.Unlock()
			return
		}
		pp := &statePart{index: part, p: p, loading: true}
		s.mu.parts[part] = pp
		s.mu.n = int32(len(p.Topic.Partitions))
		s.loads.Add(1)
		s.mu.Unlock()
		go s.load(pp)
		return
	}
	if old == nil {
		s.mu.Unlock()
		return
	}
	delete(s.mu.parts, part)
	queued := old.queue
	old.queue = nil
	s.mu.Unlock()
	for _, op := range queued {
		op.done(kerr.NotCoordinator.Code)
	}
	s.b.log.Info("unloaded share coordinator partition", "partition", part, "writes_refused", len(queued))
}

// load replays pp's log and installs its state if pp is still current. A
// failed replay is retried after reloadRetry while pp stays current.
func (s *shareStore) load(pp *statePart) {
	defer s.loads.Done()
	for {
		start := time.Now()
		states, n, err := s.replay(pp.p)
		s.mu.Lock()
		if s.mu.closed || s.mu.parts[pp.index] != pp {
			s.mu.Unlock()
			return
		}
		if err == nil {
			pp.states = states
			pp.epochs = make(map[shareKey]int32, len(states))
			for k, v := range states {
				pp.epochs[k] = v.LeaderEpoch
			}
			pp.loading = false
			keys := len(states)
			s.mu.Unlock()
			s.b.log.Info("loaded share coordinator partition", "partition", pp.index, "records", n, "keys", keys,
				"took", time.Since(start).Round(time.Millisecond).String())
			return
		}
		s.mu.Unlock()
		s.b.log.Error("loading share coordinator partition failed; retrying", "partition", pp.index, "err", err)
		select {
		case <-s.b.closing:
			return
		case <-time.After(reloadRetry):
		}
	}
}

// replay reads partition p of __share_group_state to its log end and
// returns the last snapshot of every key (a tombstone deletes it) and the
// number of records read. As share.Coordinator.ReplayState, only the last
// value of each key is decoded; ShareUpdate records (which kbroker never
// writes) and undecodable records are skipped with a warning.
func (s *shareStore) replay(p *replica.Partition) (map[shareKey]share.Snapshot, int, error) {
	last := map[shareKey][]byte{}
	n := 0
	err := replica.ReplayPartition(p, func(h records.Header, recs []records.Record) {
		if h.IsControl() {
			return
		}
		for _, r := range recs {
			n++
			snap, group, tp, err := share.DecodeStateKey(r.Key)
			if err != nil {
				s.b.log.Warn("skipping bad "+share.StateTopic+" record", "partition", p.Index, "err", err)
				continue
			}
			if !snap {
				continue
			}
			var v []byte
			if r.Value != nil {
				v = append([]byte{}, r.Value...) // the replay's buffer is reused
			}
			last[shareKey{group, tp}] = v
		}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("loading %s-%d: %w", share.StateTopic, p.Index, err)
	}
	states := make(map[shareKey]share.Snapshot, len(last))
	for k, v := range last {
		if v == nil {
			continue
		}
		snap, err := share.DecodeSnapshot(v)
		if err != nil {
			s.b.log.Warn("skipping bad "+share.StateTopic+" snapshot", "partition", p.Index, "key", share.CoordinatorKey(k.group, k.tp), "err", err)
			continue
		}
		states[k] = snap
	}
	return states, n, nil
}

// partLocked is the loaded partition holding k, or the code to answer:
// NOT_COORDINATOR when this broker does not lead it, COORDINATOR_LOAD_IN_PROGRESS
// while it loads, COORDINATOR_NOT_AVAILABLE once the broker shuts down.
func (s *shareStore) partLocked(k shareKey) (*statePart, int16) {
	if s.mu.closed {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	if s.mu.n <= 0 {
		return nil, kerr.NotCoordinator.Code
	}
	pp := s.mu.parts[share.StatePartitionFor(share.CoordinatorKey(k.group, k.tp), s.mu.n)]
	switch {
	case pp == nil:
		return nil, kerr.NotCoordinator.Code
	case pp.loading:
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	return pp, 0
}

// enqueue queues op at its key's partition and runs the pump if none runs;
// a key whose partition is not served here answers at once.
func (s *shareStore) enqueue(op *stateOp) {
	s.mu.Lock()
	pp, code := s.partLocked(op.key)
	if code != 0 {
		s.mu.Unlock()
		op.done(code)
		return
	}
	pp.queue = append(pp.queue, op)
	run := !pp.pumping && !pp.inflight
	if run {
		pp.pumping = true
	}
	s.mu.Unlock()
	if run {
		s.pump(pp)
	}
}

// pump appends pp's queued writes, one batch per append, while no append
// is in flight. The caller set pp.pumping. On a single node (and when the
// append fails at once) the acknowledgement arrives inside the append call
// and the loop goes on; otherwise it ends, and the acknowledgement (acked)
// starts the pump again if writes are queued.
func (s *shareStore) pump(pp *statePart) {
	for {
		s.mu.Lock()
		if s.mu.closed || s.mu.parts[pp.index] != pp || pp.inflight || len(pp.queue) == 0 {
			pp.pumping = false
			s.mu.Unlock()
			return
		}
		batch, refused, recs := s.takeLocked(pp)
		if len(recs) > 0 {
			pp.inflight, pp.appending = true, batch
		}
		s.mu.Unlock()
		for _, r := range refused {
			r.op.done(r.code)
		}
		if len(recs) == 0 {
			// Nothing to write: answer the writes taken (deletes of keys
			// with no state) and go on.
			for _, t := range batch {
				t.op.done(0)
			}
			continue
		}
		s.appendBatch(pp, recs, func(err error) { s.acked(pp, batch, err) })
	}
}

// refusal is a queued write refused by its checks.
type refusal struct {
	op   *stateOp
	code int16
}

// takeLocked takes the writes at the head of pp's queue (up to
// maxStateBatchBytes of values) and evaluates each against the state the
// ones before it leave. It returns the writes to append with their
// records, and the refused writes with their codes.
func (s *shareStore) takeLocked(pp *statePart) (batch []taken, refused []refusal, recs []records.Record) {
	nowMs := s.b.now().UnixMilli()
	view := map[shareKey]stateView{}
	size := 0
	i := 0
	for ; i < len(pp.queue) && (size < maxStateBatchBytes || i == 0); i++ {
		op := pp.queue[i]
		v, ok := view[op.key]
		if !ok {
			v.snap, v.found = pp.states[op.key]
			v.epoch, v.hasEpoch = pp.epochs[op.key]
		}
		next, skip, code := op.eval(v.snap, v.found, v.epoch, v.hasEpoch, nowMs)
		switch {
		case code != 0:
			refused = append(refused, refusal{op, code})
			continue
		case skip:
			batch = append(batch, taken{op: op, skip: true})
			continue
		}
		var value []byte
		if next != nil {
			value = share.EncodeSnapshot(*next)
			v.snap, v.found = *next, true
			if !v.hasEpoch || next.LeaderEpoch > v.epoch {
				v.epoch, v.hasEpoch = next.LeaderEpoch, true
			}
		} else {
			v = stateView{}
		}
		view[op.key] = v
		size += len(value)
		recs = append(recs, records.Record{OffsetDelta: int32(len(recs)), Key: share.StateKey(op.key.group, op.key.tp), Value: value})
		batch = append(batch, taken{op: op, next: next})
	}
	pp.queue = append([]*stateOp(nil), pp.queue[i:]...)
	return batch, refused, recs
}

// appendBatch appends recs to pp's partition; done gets the outcome once
// acknowledged (on a single node before appendBatch returns).
func (s *shareStore) appendBatch(pp *statePart, recs []records.Record, done func(error)) {
	ms := s.b.now().UnixMilli()
	batch, err := records.Build(records.BatchSpec{FirstTimestamp: ms, MaxTimestamp: ms, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs)
	if err != nil {
		done(err)
		return
	}
	s.b.rm.AppendInternal(pp.p, batch, done)
}

// acked completes an append of pp's writes: if it succeeded and pp is still
// current, the writes' states become the keys' state, in order; then every
// write is answered, and the pump restarted if writes wait and none runs.
func (s *shareStore) acked(pp *statePart, batch []taken, err error) {
	s.mu.Lock()
	current := !s.mu.closed && s.mu.parts[pp.index] == pp
	var code int16
	switch {
	case err != nil:
		code = appendErrorCode(err)
	case !current:
		code = kerr.NotCoordinator.Code
	}
	if code == 0 {
		for _, t := range batch {
			switch {
			case t.skip:
				continue
			case t.next == nil:
				delete(pp.states, t.op.key)
				delete(pp.epochs, t.op.key)
				continue
			}
			pp.states[t.op.key] = *t.next
			if e, ok := pp.epochs[t.op.key]; !ok || t.next.LeaderEpoch > e {
				pp.epochs[t.op.key] = t.next.LeaderEpoch
			}
		}
	}
	pp.inflight, pp.appending = false, nil
	run := current && !pp.pumping && len(pp.queue) > 0
	if run {
		pp.pumping = true
	}
	s.mu.Unlock()
	if err != nil {
		s.b.log.Warn("writing share-group state failed", "partition", pp.index, "writes", len(batch), "err", err)
	}
	for _, t := range batch {
		t.op.done(code)
	}
	if run {
		s.pump(pp)
	}
}

// appendErrorCode is the code a write whose append failed answers, as
// Kafka's coordinators map append errors: a lost leadership or a disk
// failure NOT_COORDINATOR (the leader finds the new coordinator), a
// timeout or too few replicas COORDINATOR_NOT_AVAILABLE (retriable),
// anything else UNKNOWN_SERVER_ERROR.
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorNotAvailable.Code
	}
	switch ke {
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator.Code
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable.Code
	}
	return kerr.UnknownServerError.Code
}

// cloneSnapshot is s with its own batches.
func cloneSnapshot(s share.Snapshot) share.Snapshot {
	s.Batches = append([]share.StateBatch(nil), s.Batches...)
	return s
}

// ShareStateRead returns the persisted state of group's share-partition tp
// (Kafka's ReadShareGroupState at the share coordinator). Codes:
// NOT_COORDINATOR when this broker does not lead tp's __share_group_state
// partition, COORDINATOR_LOAD_IN_PROGRESS while that partition loads,
// FENCED_LEADER_EPOCH when leaderEpoch is below the highest leader epoch
// the key has seen; otherwise 0, with found=false when the key has no
// state. A leaderEpoch above the key's becomes its leader epoch (in memory,
// as Kafka 3.9's readState): writes of an older leader are fenced from
// then on. leaderEpoch -1 reads without fencing or raising (kbroker's
// admin paths; Kafka would fence it). The snapshot is the last one whose
// append was acknowledged, never a write still in flight. A read that
// would raise the key's leader epoch while a write of the key is queued
// or being appended answers COORDINATOR_LOAD_IN_PROGRESS and raises
// nothing (the new leader retries): otherwise it would return the state
// without that write, which then succeeds all the same, and the new
// leader would deliver again records whose acknowledgement the old one
// confirmed (Kafka orders the read after those writes: its read appends
// the new leader epoch through the same queue).
func (h *Host) ShareStateRead(group string, tp share.TopicPartition, leaderEpoch int32) (s share.Snapshot, found bool, code int16) {
	st := &h.shareStore
	k := shareKey{group, tp}
	st.mu.Lock()
	defer st.mu.Unlock()
	pp, code := st.partLocked(k)
	if code != 0 {
		return share.Snapshot{}, false, code
	}
	if leaderEpoch != -1 {
		e, ok := pp.epochs[k]
		if ok && leaderEpoch < e {
			return share.Snapshot{}, false, kerr.FencedLeaderEpoch.Code
		}
		if !ok || leaderEpoch > e {
			if pp.writesPending(k) {
				return share.Snapshot{}, false, kerr.CoordinatorLoadInProgress.Code
			}
			pp.epochs[k] = leaderEpoch
		}
	}
	snap, found := pp.states[k]
	if !found {
		return share.Snapshot{}, false, 0
	}
	return cloneSnapshot(snap), true, 0
}

// ShareStateWrite replaces the state of group's share-partition tp with s
// (Kafka's WriteShareGroupState; kbroker's leaders send the whole state, so
// replacing it is Kafka's merge of a full state). As in Kafka,
// s.StateEpoch and s.StartOffset of -1 keep the stored values and
// s.LeaderEpoch -1 keeps the key's leader epoch without being fenced.
// Then s must Validate (else INVALID_REQUEST); FENCED_LEADER_EPOCH
// when s.LeaderEpoch is below the key's highest leader epoch,
// FENCED_STATE_EPOCH when s.StateEpoch is below the stored one. The
// snapshot written has SnapshotEpoch stored+1 (0 for a new key), the stored
// CreateTimestamp (now for a new key) and WriteTimestamp now; it is
// appended as a ShareSnapshot record and becomes the key's state once the
// append is acknowledged, then done(0). Codes of a key not served here as
// ShareStateRead's; a leadership lost before the acknowledgement
// NOT_COORDINATOR; a failed append appendErrorCode's. Writes to one key
// are checked and applied in the order of their calls. done runs exactly
// once, on any goroutine (possibly before ShareStateWrite returns), with
// none of the store's locks held.
func (h *Host) ShareStateWrite(group string, tp share.TopicPartition, s share.Snapshot, done func(code int16)) {
	s = cloneSnapshot(s)
	h.shareStore.enqueue(&stateOp{key: shareKey{group, tp}, done: done,
		eval: func(cur share.Snapshot, found bool, epoch int32, hasEpoch bool, nowMs int64) (*share.Snapshot, bool, int16) {
			next := s
			if next.LeaderEpoch == -1 && hasEpoch {
				next.LeaderEpoch = epoch // never fenced
			}
			if found && next.StateEpoch == -1 {
				next.StateEpoch = cur.StateEpoch
			}
			if found && next.StartOffset == -1 {
				next.StartOffset = cur.StartOffset
			}
			if next.Validate() != nil {
				return nil, false, kerr.InvalidRequest.Code
			}
			if hasEpoch && next.LeaderEpoch < epoch {
				return nil, false, kerr.FencedLeaderEpoch.Code
			}
			if found && next.StateEpoch < cur.StateEpoch {
				return nil, false, kerr.FencedStateEpoch.Code
			}
			stamp(&next, cur, found, nowMs)
			return &next, false, 0
		}})
}

// stamp sets next's snapshot epoch and timestamps from the stored state.
func stamp(next *share.Snapshot, cur share.Snapshot, found bool, nowMs int64) {
	next.SnapshotEpoch, next.CreateTimestamp, next.WriteTimestamp = 0, nowMs, nowMs
	if found {
		next.SnapshotEpoch, next.CreateTimestamp = cur.SnapshotEpoch+1, cur.CreateTimestamp
	}
}

// ShareStateInitialize sets the state of group's share-partition tp to
// StateEpoch stateEpoch and StartOffset startOffset with no batches
// (Kafka's InitializeShareGroupState; an admin reset of a share group's
// offsets bumps the state epoch, which fences the writes of the leaders
// that still hold the old state). FENCED_STATE_EPOCH when stateEpoch is
// below the stored one. startOffset -1 keeps the stored start offset (as
// Kafka); for a key with no state it is INVALID_REQUEST, as is any other
// negative offset: a kbroker snapshot always has a start offset. The
// leader epoch is kept. Otherwise as ShareStateWrite.
func (h *Host) ShareStateInitialize(group string, tp share.TopicPartition, stateEpoch int32, startOffset int64, done func(code int16)) {
	h.shareStore.enqueue(&stateOp{key: shareKey{group, tp}, done: done,
		eval: func(cur share.Snapshot, found bool, epoch int32, hasEpoch bool, nowMs int64) (*share.Snapshot, bool, int16) {
			next := share.Snapshot{StateEpoch: stateEpoch, StartOffset: startOffset, LeaderEpoch: -1}
			if found {
				next.LeaderEpoch = cur.LeaderEpoch
				if startOffset == -1 {
					next.StartOffset = cur.StartOffset
				}
			}
			if hasEpoch {
				next.LeaderEpoch = max(next.LeaderEpoch, epoch)
			}
			if next.StartOffset < 0 {
				return nil, false, kerr.InvalidRequest.Code
			}
			if found && stateEpoch < cur.StateEpoch {
				return nil, false, kerr.FencedStateEpoch.Code
			}
			stamp(&next, cur, found, nowMs)
			return &next, false, 0
		}})
}

// ShareStateDelete deletes the state of group's share-partition tp
// (Kafka's DeleteShareGroupState): a tombstone is appended and, once
// acknowledged, the key and its leader epoch are forgotten; done(0). A key
// with no state appends nothing and answers 0 too. Otherwise as
// ShareStateWrite.
func (h *Host) ShareStateDelete(group string, tp share.TopicPartition, done func(code int16)) {
	h.shareStore.enqueue(&stateOp{key: shareKey{group, tp}, done: done,
		eval: func(_ share.Snapshot, found bool, _ int32, _ bool, _ int64) (*share.Snapshot, bool, int16) {
			return nil, !found, 0
		}})
}

// ShareStateSummary summarizes the persisted state of group's
// share-partition tp (Kafka's ReadShareGroupStateSummary, which the group
// coordinator uses for DescribeShareGroupOffsets and lag): its state epoch,
// its start offset and the number of offsets at or above it that are
// finished (Acknowledged or Archived, ShareFinishedOffsets); found=false
// when the key has no state. As in Kafka the summary fences nothing:
// leaderEpoch is not checked nor kept. Codes of a key not served here as
// ShareStateRead's.
func (h *Host) ShareStateSummary(group string, tp share.TopicPartition, leaderEpoch int32) (stateEpoch int32, startOffset int64, finished int64, found bool, code int16) {
	_ = leaderEpoch
	s, found, code := h.ShareStateRead(group, tp, -1)
	if code != 0 || !found {
		return 0, 0, 0, false, code
	}
	return s.StateEpoch, s.StartOffset, ShareFinishedOffsets(s), true, 0
}

// ShareFinishedOffsets is the number of offsets at or above s.StartOffset
// whose delivery is complete (Acknowledged or Archived): Kafka's
// DeliveryCompleteCount.
func ShareFinishedOffsets(s share.Snapshot) int64 {
	var n int64
	for _, b := range s.Batches {
		if b.State != share.PersistAcknowledged && b.State != share.PersistArchived {
			continue
		}
		if first := max(b.First, s.StartOffset); b.Last >= first {
			n += b.Last - first + 1
		}
	}
	return n
}

// ShareStateKeys returns the share-partitions of group with state in the
// __share_group_state partitions this broker leads and has loaded (for
// DeleteGroups and DescribeShareGroupOffsets across the cluster, which ask
// every coordinator), sorted by topic id and partition. The other
// partitions' keys are at their leaders.
func (h *Host) ShareStateKeys(group string) []share.TopicPartition {
	st := &h.shareStore
	st.mu.Lock()
	var out []share.TopicPartition
	for _, pp := range st.mu.parts {
		for k := range pp.states {
			if k.group == group {
				out = append(out, k.tp)
			}
		}
	}
	st.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if x, y := string(a.TopicID[:]), string(b.TopicID[:]); x != y {
			return x < y
		}
		return a.Partition < b.Partition
	})
	return out
}
