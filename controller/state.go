package controller

import (
	"fmt"
	"sort"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/protocol"
)

// TopicPartition names one partition.
type TopicPartition = zkdata.TopicPartition

// PartitionPhase is a partition's state in Kafka's partition state machine.
type PartitionPhase int8

// Partition phases and their legal predecessors (Kafka's PartitionStateMachine):
//
//	NonExistent → New → Online ⇄ Offline → NonExistent
//	New → Offline; Online → Online (re-election)
const (
	PartitionNonExistent PartitionPhase = iota
	PartitionNew
	PartitionOnline
	PartitionOffline
)

func (p PartitionPhase) String() string {
	return [...]string{"NonExistentPartition", "NewPartition", "OnlinePartition", "OfflinePartition"}[p]
}

var partitionFrom = map[PartitionPhase][]PartitionPhase{
	PartitionNew:         {PartitionNonExistent},
	PartitionOnline:      {PartitionNew, PartitionOnline, PartitionOffline},
	PartitionOffline:     {PartitionNew, PartitionOnline, PartitionOffline},
	PartitionNonExistent: {PartitionOffline},
}

// ReplicaPhase is a replica's state in Kafka's replica state machine.
type ReplicaPhase int8

// Replica phases (Kafka's ReplicaStateMachine).
const (
	ReplicaNonExistent ReplicaPhase = iota
	ReplicaNew
	ReplicaOnline
	ReplicaOffline
	ReplicaDeletionStarted
	ReplicaDeletionSuccessful
	ReplicaDeletionIneligible
)

func (r ReplicaPhase) String() string {
	return [...]string{"NonExistentReplica", "NewReplica", "OnlineReplica", "OfflineReplica",
		"ReplicaDeletionStarted", "ReplicaDeletionSuccessful", "ReplicaDeletionIneligible"}[r]
}

var replicaFrom = map[ReplicaPhase][]ReplicaPhase{
	ReplicaNew:                {ReplicaNonExistent},
	ReplicaOnline:             {ReplicaNew, ReplicaOnline, ReplicaOffline, ReplicaDeletionIneligible},
	ReplicaOffline:            {ReplicaNew, ReplicaOnline, ReplicaOffline, ReplicaDeletionIneligible},
	ReplicaDeletionStarted:    {ReplicaOffline},
	ReplicaDeletionSuccessful: {ReplicaDeletionStarted},
	ReplicaDeletionIneligible: {ReplicaOffline, ReplicaDeletionStarted},
	ReplicaNonExistent:        {ReplicaDeletionSuccessful},
}

// ValidPartitionTransition reports whether Kafka allows from → to.
func ValidPartitionTransition(from, to PartitionPhase) bool {
	for _, f := range partitionFrom[to] {
		if f == from {
			return true
		}
	}
	return false
}

// ValidReplicaTransition reports whether Kafka allows from → to.
func ValidReplicaTransition(from, to ReplicaPhase) bool {
	for _, f := range replicaFrom[to] {
		if f == from {
			return true
		}
	}
	return false
}

// PartitionReplica names one replica: a partition on a broker.
type PartitionReplica struct {
	TopicPartition
	Broker int32
}

// LiveBroker is a registered broker and its epoch: the czxid of its
// /brokers/ids/<id> znode, which changes with every registration, so a
// request carrying an older epoch is recognisably for a previous
// incarnation of the broker.
type LiveBroker struct {
	Registration zkdata.BrokerRegistration
	Epoch        int64
}

// Assignment is a partition's replicas and, during a reassignment, the
// replicas being added and removed (KIP-455).
type Assignment struct {
	Replicas, Adding, Removing []int32
}

// TopicReplicas is the controller's view of one topic: its id and assignment.
type TopicReplicas struct {
	ID         [16]byte
	Partitions map[int32]Assignment
}

// Context is everything the controller knows (Kafka's ControllerContext),
// loaded from ZooKeeper when it becomes controller and kept in step with
// every write it makes. It is owned by one goroutine.
//
// Invariant: States[tp] equals the content and version of tp's state znode
// after the last write this controller made or read.
type Context struct {
	// ControllerID is this broker; Epoch the controller epoch it won and
	// EpochZkVersion the version of /controller_epoch holding it, on which
	// every write is conditional (a deposed controller's writes fail).
	ControllerID   int32
	Epoch          int32
	EpochZkVersion int32

	Live         map[int32]LiveBroker
	ShuttingDown map[int32]bool
	Topics       map[string]*TopicReplicas
	States       map[TopicPartition]zkdata.PartitionState
	Partitions   map[TopicPartition]PartitionPhase
	Replicas     map[PartitionReplica]ReplicaPhase
	// Deleting holds topics queued in /admin/delete_topics.
	Deleting map[string]bool
	// OfflineDirs holds, per live broker, the partitions whose replica on
	// it sits in an offline log directory: the broker answered a
	// LeaderAndIsr for them with KAFKA_STORAGE_ERROR (Kafka's
	// replicasOnOfflineDirs). Such a replica is offline although its broker
	// lives: no election picks it and UpdateMetadata lists it offline. A
	// broker's entry goes when it fails or registers again (a restarted
	// broker's directories are healthy, or it would not have started).
	OfflineDirs map[int32]map[TopicPartition]bool
	// Unclean reports unclean.leader.election.enable for a topic.
	Unclean func(topic string) bool
	// Listener is the inter-broker listener whose endpoints LeaderAndIsr
	// lists for leaders (inter.broker.listener.name).
	Listener string
	// IBP is inter.broker.protocol.version: the versions of the requests
	// sent to brokers, Kafka's or kbroker's (zero: the default, 3.9).
	IBP protocol.IBP
}

// NewContext returns an empty context for controller id at epoch.
func NewContext(id, epoch, epochZkVersion int32) *Context {
	return &Context{
		ControllerID: id, Epoch: epoch, EpochZkVersion: epochZkVersion,
		Live: map[int32]LiveBroker{}, ShuttingDown: map[int32]bool{}, Topics: map[string]*TopicReplicas{},
		States: map[TopicPartition]zkdata.PartitionState{}, Partitions: map[TopicPartition]PartitionPhase{},
		Replicas: map[PartitionReplica]ReplicaPhase{}, Deleting: map[string]bool{},
		OfflineDirs: map[int32]map[TopicPartition]bool{},
		Unclean:     func(string) bool { return false }, Listener: "PLAINTEXT",
	}
}

// IsLive reports whether a broker is registered (shutting down counts).
func (c *Context) IsLive(id int32) bool { _, ok := c.Live[id]; return ok }

// IsReplicaOnline reports whether broker id's replica of tp can serve: the
// broker is live and tp is not in one of its offline log directories
// (Kafka's ControllerContext.isReplicaOnline).
func (c *Context) IsReplicaOnline(id int32, tp TopicPartition) bool {
	return c.IsLive(id) && !c.OfflineDirs[id][tp]
}

// LiveIDs returns the live brokers in id order.
func (c *Context) LiveIDs() []int32 {
	ids := make([]int32, 0, len(c.Live))
	for id := range c.Live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Assignment returns a partition's assignment.
func (c *Context) Assignment(tp TopicPartition) (Assignment, bool) {
	t, ok := c.Topics[tp.Topic]
	if !ok {
		return Assignment{}, false
	}
	a, ok := t.Partitions[tp.Partition]
	return a, ok
}

// AllPartitions returns every partition in (topic, partition) order.
func (c *Context) AllPartitions() []TopicPartition {
	var out []TopicPartition
	for name, t := range c.Topics {
		for p := range t.Partitions {
			out = append(out, TopicPartition{Topic: name, Partition: p})
		}
	}
	sortTPs(out)
	return out
}

// PartitionsOn returns the partitions with a replica on broker id.
func (c *Context) PartitionsOn(id int32) []TopicPartition {
	var out []TopicPartition
	for _, tp := range c.AllPartitions() {
		a, _ := c.Assignment(tp)
		if contains(a.Replicas, id) {
			out = append(out, tp)
		}
	}
	return out
}

// AddTopic records a topic's assignment; its partitions and replicas start
// NonExistent.
func (c *Context) AddTopic(name string, a zkdata.TopicAssignment) {
	t := &TopicReplicas{ID: a.TopicID, Partitions: map[int32]Assignment{}}
	for p, rs := range a.Partitions {
		t.Partitions[p] = Assignment{Replicas: rs, Adding: a.AddingReplicas[p], Removing: a.RemovingReplicas[p]}
	}
	c.Topics[name] = t
}

// RemoveTopic forgets a deleted topic.
func (c *Context) RemoveTopic(name string) {
	t, ok := c.Topics[name]
	if !ok {
		return
	}
	for p, a := range t.Partitions {
		tp := TopicPartition{Topic: name, Partition: p}
		delete(c.States, tp)
		delete(c.Partitions, tp)
		for _, r := range a.Replicas {
			delete(c.Replicas, PartitionReplica{tp, r})
		}
	}
	delete(c.Topics, name)
	delete(c.Deleting, name)
}

// movePartition applies a partition transition, or reports the illegal one.
func (c *Context) movePartition(tp TopicPartition, to PartitionPhase) error {
	from := c.Partitions[tp]
	if !ValidPartitionTransition(from, to) {
		return fmt.Errorf("partition %s: illegal transition %s → %s", tp, from, to)
	}
	c.Partitions[tp] = to
	return nil
}

// moveReplica applies a replica transition, or reports the illegal one.
func (c *Context) moveReplica(r PartitionReplica, to ReplicaPhase) error {
	from := c.Replicas[r]
	if !ValidReplicaTransition(from, to) {
		return fmt.Errorf("replica %s on %d: illegal transition %s → %s", r.TopicPartition, r.Broker, from, to)
	}
	c.Replicas[r] = to
	return nil
}

func sortTPs(tps []TopicPartition) {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
}
