package replica

// A partition's role in cluster mode, as Kafka's Partition.makeLeader,
// makeFollower and ReplicaManager.stopReplicas: the controller's
// LeaderAndIsr requests make this broker the leader of a partition (it takes
// client produces, tracks its followers in an isr.Leader and moves the HW) or
// a follower of another broker (a replica fetcher copies the leader's log;
// clients get NOT_LEADER_OR_FOLLOWER). Leader epochs fence stale requests: a
// partition state with an older leader epoch than the one applied is
// ignored. On a single node (no SetCluster) every partition stays the
// leader of itself: ISR = this broker, HW = LEO.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kbroker/kbroker/broker/replica/isr"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// PartitionState is what a LeaderAndIsr request (or a partition state
// znode) says of one partition.
type PartitionState struct {
	Leader, LeaderEpoch, ControllerEpoch int32
	ISR, Replicas                        []int32
	// ZKVersion is the partition epoch: the state znode's version, for
	// version-checked ISR writes.
	ZKVersion int32
	// IsNew is set for a partition just created: its log may be created.
	IsNew bool
}

// Clone returns a deep copy.
func (s PartitionState) Clone() PartitionState {
	s.ISR, s.Replicas = slices.Clone(s.ISR), slices.Clone(s.Replicas)
	return s
}

// ISRWriter persists a leader's ISR change (the partition state znode in
// cluster mode, broker/cluster_replicas.go). cur is the state the leader
// knows (its ZKVersion is the version the write is conditional on). On
// success it returns the new state (with the new ZKVersion). When the
// version is stale it returns the state read back from the store and an
// error wrapping ErrStaleISRVersion: the leader obeys that state, never
// retries its own view. Any other error leaves the outcome unknown: the
// leader loop writes the change again (writeISRChange).
//
// The leader loop calls ChangeISR for many partitions at once (one call
// per partition at a time), so it must be safe for concurrent use.
type ISRWriter interface {
	ChangeISR(topic string, partition int32, cur PartitionState, isr []int32) (PartitionState, error)
}

// ISRChangeFlusher is an ISRWriter that leaves part of its work, the
// controller's change notifications in ZooKeeper mode, to one
// FlushISRChanges after each round of ChangeISR calls.
type ISRChangeFlusher interface {
	FlushISRChanges() error
}

// ErrStaleISRVersion reports an ISR write whose version check failed.
var ErrStaleISRVersion = errors.New("partition state version is stale")

// errNotLeader reports a write to a partition this broker does not lead.
var errNotLeader = fmt.Errorf("this broker does not lead the partition: %w", kerr.NotLeaderForPartition)

// replKind is a partition's replication role.
type replKind uint8

const (
	// replSingle: single-node mode, the leader of itself (the zero value).
	replSingle replKind = iota
	// replNone: cluster mode, no role yet or stopped (StopReplica).
	replNone
	// replLeader: cluster mode, the leader: mu.repl.leader is set.
	replLeader
	// replFollower: cluster mode, a follower of state.Leader.
	replFollower
)

// replState is a partition's replication state, guarded by Partition.mu.
type replState struct {
	kind replKind
	// state is the last partition state applied (cluster mode).
	state PartitionState
	// leader tracks the followers, the ISR and the HW. Invariant: non-nil
	// exactly when kind == replLeader.
	leader *isr.Leader
	// waiters are acks=all produces and internal writes waiting for the HW
	// (delayed_produce.go).
	waiters []*hwWaiter
	// isrWriting is set while a proposed ISR change is being written.
	isrWriting bool
}

// roleClosed is Partition.role's value once the partition is closed.
const roleClosed = 0xff

// setKindLocked changes the role, mirrored in p.role for lock-free readers.
// p.mu must be held.
func (p *Partition) setKindLocked(k replKind) {
	p.mu.repl.kind = k
	if !p.mu.closed {
		p.role.Store(uint32(k))
	}
}

// leads reports whether client produces are accepted.
func (r *replState) leads() bool { return r.kind == replSingle || r.kind == replLeader }

// LeaderEpoch is the leader epoch this replica knows: the one written into
// appended batches when it leads.
func (p *Partition) LeaderEpoch() int32 { return p.epoch.Load() }

// IsLeader reports whether this broker leads the partition (always on a
// single node). Produce and consumer fetches to a partition it does not
// lead get NOT_LEADER_OR_FOLLOWER.
func (p *Partition) IsLeader() bool {
	r := p.role.Load()
	return r == uint32(replSingle) || r == uint32(replLeader)
}

// State returns the last partition state applied, and whether the
// partition is replicated (cluster mode).
func (p *Partition) State() (PartitionState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.repl.state.Clone(), p.mu.repl.kind != replSingle
}

// ISR returns the in-sync replicas as the leader knows them (nil when this
// broker does not lead the partition in cluster mode).
func (p *Partition) ISR() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.mu.repl.leader; l != nil {
		return l.ISR()
	}
	return nil
}

// admitLocked applies the epoch fence: a state with an older leader epoch
// than the one applied is stale. It reports whether the epoch is new.
func (p *Partition) admitLocked(st PartitionState) (bool, error) {
	cur := int32(-1)
	if p.mu.repl.kind == replLeader || p.mu.repl.kind == replFollower {
		cur = p.epoch.Load()
	}
	if st.LeaderEpoch < cur {
		return false, fmt.Errorf("%s-%d: leader epoch %d older than the current %d: %w", p.Topic.Meta.Name, p.Index, st.LeaderEpoch, cur, kerr.StaleControllerEpoch)
	}
	return st.LeaderEpoch > cur, nil
}

// becomeLeader applies a state naming this broker leader. It reports
// whether leadership is new (this broker did not lead before).
func (p *Partition) becomeLeader(self int32, st PartitionState, cfg isr.Config) (gained bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return false, errPartitionClosed
	}
	newEpoch, err := p.admitLocked(st)
	if err != nil {
		return false, err
	}
	wasLeader := p.mu.repl.kind == replLeader
	if !newEpoch && wasLeader {
		// Same epoch: an ISR or assignment change from the controller.
		p.mu.repl.state = st.Clone()
		if p.mu.repl.leader.Committed(st.ISR) {
			p.setHWLocked(p.mu.repl.leader.HW())
		}
		return false, nil
	}
	// A new leader epoch starts at the log end (Kafka's makeLeader), so
	// OffsetForLeaderEpoch for older epochs answers where this log ends.
	// Its checkpoint entry is written with the epoch's first record
	// (storage.Log.AssignEpoch).
	if err := p.Log.AssignEpoch(st.LeaderEpoch); err != nil {
		return false, fmt.Errorf("%s-%d: %w", p.Topic.Meta.Name, p.Index, err)
	}
	leo := p.Log.LogEndOffset()
	var l *isr.Leader
	if wasLeader && st.LeaderEpoch == p.mu.repl.leader.Epoch()+1 {
		// Leading on in the next epoch (the controller changed the ISR):
		// no other broker led in between, so the followers' progress
		// carries over. After a longer jump another leader may have made
		// a follower truncate; its progress is asked again.
		l, err = p.mu.repl.leader.Reelect(cfg, st.LeaderEpoch, st.Replicas, st.ISR, leo, p.env.now())
	} else {
		l, err = isr.NewLeader(cfg, self, st.LeaderEpoch, st.Replicas, st.ISR, leo, p.hw.Load(), p.env.now())
	}
	if err != nil {
		return false, fmt.Errorf("%s-%d: %w", p.Topic.Meta.Name, p.Index, err)
	}
	// Parked acks=all produces of a leadership that goes on keep waiting
	// (their batches stay in this log), as Kafka's DelayedProduce does.
	if !wasLeader {
		p.failWaitersLocked(errNotLeader) // produces of an older leadership of ours
	}
	p.epoch.Store(st.LeaderEpoch)
	p.mu.repl.state, p.mu.repl.leader, p.mu.repl.isrWriting = st.Clone(), l, false
	p.setKindLocked(replLeader)
	p.setHWLocked(l.HW())
	return !wasLeader, nil
}

// becomeFollower applies a state naming another broker (or none, -1)
// leader. It reports whether leadership was lost and whether the leader
// epoch is new (the fetcher must truncate before fetching again).
func (p *Partition) becomeFollower(st PartitionState) (lost, newEpoch bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return false, false, errPartitionClosed
	}
	newEpoch, err = p.admitLocked(st)
	if err != nil {
		return false, false, err
	}
	lost = p.mu.repl.kind == replLeader
	if p.mu.repl.kind != replFollower {
		newEpoch = true // from leader or no role: always truncate first
	}
	p.mu.repl.state, p.mu.repl.leader = st.Clone(), nil
	p.setKindLocked(replFollower)
	p.epoch.Store(st.LeaderEpoch)
	p.failWaitersLocked(errNotLeader)
	p.wakeStateLocked()
	return lost, newEpoch, nil
}

// stop drops the partition's role (StopReplica). It reports whether
// leadership was lost.
func (p *Partition) stop() (lost bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lost = p.mu.repl.kind == replLeader
	if p.mu.repl.kind != replSingle {
		p.mu.repl.leader = nil
		p.setKindLocked(replNone)
	}
	p.failWaitersLocked(errNotLeader)
	p.wakeStateLocked()
	return lost
}

// enterCluster turns a single-node partition into one with no role yet,
// its HW from the log dir's checkpoint (a follower must not serve data its
// leader had not committed).
func (p *Partition) enterCluster(checkpointHW int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.repl.kind != replSingle {
		return
	}
	p.setKindLocked(replNone)
	hw := p.Log.LogStartOffset()
	if ok {
		hw = max(hw, min(checkpointHW, p.Log.LogEndOffset()))
	}
	p.hw.Store(hw)
	p.lso.Store(p.mu.txns.lastStable(hw))
}

// MakeLeader makes this broker the leader of the partition with state st
// (a LeaderAndIsr naming it leader): the replica fetcher for it stops, the
// new leader epoch starts at the log end, and client produces are accepted
// from now on. A state with an older leader epoch than the one applied is
// ignored with an error wrapping STALE_CONTROLLER_EPOCH.
func (m *Manager) MakeLeader(topic string, partition int32, topicID [16]byte, st PartitionState) error {
	c := m.cluster()
	if c == nil {
		return errors.New("MakeLeader: the manager is not in cluster mode")
	}
	p, err := m.replicaPartition(topic, partition, topicID)
	if err != nil {
		return err
	}
	m.removeFollower(p)
	gained, err := p.becomeLeader(c.self, st, m.isrConfig(p))
	if err != nil {
		return err
	}
	if gained {
		m.log.Info("became leader", "topic", topic, "partition", partition, "leader_epoch", st.LeaderEpoch, "isr", st.ISR)
		m.notifyLeadership(topic, partition, true)
	}
	return nil
}

// MakeFollower makes this broker a follower of st.Leader (-1: no leader,
// nothing is fetched): clients get NOT_LEADER_OR_FOLLOWER, parked acks=all
// produces fail, and the replica fetcher of that leader truncates the log
// by OffsetForLeaderEpoch when the epoch moved, then fetches. A state with
// an older leader epoch than the one applied is ignored with an error
// wrapping STALE_CONTROLLER_EPOCH.
func (m *Manager) MakeFollower(topic string, partition int32, topicID [16]byte, st PartitionState) error {
	c := m.cluster()
	if c == nil {
		return errors.New("MakeFollower: the manager is not in cluster mode")
	}
	if st.Leader == c.self {
		return fmt.Errorf("MakeFollower %s-%d: the leader is this broker", topic, partition)
	}
	p, err := m.replicaPartition(topic, partition, topicID)
	if err != nil {
		return err
	}
	lost, newEpoch, err := p.becomeFollower(st)
	if err != nil {
		return err
	}
	if lost {
		m.log.Info("became follower", "topic", topic, "partition", partition, "leader", st.Leader, "leader_epoch", st.LeaderEpoch)
		m.notifyLeadership(topic, partition, false)
	}
	// No leader, or a partition this broker leaves in its controlled
	// shutdown (a new epoch: BeginControlledShutdown): copied by no one.
	if st.Leader < 0 || (newEpoch && m.leavingOnNewEpoch()) {
		m.removeFollower(p)
		return nil
	}
	m.addFollower(p, topicID, st.Leader, st.LeaderEpoch, newEpoch)
	return nil
}

// StopReplica stops fetching for and leading the partition; with
// deletePartition its log is removed too (and the topic forgotten once
// every partition of it is).
func (m *Manager) StopReplica(topic string, partition int32, deletePartition bool) error {
	p := m.PartitionOf(topic, partition)
	if p == nil || p.isClosed() {
		// Nothing hosted (no replica here, or its log already deleted):
		// already stopped. A closed partition's arrival channel is
		// closed for good, so it must not be woken again.
		return nil
	}
	m.removeFollower(p)
	if p.stop() {
		m.notifyLeadership(topic, partition, false)
	}
	if !deletePartition {
		return nil
	}
	p.close()
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	if err := p.Dir.Remove(tp); err != nil {
		return fmt.Errorf("removing %s-%d: %w", topic, partition, err)
	}
	m.forgetIfAllClosed(topic)
	return nil
}

// forgetIfAllClosed drops a topic from the registry once every partition
// of it was stopped and deleted.
func (m *Manager) forgetIfAllClosed(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.mu.topics[topic]
	if t == nil {
		return
	}
	for _, p := range t.Partitions {
		if !p.isClosed() {
			return
		}
	}
	delete(m.mu.topics, topic)
	delete(m.mu.byID, t.Meta.ID)
}

func (p *Partition) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.closed
}

// replicaPartition returns the partition a LeaderAndIsr names, opening its
// topic from the metadata store when this broker did not host it yet, and
// reopening a partition whose log StopReplica deleted.
func (m *Manager) replicaPartition(topic string, partition int32, topicID [16]byte) (*Partition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.mu.topics[topic]
	if t != nil && topicID != ([16]byte{}) && t.Meta.ID != ([16]byte{}) && t.Meta.ID != topicID {
		// A topic of this name was deleted and created again while this
		// broker missed the StopReplica: its data is not this topic's.
		return nil, fmt.Errorf("%s-%d: local topic id %s, requested %s: %w", topic, partition, fmtUUID(t.Meta.ID), fmtUUID(topicID), kerr.InconsistentTopicID)
	}
	if t == nil || int32(len(t.Partitions)) <= partition {
		meta, ok := m.store.Topic(topic)
		if !ok || partition < 0 || partition >= meta.Partitions {
			return nil, fmt.Errorf("%s-%d is not in the metadata: %w", topic, partition, kerr.UnknownTopicOrPartition)
		}
		if topicID != ([16]byte{}) && meta.ID != ([16]byte{}) && meta.ID != topicID {
			return nil, fmt.Errorf("%s-%d: topic id %s in the metadata, requested %s: %w", topic, partition, fmtUUID(meta.ID), fmtUUID(topicID), kerr.InconsistentTopicID)
		}
		nt, err := m.growTopicLocked(t, meta)
		if err != nil {
			return nil, err
		}
		m.mu.topics[topic] = nt
		m.mu.byID[meta.ID] = nt
		t = nt
	}
	if partition < 0 {
		return nil, fmt.Errorf("%s-%d: %w", topic, partition, kerr.UnknownTopicOrPartition)
	}
	p := t.Partitions[partition]
	if !p.isClosed() {
		return p, nil
	}
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	dir := m.leastLoadedDir()
	log, err := dir.Create(tp, m.logConfig(t.Meta.Configs))
	if err != nil {
		return nil, fmt.Errorf("creating log for %s-%d: %w", topic, partition, err)
	}
	np, err := newPartition(t, partition, log, dir, m.partitionEnv())
	if err != nil {
		return nil, err
	}
	nt := &Topic{Meta: t.Meta, conf: t.conf, Partitions: slices.Clone(t.Partitions)}
	nt.Partitions[partition] = np
	m.mu.topics[topic] = nt
	m.mu.byID[t.Meta.ID] = nt
	return np, nil
}

// growTopicLocked returns a topic value with meta's partitions: those of t
// (nil: none yet) kept as they are, the others opened over the logs this
// broker has of them, or absent (openPartition): the caller creates the
// log of the one partition it was given a replica of, never those of the
// topic's other partitions. m.mu must be held.
func (m *Manager) growTopicLocked(t *Topic, meta controller.Topic) (*Topic, error) {
	nt := &Topic{Meta: meta, conf: newTopicConf(m.topicDefaults(), meta.Configs)}
	if t != nil {
		nt.conf = t.conf
		nt.Partitions = append(nt.Partitions, t.Partitions...)
	}
	kept := len(nt.Partitions)
	for i := int32(kept); i < meta.Partitions; i++ {
		p, _, err := m.openPartition(nt, i)
		if err != nil {
			for _, p := range nt.Partitions[kept:] {
				p.close() // opened here over logs found on disk: nothing to remove
			}
			return nil, err
		}
		nt.Partitions = append(nt.Partitions, p)
	}
	return nt, nil
}
