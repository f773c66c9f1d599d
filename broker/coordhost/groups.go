package coordhost

// The group coordinators' home in the broker. One group.Coordinator (classic
// protocol, and every group's committed offsets) and one consumer.Coordinator
// (KIP-848 membership) serve every group, since a single node leads every
// __consumer_offsets partition. Their state is that compacted topic, where
// group G's records go to partition abs(javaHashCode(G)) %
// offsets.topic.num.partitions; both replay every record and skip the other's
// key versions. The topic is created on first use, as Kafka does, and replayed
// at start-up. A group id belongs to one protocol at a time (consumer_groups.go).
//
// Requests are answered through tokens: each request handed to the
// coordinator carries a channel that receives exactly one response, possibly
// from a later call (a parked JoinGroup is answered when the rebalance
// completes). Records a call returns are appended before any of its replies
// is delivered, so an acknowledged commit is in the log.

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/coordinator/consumer"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsTopic is Kafka's internal topic of group state and committed offsets.
const offsetsTopic = "__consumer_offsets"

// groups owns the coordinator, its timer and its topic.
type groups struct {
	b *Host

	mu struct {
		sync.Mutex
		c     *group.Coordinator
		cc    *consumer.Coordinator
		topic *replica.Topic
		// pendingTxn holds transactional offset commits by producer id until
		// their transaction's marker is written (Kafka's pending offsets).
		pendingTxn map[int64][]pendingOffset
		// parked are the requests the classic coordinator holds without an
		// answer yet (a JoinGroup waiting for its rebalance, a follower's
		// SyncGroup waiting for the leader's), by token. When the
		// coordinator is dropped they are answered COORDINATOR_NOT_AVAILABLE
		// (dropLocked): the new coordinator does not know them, and their
		// connections would wait until shutdown.
		parked map[Token]kmsg.Request
		// loaded are the __consumer_offsets partitions whose groups the
		// coordinators hold: all of them on a single node, those this
		// broker leads in a cluster.
		loaded map[int32]bool
		// loadGen numbers the loads of partitions: loadGens holds, by
		// partition, the number of the load the coordinators' state of it
		// comes from. A call's outcome counts only if the coordinators and
		// the loads of its partitions are still the ones it ran with.
		loadGen  uint64
		loadGens map[int32]uint64
		// calls are the calls not answered yet, in call order: each is
		// answered once its records are acknowledged and every earlier
		// call of a partition it touches is answered (finishCallsLocked).
		calls []*groupCall
		// dropped holds the coordinators dropLocked dropped last, until
		// the next load gives the members it replays the deadlines these
		// had for them (the InheritTimers of each); the groups of
		// partitions whose leadership changed meanwhile are unloaded from
		// them, as they start afresh.
		// Invariant: dropped.classic == nil iff dropped.consumer == nil.
		dropped      coords
		droppedParts int32 // partitions of __consumer_offsets when dropped
		timer        *time.Timer
		closed       bool
	}
}

// groupCall is a call whose replies wait for its own acknowledgement and
// for the earlier calls of the partitions it touches: the consumer
// coordinator applies its state when it handles a call, so a reply built
// after an unacknowledged write may show what that write stores.
type groupCall struct {
	// parts are the __consumer_offsets partitions the call read or wrote;
	// nil: all of them.
	parts    map[int32]bool
	acked    bool
	err      error
	finished bool
	finish   func(error)
}

// overlaps reports whether two calls touch a common partition.
func (a *groupCall) overlaps(b *groupCall) bool {
	if a.parts == nil || b.parts == nil {
		return true
	}
	for p := range a.parts {
		if b.parts[p] {
			return true
		}
	}
	return false
}

func (h *Host) groupConfig() group.Config {
	gc := group.DefaultConfig()
	gc.GroupMinSessionTimeoutMs = h.cfg.GroupMinSessionTimeoutMs
	gc.GroupMaxSessionTimeoutMs = h.cfg.GroupMaxSessionTimeoutMs
	gc.GroupInitialRebalanceDelayMs = h.cfg.GroupInitialRebalanceDelayMs
	gc.GroupMaxSize = h.cfg.GroupMaxSize
	gc.OffsetsRetentionMs = h.cfg.OffsetsRetentionMs
	gc.OffsetsRetentionCheckIntervalMs = h.cfg.OffsetsRetentionCheckIntervalMs
	gc.OffsetMetadataMaxBytes = h.cfg.OffsetMetadataMaxBytes
	return gc
}

// loadGroups replays __consumer_offsets if it exists; called from New.
func (h *Host) loadGroups() error {
	if h.rm.TopicByName(offsetsTopic) == nil || h.cfg.Cluster.Enabled() {
		// In a cluster this broker leads no partition yet (until it
		// joins, its partitions still look single-node led): the
		// coordinators load when LeaderAndIsr makes it a leader, or on
		// first use. Loading now would keep what the local copy held
		// when the broker stopped, not what the next leader wrote.
		return nil
	}
	_, err := h.groups.ensure()
	return err
}

// ensure returns the loaded coordinator, creating __consumer_offsets first if needed.
func (g *groups) ensure() (*group.Coordinator, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ensureLocked()
}

// ensureLocked is ensure with g.mu held. Callers that go on to use the
// coordinator keep holding g.mu: a failed write in another call may drop it
// as soon as the lock is free.
func (g *groups) ensureLocked() (*group.Coordinator, error) {
	if g.mu.closed {
		return nil, errors.New("broker is shutting down")
	}
	if g.mu.c != nil {
		return g.mu.c, nil
	}
	b := g.b
	t, err := g.topicLocked()
	if err != nil {
		return nil, err
	}
	c, err := group.New(b.groupConfig())
	if err != nil {
		return nil, err
	}
	ccfg := b.consumerGroupConfig()
	ccfg.ClassicGroupHasMembers = c.HasMembers
	cc, err := consumer.New(ccfg, consumer.TopicsFunc(b.topicInfos))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	g.mu.c, g.mu.cc, g.mu.topic = c, cc, t
	g.mu.pendingTxn = map[int64][]pendingOffset{}
	g.mu.loaded = map[int32]bool{}
	n := 0
	for _, p := range t.Partitions {
		// In a cluster the coordinators hold the groups of the partitions
		// this broker leads; the others are loaded when it gains them
		// (leadershipChanged). Replaying a follower's copy would bring
		// back groups whose coordinator is elsewhere, and their timers
		// would write to partitions this broker cannot append to.
		if b.cfg.Cluster.Enabled() && !p.IsLeader() {
			continue
		}
		k, err := g.loadPartitionLocked(p)
		if err != nil {
			g.mu.c, g.mu.cc, g.mu.topic, g.mu.pendingTxn, g.mu.loaded = nil, nil, nil, nil, nil
			return nil, err
		}
		n += k
	}
	now := b.now()
	if g.mu.dropped.classic != nil {
		c.InheritTimers(g.mu.dropped.classic, now)
		cc.InheritTimers(g.mu.dropped.consumer, now)
		g.mu.dropped = coords{}
	}
	c.Loaded(now)
	cc.Loaded(now)
	g.rearmLocked()
	b.log.Info("loaded group coordinator", "records", n, "partitions", len(g.mu.loaded), "took", time.Since(start).Round(time.Millisecond).String())
	return c, nil
}

// topicLocked returns __consumer_offsets (coordinatorTopic).
func (g *groups) topicLocked() (*replica.Topic, error) {
	b := g.b
	return b.coordinatorTopic(offsetsTopic, b.cfg.OffsetsTopicNumPartitions, map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    fmt.Sprint(b.cfg.OffsetsTopicSegmentBytes),
	})
}

// coordinatorTopic returns a coordinator's internal topic: on a single
// node created on first use with partitions and configs; in a cluster the
// controller creates it (FindCoordinator asks for it with its replication
// factor) and this broker has it once LeaderAndIsr gave it a replica,
// else an error: it coordinates nothing of that topic yet.
func (h *Host) coordinatorTopic(name string, partitions int32, configs map[string]string) (*replica.Topic, error) {
	if h.cfg.Cluster.Enabled() {
		if t := h.rm.TopicByName(name); t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("%s has no replica on this broker yet", name)
	}
	t, err := h.rm.InternalTopic(name, partitions, configs)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	return t, nil
}

// loadPartitionLocked replays __consumer_offsets partition p into the
// coordinators and returns the number of records applied. Transactional
// offset commits wait in pendingTxn for their marker; those whose marker
// is in the log are applied or dropped as it says. The caller starts the
// timers of the members it restored (Loaded).
func (g *groups) loadPartitionLocked(p *replica.Partition) (int, error) {
	c, cc, log := g.mu.c, g.mu.cc, g.b.log
	n := 0
	apply := func(key, value []byte) {
		n++
		if err := c.Replay(key, value); err != nil {
			log.Warn("skipping bad __consumer_offsets record", "partition", p.Index, "err", err)
		}
		if err := cc.Replay(key, value); err != nil {
			log.Warn("skipping bad __consumer_offsets record", "partition", p.Index, "err", err)
		}
	}
	pending := map[int64][]pendingOffset{}
	err := replica.ReplayPartition(p, func(h records.Header, recs []records.Record) {
		switch {
		case h.IsControl():
			commit := false
			if len(recs) == 1 {
				ct, err := records.ParseControlKey(recs[0].Key)
				commit = err == nil && ct == records.ControlCommit
			}
			if commit {
				for _, po := range pending[h.ProducerID] {
					apply(po.key, po.value)
				}
			}
			delete(pending, h.ProducerID)
		case h.IsTransactional():
			for _, r := range recs {
				var k kmsg.OffsetCommitKey
				_ = k.ReadFrom(r.Key)
				pending[h.ProducerID] = append(pending[h.ProducerID], pendingOffset{part: p.Index, group: k.Group, key: r.Key, value: r.Value})
			}
		default:
			for _, r := range recs {
				apply(r.Key, r.Value)
			}
		}
	})
	if err != nil {
		g.unloadPartitionLocked(p.Index, kerr.NotCoordinator.Code)
		return 0, fmt.Errorf("loading %s-%d: %w", offsetsTopic, p.Index, err)
	}
	for pid, pos := range pending {
		g.mu.pendingTxn[pid] = append(g.mu.pendingTxn[pid], pos...)
	}
	g.mu.loaded[p.Index] = true
	g.mu.loadGen++
	if g.mu.loadGens == nil {
		g.mu.loadGens = map[int32]uint64{}
	}
	g.mu.loadGens[p.Index] = g.mu.loadGen
	return n, nil
}

// unloadPartitionLocked forgets the groups of __consumer_offsets partition
// part and their pending transactional offsets, and answers the requests
// parked for them with code (Kafka answers NOT_COORDINATOR when it unloads
// a partition): their clients find the new coordinator and join there.
func (g *groups) unloadPartitionLocked(part int32, code int16) {
	n := int32(len(g.mu.topic.Partitions))
	in := func(id string) bool { return group.PartitionFor(id, n) == part }
	g.mu.c.Unload(part, n)
	g.mu.cc.Unload(in)
	for pid, pos := range g.mu.pendingTxn {
		var keep []pendingOffset
		for _, po := range pos {
			if po.part != part {
				keep = append(keep, po)
			}
		}
		if len(keep) == 0 {
			delete(g.mu.pendingTxn, pid)
		} else {
			g.mu.pendingTxn[pid] = keep
		}
	}
	for tok, req := range g.mu.parked {
		if id, ok := parkedGroup(req); ok && in(id) {
			g.answerParkedLocked(tok, req, code)
		}
	}
	delete(g.mu.loaded, part)
	delete(g.mu.loadGens, part)
}

// leadershipChanged loads (leader) or unloads the groups of
// __consumer_offsets partition part, as Kafka's coordinator does on
// election and resignation; the groups of other partitions, and the
// requests parked for them, are untouched. Coordinators not loaded yet load
// the partitions this broker then leads on first use.
func (g *groups) leadershipChanged(part int32, leader bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.dropped.classic != nil && g.mu.c == nil {
		if n := g.mu.droppedParts; part >= 0 && part < n {
			g.mu.dropped.classic.Unload(part, n)
			g.mu.dropped.consumer.Unload(func(id string) bool { return group.PartitionFor(id, n) == part })
		}
	}
	if g.mu.c == nil || g.mu.closed || part < 0 || int(part) >= len(g.mu.topic.Partitions) {
		return
	}
	switch {
	case leader:
		// A gain means this broker did not lead part just before: any
		// state still loaded for it is older than the log and is
		// replaced by a fresh replay.
		if g.mu.loaded[part] {
			g.unloadPartitionLocked(part, kerr.NotCoordinator.Code)
		}
		n, err := g.loadPartitionLocked(currentPartition(g.b.rm, g.mu.topic, part))
		if err != nil {
			g.b.log.Error("loading group coordinator partition failed; reloading the coordinator", "err", err)
			g.dropLocked()
			g.rearmLocked()
			return
		}
		now := g.b.now()
		g.mu.c.Loaded(now)
		g.mu.cc.Loaded(now)
		g.b.log.Info("loaded group coordinator partition", "partition", part, "records", n)
	case !leader && g.mu.loaded[part]:
		g.unloadPartitionLocked(part, kerr.NotCoordinator.Code)
		g.b.log.Info("unloaded group coordinator partition", "partition", part)
	default:
		return
	}
	g.rearmLocked()
}

// pendingOffset is a transactional offset commit record waiting for its
// transaction's marker in __consumer_offsets partition part.
type pendingOffset struct {
	part       int32
	group      string
	key, value []byte
}

// close stops the timer and refuses further calls; parked requests are
// released by the broker's closing channel.
func (g *groups) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mu.closed = true
	if g.mu.timer != nil {
		g.mu.timer.Stop()
	}
}

// coords are the two coordinators a call may use.
type coords struct {
	classic  *group.Coordinator
	consumer *consumer.Coordinator
}

// errGroupsDropped is the outcome of a call still waiting when its
// coordinators were dropped: its replies say COORDINATOR_NOT_AVAILABLE.
var errGroupsDropped = errors.New("group coordinators dropped before the call was answered")

// call runs f against the coordinators under their lock (loading them
// first if needed), persists the records it returns, then delivers the
// replies. f reads the groups named in names (nil: all groups); the call
// touches their __consumer_offsets partitions, those of its records and
// those of the parked requests it answers. A tick or a metadata change
// passes an empty names: what it decides shows only in its records and
// in the parked requests it answers.
//
// Nothing is answered from state whose write is in flight: the replies go
// out once the call's records are acknowledged and every earlier call of
// a partition it touches is answered, under g.mu (on a single node, where
// appends are acknowledged at once, before call returns). Only then does
// the classic coordinator apply what they store (Appended): offsets, a
// rebalance's assignment and the SyncGroups it answers; the KIP-848
// coordinator applied its state when it ran f, so its answers wait. A
// failed write drops the coordinators (dropLocked), which answers every
// call still waiting COORDINATOR_NOT_AVAILABLE; a call acknowledged after
// its coordinators were dropped, or after a partition it touches was
// unloaded or loaded again, answers NOT_COORDINATOR: the coordinator
// serving its groups now was replayed from a log that may lack its
// records (Kafka's coordinator runtime answers a write once it is
// committed, and fails it when the partition's epoch changed).
func (g *groups) call(names []string, f func(cs coords, now time.Time) ([]group.Reply, []group.Record)) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.ensureLocked(); err != nil {
		return err
	}
	c := g.mu.c
	replies, recs := f(coords{c, g.mu.cc}, g.b.now())
	call := &groupCall{parts: g.partsLocked(names, replies, recs)}
	gens := g.loadGensLocked(call.parts)
	call.finish = func(err error) {
		stale := err == nil && g.staleLocked(c, gens)
		switch {
		case err != nil:
			for _, r := range replies {
				failResponse(r.Resp, kerr.CoordinatorNotAvailable.Code)
			}
		case stale:
			for _, r := range replies {
				failResponse(r.Resp, kerr.NotCoordinator.Code)
			}
		}
		if err == nil && len(recs) > 0 && g.mu.c == c {
			// Groups reloaded since are ignored by Appended.
			replies = append(replies, c.Appended(g.b.now(), recs, nil)...)
		}
		for _, r := range replies {
			g.deliverLocked(r.Token, r.Resp)
		}
		if err != nil && g.mu.c == c {
			g.b.log.Error("writing group state failed; reloading the coordinator", "err", err)
			g.dropLocked() // the next call replays the log, which lacks the failed records
		}
		g.rearmLocked()
	}
	g.mu.calls = append(g.mu.calls, call)
	gate := newAckGate(&g.mu)
	defer gate.release()
	g.persistLocked(recs, gate.wrap(func(err error) {
		if call.finished {
			return // answered when its coordinators were dropped
		}
		call.acked, call.err = true, err
		g.finishCallsLocked()
	}))
	return nil
}

// partsLocked is the set of partitions a call touches: those of the
// groups it names, of its records and of the parked requests its replies
// answer; nil (all) when names is nil.
func (g *groups) partsLocked(names []string, replies []group.Reply, recs []group.Record) map[int32]bool {
	if names == nil {
		return nil
	}
	n := int32(len(g.mu.topic.Partitions))
	parts := make(map[int32]bool, 1)
	for _, id := range names {
		parts[group.PartitionFor(id, n)] = true
	}
	for _, r := range recs {
		parts[group.PartitionFor(r.Group, n)] = true
	}
	for _, r := range replies {
		if tok, ok := r.Token.(Token); ok {
			if id, ok := parkedGroup(g.mu.parked[tok]); ok {
				parts[group.PartitionFor(id, n)] = true
			}
		}
	}
	return parts
}

// loadGensLocked returns the loads of parts (nil: of every loaded partition).
func (g *groups) loadGensLocked(parts map[int32]bool) map[int32]uint64 {
	gens := map[int32]uint64{}
	for p, gen := range g.mu.loadGens {
		if parts == nil || parts[p] {
			gens[p] = gen
		}
	}
	for p := range parts {
		if _, ok := gens[p]; !ok {
			gens[p] = 0 // not loaded: loading it later makes the call stale
		}
	}
	return gens
}

// staleLocked reports whether the state a call of coordinator c ran on is
// gone: c was dropped, or a partition the call touched was unloaded or
// loaded again since (gens).
func (g *groups) staleLocked(c *group.Coordinator, gens map[int32]uint64) bool {
	if g.mu.c != c {
		return true
	}
	for p, gen := range gens {
		if g.mu.loadGens[p] != gen {
			return true
		}
	}
	return false
}

// finishCallsLocked answers, in call order, every acknowledged call that
// no earlier unanswered call of a partition it touches holds back.
func (g *groups) finishCallsLocked() {
	for progress := true; progress; {
		progress = false
		for i, call := range g.mu.calls {
			if !call.acked || slices.ContainsFunc(g.mu.calls[:i], call.overlaps) {
				continue
			}
			g.mu.calls = slices.Delete(g.mu.calls, i, i+1)
			call.finished = true
			call.finish(call.err) // may drop the coordinators and so change g.mu.calls
			progress = true
			break
		}
	}
}

// deliverLocked hands resp to the request waiting on tok and forgets the
// request if it was parked.
func (g *groups) deliverLocked(tok any, resp kmsg.Response) {
	if t, ok := tok.(Token); ok {
		delete(g.mu.parked, t)
	}
	deliver(tok, resp)
}

// parkLocked remembers req, whose answer the coordinator holds back, until
// it is delivered or the coordinator is dropped.
func (g *groups) parkLocked(tok Token, req kmsg.Request) {
	if g.mu.parked == nil {
		g.mu.parked = map[Token]kmsg.Request{}
	}
	g.mu.parked[tok] = req
}

// dropLocked drops both coordinators after a failed write of
// __consumer_offsets (or a recovered panic): their in-memory state may be
// ahead of the log. The next call, or the reload timer armed by
// rearmLocked, replays the log. Requests they held back are answered
// COORDINATOR_NOT_AVAILABLE now, so their clients find the coordinator
// again and retry, as they do when a Kafka coordinator moves.
func (g *groups) dropLocked() {
	if g.mu.c != nil {
		g.mu.dropped = coords{classic: g.mu.c, consumer: g.mu.cc}
		g.mu.droppedParts = int32(len(g.mu.topic.Partitions))
	}
	g.mu.c, g.mu.cc, g.mu.loaded, g.mu.loadGens = nil, nil, nil, nil
	for tok, req := range g.mu.parked {
		g.answerParkedLocked(tok, req, kerr.CoordinatorNotAvailable.Code)
	}
	g.mu.parked = nil
	// The calls waiting for acknowledgements answer now: their state is
	// gone, and the next coordinator waits for nothing of this one's (an
	// acknowledgement that never comes then holds nobody up).
	calls := g.mu.calls
	g.mu.calls = nil
	for _, call := range calls {
		call.finished = true
		call.finish(errGroupsDropped)
	}
}

// answerParkedLocked answers parked request req with code and forgets it.
func (g *groups) answerParkedLocked(tok Token, req kmsg.Request, code int16) {
	resp := req.ResponseKind()
	failResponse(resp, code)
	if jr, ok := resp.(*kmsg.JoinGroupResponse); ok {
		jr.MemberID = req.(*kmsg.JoinGroupRequest).MemberID
	}
	delete(g.mu.parked, tok)
	deliver(tok, resp)
}

// parkedGroup is the group a parked request is for.
func parkedGroup(req kmsg.Request) (string, bool) {
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		return r.Group, true
	case *kmsg.SyncGroupRequest:
		return r.Group, true
	}
	return "", false
}

// persistLocked appends records to their groups' partitions and calls done
// with the outcome once they are acknowledged.
func (g *groups) persistLocked(recs []group.Record, done func(error)) {
	appendInternal(g.b.rm, g.mu.topic, g.b.now(), recs, group.PartitionFor, done)
}

// currentPartition is partition part of t as rm holds it now. t is the
// snapshot a coordinator took when it loaded; in a cluster a partition
// this broker gets a replica of later (or again) is a new value in rm, and
// the snapshot's is absent or closed.
func currentPartition(rm Replicas, t *replica.Topic, part int32) *replica.Partition {
	if p := rm.PartitionOf(t.Meta.Name, part); p != nil {
		return p
	}
	return t.Partitions[part]
}

// appendInternal appends coordinator records to an internal topic, one
// batch per partition, the partition of each record chosen by partitionFor
// of its key (group or transactional id). The batches are all appended to
// the leaders' logs before appendInternal returns, so that records of
// successive calls reach every partition's log in call order; done gets
// the first failure or nil once all are acknowledged.
func appendInternal(rm Replicas, t *replica.Topic, now time.Time, recs []group.Record, partitionFor func(string, int32) int32, done func(error)) {
	if len(recs) == 0 {
		done(nil)
		return
	}
	n := int32(len(t.Partitions))
	byPart := map[int32][]records.Record{}
	var order []int32
	for _, r := range recs {
		p := partitionFor(r.Group, n)
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], records.Record{OffsetDelta: int32(len(byPart[p])), Key: r.Key, Value: r.Value})
	}
	ms := now.UnixMilli()
	batches := make([][]byte, len(order))
	for i, pi := range order {
		batch, err := records.Build(records.BatchSpec{FirstTimestamp: ms, MaxTimestamp: ms, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, byPart[pi])
		if err != nil {
			done(err)
			return
		}
		batches[i] = batch
	}
	var mu sync.Mutex
	left, failed := len(order), false
	for i, pi := range order {
		rm.AppendInternal(currentPartition(rm, t, pi), batches[i], func(err error) {
			mu.Lock()
			left--
			report := !failed && (err != nil || left == 0)
			if err != nil {
				failed = true
			}
			mu.Unlock()
			switch {
			case !report:
			case err != nil:
				done(fmt.Errorf("append to %s-%d: %w", t.Meta.Name, pi, err))
			default:
				done(nil)
			}
		})
	}
}

// completeTxnOffsets applies (commit) or drops (abort) the pending
// transactional offsets of a producer in one __consumer_offsets partition,
// after its marker was written there.
func (g *groups) completeTxnOffsets(producerID int64, part int32, commit bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.c == nil {
		return // not loaded: the next load replays the marker
	}
	var keep []pendingOffset
	for _, po := range g.mu.pendingTxn[producerID] {
		switch {
		case po.part != part:
			keep = append(keep, po)
		case commit:
			if err := g.mu.c.Replay(po.key, po.value); err != nil {
				g.b.log.Warn("applying transactional offset", "group", po.group, "err", err)
			}
		}
	}
	if len(keep) == 0 {
		delete(g.mu.pendingTxn, producerID)
	} else {
		g.mu.pendingTxn[producerID] = keep
	}
}

// hasPendingTxnOffset reports whether a transaction holds an uncommitted
// offset for the group's topic partition (OffsetFetch require_stable).
func (g *groups) hasPendingTxnOffsetLocked(groupID, topic string, partition int32) bool {
	if g.mu.c != nil && g.mu.c.HasPendingOffset(groupID, topic, partition) {
		return true // an OffsetCommit not yet acknowledged
	}
	for _, pos := range g.mu.pendingTxn {
		for _, po := range pos {
			if po.group != groupID {
				continue
			}
			var k kmsg.OffsetCommitKey
			if k.ReadFrom(po.key) == nil && k.Topic == topic && k.Partition == partition {
				return true
			}
		}
	}
	return false
}

// rearmLocked schedules the next Tick at the coordinators' next deadline,
// or within reloadRetry when they were dropped (the tick's call loads them
// again).
func (g *groups) rearmLocked() {
	now := g.b.now()
	switch {
	case g.mu.closed:
	case g.mu.c == nil:
		rearm(&g.mu.timer, now, now.Add(reloadRetry), g.tick)
	default:
		rearm(&g.mu.timer, now, earliest(g.mu.c.NextDeadline(), g.mu.cc.NextDeadline()), g.tick)
	}
}

func (g *groups) tick() {
	defer g.b.recoverTimer("group coordinator tick", func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.dropLocked()
		g.rearmLocked()
	})
	err := g.call([]string{}, func(cs coords, now time.Time) ([]group.Reply, []group.Record) {
		replies, recs := cs.classic.Tick(now)
		return replies, append(recs, fromConsumer(cs.consumer.Tick(now))...)
	})
	if err != nil {
		// The coordinators could not be loaded: try again later.
		g.b.log.Warn("group coordinator tick skipped; retrying", "err", err)
		g.mu.Lock()
		g.rearmLocked()
		g.mu.Unlock()
	}
}

// failResponse sets code on a group response whose write failed (or whose
// coordinator was dropped while the request waited). It covers every
// response the group coordinators may answer from a call that writes.
func failResponse(resp kmsg.Response, code int16) {
	msg := "the group coordinator could not write its state to " + offsetsTopic + "; retry"
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.ErrorCode, r.Generation = code, -1
		r.Protocol, r.LeaderID, r.Members = nil, "", nil
	case *kmsg.SyncGroupResponse:
		r.ErrorCode = code
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.LeaveGroupResponse:
		r.ErrorCode = code
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				r.Topics[i].Partitions[j].ErrorCode = code
			}
		}
	case *kmsg.DeleteGroupsResponse:
		for i := range r.Groups {
			r.Groups[i].ErrorCode = code
		}
	case *kmsg.OffsetDeleteResponse:
		r.ErrorCode = code
	case *kmsg.ConsumerGroupHeartbeatResponse:
		// As Kafka: only the error; the member keeps its last assignment
		// and heartbeats again.
		*r = kmsg.ConsumerGroupHeartbeatResponse{Version: r.Version, ErrorCode: code, ErrorMessage: &msg}
	case *kmsg.ConsumerGroupDescribeResponse:
		for i := range r.Groups {
			r.Groups[i].ErrorCode, r.Groups[i].ErrorMessage = code, &msg
		}
	case *kmsg.DescribeGroupsResponse:
		for i := range r.Groups {
			r.Groups[i].ErrorCode = code
		}
	case *kmsg.ListGroupsResponse:
		r.ErrorCode = code
	case *kmsg.OffsetFetchResponse:
		r.ErrorCode = code
		for i := range r.Groups {
			r.Groups[i].ErrorCode = code
		}
	}
}

// GroupRequest hands a group API request to the coordinator that owns it;
// the answer arrives on tok (a JoinGroup's when its rebalance completes).
func (h *Host) GroupRequest(client group.Client, req kmsg.Request, tok Token) error {
	var handleErr error
	g := &h.groups
	if lg, ok := req.(*kmsg.ListGroupsRequest); ok && h.cluster != nil && h.rm.TopicByName(offsetsTopic) == nil {
		// A broker with no replica of __consumer_offsets coordinates
		// no group: its list is empty, as Kafka's.
		deliver(tok, lg.ResponseKind())
		return nil
	}
	err := g.call(requestGroups(req), func(cs coords, now time.Time) ([]group.Reply, []group.Record) {
		r, recs, err := routeGroupRequest(cs, now, tok, client, req)
		handleErr = err
		if err == nil && !answers(r, tok) {
			g.parkLocked(tok, req) // under g.mu: call runs f with it held
		}
		return r, recs
	})
	if err == nil {
		err = handleErr
	}
	return err
}

// answers reports whether replies hold the answer for tok.
func answers(replies []group.Reply, tok Token) bool {
	for _, r := range replies {
		if t, ok := r.Token.(Token); ok && t == tok {
			return true
		}
	}
	return false
}

// requestGroups are the groups a group request reads or writes; nil (all
// groups) for ListGroups and requests of no single group.
func requestGroups(req kmsg.Request) []string {
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		return []string{r.Group}
	case *kmsg.SyncGroupRequest:
		return []string{r.Group}
	case *kmsg.HeartbeatRequest:
		return []string{r.Group}
	case *kmsg.LeaveGroupRequest:
		return []string{r.Group}
	case *kmsg.OffsetCommitRequest:
		return []string{r.Group}
	case *kmsg.OffsetDeleteRequest:
		return []string{r.Group}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return []string{r.Group}
	case *kmsg.OffsetFetchRequest:
		ids := []string{r.Group}
		for _, rg := range r.Groups {
			ids = append(ids, rg.Group)
		}
		return ids
	case *kmsg.ConsumerGroupDescribeRequest:
		return append([]string{}, r.Groups...)
	case *kmsg.DescribeGroupsRequest:
		return append([]string{}, r.Groups...)
	case *kmsg.DeleteGroupsRequest:
		return append([]string{}, r.Groups...)
	}
	return nil
}
