package controller

import (
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/controller/zkdata"
)

// ErrControllerMoved reports that another controller has taken over: a
// write conditional on this controller's epoch failed, or a state znode
// carries a newer controller epoch. The controller must resign.
var ErrControllerMoved = errors.New("controller moved: this controller's epoch is stale")

// ErrStateVersionConflict reports a state write whose ZkVersion no longer
// matches the znode (someone else wrote it); the machine re-reads and retries.
var ErrStateVersionConflict = errors.New("partition state version conflict")

// ErrNoEligibleLeader reports a partition for which the election strategy
// found no live replica it may choose.
var ErrNoEligibleLeader = errors.New("no eligible leader")

// StateWriter is the ZooKeeper I/O of the partition state machine. Every
// write is conditional on the controller's /controller_epoch version, so a
// deposed controller cannot overwrite its successor's decisions; a failed
// epoch check is ErrControllerMoved from the call itself.
type StateWriter interface {
	// CreatePartitionStates creates the state znodes of new partitions
	// (with their parents). A partition whose znode exists already fails.
	CreatePartitionStates(epochZkVersion int32, states map[TopicPartition]zkdata.PartitionState) (failed map[TopicPartition]error, err error)
	// UpdatePartitionStates writes each state conditionally on its
	// ZkVersion and returns the new versions; a version mismatch is
	// ErrStateVersionConflict in failed.
	UpdatePartitionStates(epochZkVersion int32, states map[TopicPartition]zkdata.PartitionState) (written map[TopicPartition]int32, failed map[TopicPartition]error, err error)
	// ReadPartitionStates reads the current state znodes.
	ReadPartitionStates(tps []TopicPartition) (map[TopicPartition]zkdata.PartitionState, error)
	// WriteTopicAssignment rewrites /brokers/topics/<topic> (reassignments).
	WriteTopicAssignment(epochZkVersion int32, topic string, a zkdata.TopicAssignment) error
}

// Output is what a controller decision asks the runtime to do once its
// state writes are done: send these requests, delete these topics' znodes.
type Output struct {
	Sends []Send
	// DeletedTopics have had StopReplica(delete) sent to every replica; the
	// runtime removes /brokers/topics/<t>, /config/topics/<t> and
	// /admin/delete_topics/<t>.
	DeletedTopics []string
	// Problems are per-partition failures (no leader, illegal transition)
	// that leave the partition as it was; they are for the log.
	Problems []error
}

// Machine is Kafka's controller logic (KafkaController's event handlers,
// PartitionStateMachine, ReplicaStateMachine) over a Context, with
// ZooKeeper behind a StateWriter. It starts no goroutine and reads no
// clock; one goroutine drives it. An error return is fatal to this
// controller's term (ErrControllerMoved, lost connection): resign.
type Machine struct {
	Ctx *Context
	W   StateWriter
	// MaxRetries bounds the re-read-and-retry rounds after version conflicts.
	MaxRetries int
}

// NewMachine returns a machine over ctx and w.
func NewMachine(ctx *Context, w StateWriter) *Machine { return &Machine{Ctx: ctx, W: w, MaxRetries: 5} }

type step struct {
	m     *Machine
	batch *Batch
	out   Output
}

func (m *Machine) begin() *step { return &step{m: m, batch: NewBatch()} }

func (s *step) finish() Output {
	s.out.Sends = append(s.out.Sends, s.batch.Build(s.m.Ctx)...)
	return s.out
}

// flush ends the step's current batch: its requests go out before any
// queued after, as Kafka sends each ControllerBrokerRequestBatch at once.
func (s *step) flush() {
	if s.batch.Empty() {
		return
	}
	s.out.Sends = append(s.out.Sends, s.batch.Build(s.m.Ctx)...)
	s.batch = NewBatch()
}

func (s *step) problem(err error) { s.out.Problems = append(s.out.Problems, err) }

// Startup is what a new controller does after loading the context:
// partitions are Online when their leader is live, Offline otherwise, New
// without state; replicas Online or Offline by liveness, offline ones
// leaving the ISR; every live broker gets the live brokers first (as
// Kafka's onControllerFailover, so a broker registered while there was
// no controller knows the leaders it is about to follow), then the
// LeaderAndIsr of its partitions and the full metadata; then
// offline and new partitions get leaders, queued deletions resume and
// reassignments whose targets are in sync finish.
func (m *Machine) Startup() (Output, error) {
	c := m.Ctx
	s := m.begin()
	s.batch.UpdateMetadata(c, c.LiveIDs())
	s.flush()
	offline := map[int32][]TopicPartition{}
	for _, tp := range c.AllPartitions() {
		st, ok := c.States[tp]
		switch {
		case !ok:
			c.Partitions[tp] = PartitionNew
		case st.Leader >= 0 && c.IsLive(st.Leader):
			c.Partitions[tp] = PartitionOnline
		default:
			c.Partitions[tp] = PartitionOffline
		}
		a, _ := c.Assignment(tp)
		for _, r := range a.Replicas {
			pr := PartitionReplica{tp, r}
			if c.IsLive(r) {
				c.Replicas[pr] = ReplicaOnline
				if ok && !c.Deleting[tp.Topic] {
					s.batch.LeaderAndISR(c, []int32{r}, tp, false)
				}
			} else {
				c.Replicas[pr] = ReplicaOffline
				if ok && !c.Deleting[tp.Topic] {
					offline[r] = append(offline[r], tp)
				}
			}
		}
	}
	// Replicas on brokers that died while there was no controller leave
	// the ISR now (Kafka's ReplicaStateMachine.startup), before elections.
	for _, id := range sortedKeysInt32(offline) {
		if err := s.replicasOffline(id, offline[id]); err != nil {
			return Output{}, err
		}
	}
	s.batch.UpdateMetadata(c, c.LiveIDs(), c.AllPartitions()...)
	if err := s.triggerOnline(); err != nil {
		return Output{}, err
	}
	s.deleteTopics()
	// Reassignments the previous controller left in the topic znodes
	// finish now if their targets caught up; the rest on ISR changes.
	if err := s.completeReassignments(c.AllPartitions()); err != nil {
		return Output{}, err
	}
	return s.finish(), nil
}

// OnBrokerChange handles a new set of registered brokers (the children of
// /brokers/ids with their epochs): a broker that left is failed, a new one
// started, one whose epoch changed (restarted within a watch round) both.
func (m *Machine) OnBrokerChange(current map[int32]LiveBroker) (Output, error) {
	c := m.Ctx
	var added, dead, bounced []int32
	for id, b := range current {
		old, ok := c.Live[id]
		switch {
		case !ok:
			added = append(added, id)
		case old.Epoch != b.Epoch:
			bounced = append(bounced, id)
		}
	}
	for id := range c.Live {
		if _, ok := current[id]; !ok {
			dead = append(dead, id)
		}
	}
	sortIDs(added, dead, bounced)
	s := m.begin()
	if len(dead)+len(bounced) > 0 {
		for _, id := range append(append([]int32(nil), dead...), bounced...) {
			delete(c.Live, id)
		}
		if err := s.brokerFailure(append(dead, bounced...)); err != nil {
			return Output{}, err
		}
	}
	if len(added)+len(bounced) > 0 {
		for _, id := range append(append([]int32(nil), added...), bounced...) {
			c.Live[id] = current[id]
		}
		if err := s.brokerStartup(append(added, bounced...)); err != nil {
			return Output{}, err
		}
	}
	return s.finish(), nil
}

func (s *step) brokerStartup(ids []int32) error {
	c := s.m.Ctx
	isNew := map[int32]bool{}
	for _, id := range ids {
		isNew[id] = true
		delete(c.ShuttingDown, id)
		delete(c.OfflineDirs, id)
	}
	var existing []int32
	for _, id := range c.LiveIDs() {
		if !isNew[id] {
			existing = append(existing, id)
		}
	}
	// Existing brokers learn of the new ones; new ones get every partition.
	// Both go out before anything else of the startup, each in a batch of
	// its own, as Kafka's onBrokerStartup sends them: a Kafka broker
	// follows a leader only if its metadata cache knows the leader alive,
	// so a LeaderAndIsr that reached a new broker ahead of its first
	// UpdateMetadata left it following nobody ("cannot become follower
	// since the new leader is unavailable") until the next leader change.
	s.flush()
	s.batch.UpdateMetadata(c, existing)
	s.flush()
	var withLeader []TopicPartition
	for tp := range c.States {
		withLeader = append(withLeader, tp)
	}
	s.batch.UpdateMetadata(c, ids, withLeader...)
	s.flush()
	for _, id := range ids {
		s.replicasOnline(id)
	}
	if err := s.triggerOnline(); err != nil {
		return err
	}
	s.deleteTopics() // deletions that waited for these brokers
	return nil
}

func (s *step) brokerFailure(ids []int32) error {
	c := s.m.Ctx
	dead := map[int32]bool{}
	for _, id := range ids {
		dead[id] = true
		delete(c.ShuttingDown, id)
		delete(c.OfflineDirs, id)
	}
	var offlineLeader []TopicPartition
	for _, tp := range c.AllPartitions() {
		if st, ok := c.States[tp]; ok && dead[st.Leader] && !c.Deleting[tp.Topic] {
			if err := c.movePartition(tp, PartitionOffline); err != nil {
				s.problem(err)
				continue
			}
			offlineLeader = append(offlineLeader, tp)
		}
	}
	if err := s.triggerOnline(); err != nil {
		return err
	}
	for _, id := range ids {
		var tps []TopicPartition
		for _, tp := range c.PartitionsOn(id) {
			if !c.Deleting[tp.Topic] {
				tps = append(tps, tp)
			}
		}
		if err := s.replicasOffline(id, tps); err != nil {
			return err
		}
	}
	if len(offlineLeader) == 0 {
		s.batch.UpdateMetadata(c, c.LiveIDs())
	}
	return nil
}

// replicasOffline moves broker id's replicas of tps to OfflineReplica:
// StopReplica (keep the log) to the broker if it still runs, the broker
// removed from each ISR (the last ISR member stays, so a clean election can
// wait for it) and the leader cleared when it was the leader, with the new
// state sent to the partition's other replicas.
func (s *step) replicasOffline(id int32, tps []TopicPartition) error {
	c := s.m.Ctx
	var moved []TopicPartition
	for _, tp := range tps {
		if err := c.moveReplica(PartitionReplica{tp, id}, ReplicaOffline); err != nil {
			s.problem(err)
			continue
		}
		s.batch.StopReplica(c, id, tp, false)
		moved = append(moved, tp)
	}
	propose := func(tp TopicPartition, cur zkdata.PartitionState) (zkdata.PartitionState, bool) {
		if !contains(cur.ISR, id) {
			return cur, false
		}
		next := cur.Clone()
		if cur.Leader == id {
			next.Leader = zkdata.NoLeader
		}
		if len(cur.ISR) > 1 {
			next.ISR = filter(cur.ISR, func(r int32) bool { return r != id })
		}
		next.LeaderEpoch++
		return next, true
	}
	done, err := s.update(moved, propose)
	if err != nil {
		return err
	}
	updated := map[TopicPartition]bool{}
	for _, tp := range done {
		updated[tp] = true
		a, _ := c.Assignment(tp)
		s.batch.LeaderAndISR(c, filter(a.Replicas, func(r int32) bool { return r != id }), tp, false)
	}
	// A partition whose ISR no longer held the replica (a controlled
	// shutdown took it out) keeps its state, but the brokers must still
	// learn that the replica is offline (Kafka's OfflineReplica transition
	// propagates these partitions too).
	for _, tp := range moved {
		if _, ok := c.States[tp]; ok && !updated[tp] {
			s.batch.UpdateMetadata(c, c.LiveIDs(), tp)
		}
	}
	return nil
}

// triggerOnline gives a leader to every New or Offline partition (not being
// deleted): New ones get their state created, Offline ones an offline election.
func (s *step) triggerOnline() error {
	c := s.m.Ctx
	var fresh, offline []TopicPartition
	for _, tp := range c.AllPartitions() {
		if c.Deleting[tp.Topic] {
			continue
		}
		switch c.Partitions[tp] {
		case PartitionNew:
			fresh = append(fresh, tp)
		case PartitionOffline:
			offline = append(offline, tp)
		}
	}
	if err := s.initialize(fresh); err != nil {
		return err
	}
	_, err := s.elect(offline, ElectOffline, nil)
	return err
}

// initialize creates the first state of new partitions: the first live
// replica leads, all live replicas are the ISR, leader epoch 0.
func (s *step) initialize(tps []TopicPartition) error {
	c := s.m.Ctx
	if len(tps) == 0 {
		return nil
	}
	states := map[TopicPartition]zkdata.PartitionState{}
	for _, tp := range tps {
		a, _ := c.Assignment(tp)
		live := filter(a.Replicas, func(r int32) bool { return c.IsReplicaOnline(r, tp) })
		if len(live) == 0 {
			s.problem(fmt.Errorf("new partition %s: no live replica among %v", tp, a.Replicas))
			continue
		}
		states[tp] = zkdata.PartitionState{Leader: live[0], ISR: live, ControllerEpoch: c.Epoch}
	}
	failed, err := s.m.W.CreatePartitionStates(c.EpochZkVersion, states)
	if err != nil {
		return err
	}
	for _, tp := range sortedStateKeys(states) {
		if e := failed[tp]; e != nil {
			s.problem(fmt.Errorf("new partition %s: %w", tp, e))
			continue
		}
		c.States[tp] = states[tp]
		if err := c.movePartition(tp, PartitionOnline); err != nil {
			s.problem(err)
		}
		a, _ := c.Assignment(tp)
		s.batch.LeaderAndISR(c, states[tp].ISR, tp, true)
		for _, r := range a.Replicas {
			to := ReplicaOffline
			if c.IsLive(r) {
				to = ReplicaOnline
			}
			if err := c.moveReplica(PartitionReplica{tp, r}, to); err != nil && c.Replicas[PartitionReplica{tp, r}] != to {
				s.problem(err)
			}
		}
	}
	return nil
}

// elect runs strategy on tps, writes the winners and tells their live
// replicas; partitions without an eligible leader are returned in failed
// and stay as they were (Offline ones stay Offline).
func (s *step) elect(tps []TopicPartition, strategy ElectionStrategy, unclean func(string) bool) (map[TopicPartition]error, error) {
	c := s.m.Ctx
	if unclean == nil {
		unclean = c.Unclean
	}
	failed := map[TopicPartition]error{}
	propose := func(tp TopicPartition, cur zkdata.PartitionState) (zkdata.PartitionState, bool) {
		a, _ := c.Assignment(tp)
		assignment := a.Replicas
		if strategy == ElectReassign {
			assignment = filter(a.Replicas, func(r int32) bool { return !contains(a.Removing, r) })
		}
		next, ok := Elect(strategy, ElectionInput{
			Assignment: assignment, Current: cur, Live: func(r int32) bool { return c.IsReplicaOnline(r, tp) }, Unclean: unclean(tp.Topic),
			ShuttingDown: func(id int32) bool { return c.ShuttingDown[id] },
		})
		if !ok {
			failed[tp] = fmt.Errorf("partition %s, %s election: %w", tp, strategy, ErrNoEligibleLeader)
		}
		return next, ok
	}
	done, err := s.update(tps, propose)
	if err != nil {
		return nil, err
	}
	for _, tp := range done {
		if err := c.movePartition(tp, PartitionOnline); err != nil {
			s.problem(err)
		}
		a, _ := c.Assignment(tp)
		s.batch.LeaderAndISR(c, a.Replicas, tp, false)
	}
	for _, tp := range tps {
		if e, ok := failed[tp]; ok {
			if c.Partitions[tp] != PartitionOnline {
				_ = c.movePartition(tp, PartitionOffline)
			}
			s.problem(e)
		}
	}
	return failed, nil
}

// update writes propose's state for each partition, conditional on the
// version in the context; conflicts are re-read and proposed again, up to
// MaxRetries rounds. It returns the partitions written, in order.
func (s *step) update(tps []TopicPartition, propose func(TopicPartition, zkdata.PartitionState) (zkdata.PartitionState, bool)) ([]TopicPartition, error) {
	c := s.m.Ctx
	var done []TopicPartition
	remaining := tps
	for round := 0; len(remaining) > 0; round++ {
		if round > s.m.MaxRetries {
			for _, tp := range remaining {
				s.problem(fmt.Errorf("partition %s: gave up after %d version conflicts", tp, round))
			}
			break
		}
		proposals := map[TopicPartition]zkdata.PartitionState{}
		for _, tp := range remaining {
			cur, ok := c.States[tp]
			if !ok {
				continue
			}
			if cur.ControllerEpoch > c.Epoch {
				return done, fmt.Errorf("partition %s written by controller epoch %d > %d: %w", tp, cur.ControllerEpoch, c.Epoch, ErrControllerMoved)
			}
			if next, ok := propose(tp, cur); ok {
				proposals[tp] = c.stateWithEpoch(next)
			}
		}
		if len(proposals) == 0 {
			break
		}
		written, failed, err := s.m.W.UpdatePartitionStates(c.EpochZkVersion, proposals)
		if err != nil {
			return done, err
		}
		remaining = remaining[:0:0]
		for _, tp := range sortedStateKeys(proposals) {
			if v, ok := written[tp]; ok {
				st := proposals[tp]
				st.ZkVersion = v
				c.States[tp] = st
				done = append(done, tp)
				continue
			}
			if e := failed[tp]; errors.Is(e, ErrStateVersionConflict) {
				remaining = append(remaining, tp)
			} else {
				s.problem(fmt.Errorf("partition %s: writing state: %w", tp, e))
			}
		}
		if len(remaining) > 0 {
			fresh, err := s.m.W.ReadPartitionStates(remaining)
			if err != nil {
				return done, err
			}
			for tp, st := range fresh {
				c.States[tp] = st
			}
		}
	}
	return done, nil
}

func sortedStateKeys(m map[TopicPartition]zkdata.PartitionState) []TopicPartition {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	return tps
}

func sortIDs(lists ...[]int32) {
	for _, l := range lists {
		for i := 1; i < len(l); i++ {
			for j := i; j > 0 && l[j] < l[j-1]; j-- {
				l[j], l[j-1] = l[j-1], l[j]
			}
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func sortedKeysInt32[V any](m map[int32]V) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sortIDs(ids)
	return ids
}
