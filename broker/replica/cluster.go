package replica

// Cluster mode of the Manager: SetCluster turns replication on; from then
// on partitions take their role from MakeLeader / MakeFollower /
// StopReplica (role.go), replica fetchers copy the logs this broker follows
// (fetcher.go), and one goroutine owned by the Manager runs the leaders'
// housekeeping (leader_tasks.go). Without SetCluster nothing here runs.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/broker/replica/isr"
	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/kbroker/kbroker/storage"
)

// ReplicationConfig holds the replication settings, with Kafka's names.
type ReplicationConfig struct {
	// LagTimeMax is replica.lag.time.max.ms (30000): a follower that has
	// not caught up for this long leaves the ISR. Leaders check every half.
	LagTimeMax time.Duration
	// FetchMaxBytes is replica.fetch.max.bytes (1048576), per partition.
	FetchMaxBytes int32
	// FetchResponseMaxBytes is replica.fetch.response.max.bytes (10485760).
	FetchResponseMaxBytes int32
	// FetchWaitMax is replica.fetch.wait.max.ms (500).
	FetchWaitMax time.Duration
	// FetchMinBytes is replica.fetch.min.bytes (1).
	FetchMinBytes int32
	// FetchBackoff is replica.fetch.backoff.ms (1000): the pause after a
	// failed fetch or connection.
	FetchBackoff time.Duration
	// NumFetchers is num.replica.fetchers (1): fetcher goroutines per
	// leader broker; partitions are spread over them by hash.
	NumFetchers int
	// HighWatermarkCheckpointInterval is
	// replica.high.watermark.checkpoint.interval.ms (5000).
	HighWatermarkCheckpointInterval time.Duration
	// ClientID names this broker's fetch connections ("replica-fetcher" if empty).
	ClientID string
	// Conn is how fetchers reach leaders on the inter-broker listener:
	// TLS and SASL as its security protocol wants (ClientID is set from
	// the field above).
	Conn kconn.Options
	// BrokerEpoch is this broker's registration epoch (-1 until it
	// registered), sent in Fetch v15+ ReplicaState as Kafka's ZooKeeper-mode
	// followers send theirs; nil sends -1.
	BrokerEpoch func() int64
}

// DefaultReplicationConfig returns Kafka's defaults.
func DefaultReplicationConfig() ReplicationConfig {
	return ReplicationConfig{
		LagTimeMax: 30 * time.Second, FetchMaxBytes: 1 << 20, FetchResponseMaxBytes: 10 << 20,
		FetchWaitMax: 500 * time.Millisecond, FetchMinBytes: 1, FetchBackoff: time.Second,
		NumFetchers: 1, HighWatermarkCheckpointInterval: 5 * time.Second,
	}
}

// clusterState is what SetCluster installs. It never changes afterwards.
type clusterState struct {
	self       int32
	isrw       ISRWriter
	leaderAddr func(brokerID int32) (string, bool)
	cfg        ReplicationConfig
}

// replication is the Manager's cluster-mode state.
type replication struct {
	c atomic.Pointer[clusterState]
	// onLeader is the leadership callback (OnLeadershipChange).
	onLeader atomic.Pointer[func(topic string, partition int32, leader bool)]

	mu struct {
		sync.Mutex
		cfg      ReplicationConfig
		fetchers map[fetcherKey]*fetcher
		stopped  bool
		// noFollow: StopFollowing ran; no fetcher starts again.
		noFollow bool
		// shuttingDown: BeginControlledShutdown ran; a partition that
		// becomes a follower anew (a LeaderAndIsr of a new epoch) is not
		// copied.
		shuttingDown bool
	}
	// manualFetch (tests only) creates fetchers without their goroutine:
	// the test drives their truncate and fetch steps.
	manualFetch bool
	// isrWake asks the leader loop to write proposed ISR changes now.
	isrWake chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	// internal counts the goroutines waiting for internal writes' HW.
	internal sync.WaitGroup
}

// SetReplicationConfig sets the replication settings; call it before
// SetCluster (the defaults are Kafka's).
func (m *Manager) SetReplicationConfig(rc ReplicationConfig) {
	m.repl.mu.Lock()
	defer m.repl.mu.Unlock()
	m.repl.mu.cfg = rc
}

// SetCluster turns on cluster mode: this broker is brokerID, leaders write
// ISR changes through isrw, and followers find their leader's inter-broker
// endpoint ("host:port") with leaderAddr. Partitions already open lose
// their single-node leadership until a MakeLeader; their HW comes from the
// log dir's checkpoint. It starts the leaders' housekeeping goroutine,
// which Stop ends. Call it once, before serving requests.
func (m *Manager) SetCluster(brokerID int32, isrw ISRWriter, leaderAddr func(brokerID int32) (string, bool)) {
	m.repl.mu.Lock()
	rc := withDefaults(m.repl.mu.cfg)
	m.repl.mu.cfg = rc
	m.repl.mu.fetchers = map[fetcherKey]*fetcher{}
	m.repl.mu.Unlock()
	if !m.repl.c.CompareAndSwap(nil, &clusterState{self: brokerID, isrw: isrw, leaderAddr: leaderAddr, cfg: rc}) {
		return
	}
	m.mu.Lock()
	for _, t := range m.mu.topics {
		m.enterClusterLocked(t)
	}
	m.mu.Unlock()
	m.repl.isrWake = make(chan struct{}, 1)
	m.repl.stop = make(chan struct{})
	m.repl.wg.Add(1)
	go m.leaderLoop(rc)
}

// cluster returns the cluster-mode state, nil on a single node.
func (m *Manager) cluster() *clusterState { return m.repl.c.Load() }

// Replicated reports whether the manager runs in cluster mode.
func (m *Manager) Replicated() bool { return m.cluster() != nil }

// enterClusterLocked gives every partition of t no role yet, with the HW
// of the log dir checkpoint. m.mu must be held.
func (m *Manager) enterClusterLocked(t *Topic) {
	for _, p := range t.Partitions {
		if !p.Hosted() {
			continue
		}
		hw, ok := p.Dir.HighWatermark(tpOf(p))
		p.enterCluster(hw, ok)
	}
}

// OnLeadershipChange installs f, called (outside any lock of the manager)
// whenever this broker gains or loses the leadership of a partition, so
// that the coordinator host loads or unloads __consumer_offsets and
// __transaction_state partitions.
func (m *Manager) OnLeadershipChange(f func(topic string, partition int32, leader bool)) {
	m.repl.onLeader.Store(&f)
}

func (m *Manager) notifyLeadership(topic string, partition int32, leader bool) {
	if f := m.repl.onLeader.Load(); f != nil && *f != nil {
		(*f)(topic, partition, leader)
	}
}

// isrConfig is the isr.Config of partition p: replica.lag.time.max.ms and
// the topic's min.insync.replicas.
func (m *Manager) isrConfig(p *Partition) isr.Config {
	c := m.cluster()
	return isr.Config{LagTimeMax: c.cfg.LagTimeMax, MinInsyncReplicas: int(p.Topic.Settings().MinInsyncReplicas)}
}

// stopReplication stops every replica fetcher and the leader loop, and
// waits for them.
func (m *Manager) stopReplication() {
	if !m.stopFetchers(&m.repl.mu.stopped) {
		return
	}
	close(m.repl.stop)
	m.repl.wg.Wait()
	m.repl.internal.Wait()
}

// stopFetchers sets *flag (a field of m.repl.mu, which keeps addFollower
// from starting fetchers) and stops every fetcher. It reports false, and
// stops nothing, when *flag was set already or m is not in cluster mode.
func (m *Manager) stopFetchers(flag *bool) bool {
	m.repl.mu.Lock()
	was := *flag
	*flag = true
	if was || m.cluster() == nil {
		m.repl.mu.Unlock()
		return false
	}
	fs := m.repl.mu.fetchers
	m.repl.mu.fetchers = map[fetcherKey]*fetcher{}
	m.repl.mu.Unlock()
	for _, f := range fs {
		f.shutdown()
	}
	return true
}

// StopFollowing stops every replica fetcher and starts none from now on,
// whatever LeaderAndIsr follows; leaders keep leading. The broker calls it
// once its controlled shutdown has moved its leaderships away and taken it
// out of the ISRs, as Kafka's KRaft controller keeps a broker in
// controlled shutdown out of them (KIP-841; here the leaders write ISRs to
// ZooKeeper themselves, so the broker stops fetching instead). One that
// went on fetching until its process exited caught up, its leaders wrote
// it back into their ISRs, and every acks=all produce to those partitions
// then waited replica.lag.time.max.ms after the exit for the ISR to shrink
// again (a 10-s gap in a producer's acknowledgements in a rolling restart
// of 30,000 partitions).
func (m *Manager) StopFollowing() { m.stopFetchers(&m.repl.mu.noFollow) }

// BeginControlledShutdown marks the start of this broker's controlled
// shutdown: from now on a partition that becomes a follower in a new
// leader epoch (a leadership the controller moved away from this broker,
// or an ISR it took this broker out of) is not copied any more, while
// the partitions whose state did not change yet are copied on. As Kafka's
// controller answers a leader that proposes a broker in controlled
// shutdown for an ISR with INELIGIBLE_REPLICA, this keeps the broker out
// of the ISRs it leaves: here the leaders write ISRs to ZooKeeper
// themselves, and a broker that caught up as the new follower of a
// leadership it had just given away was taken back into that ISR within
// a second, then stopped following and exited, and every acks=all
// produce to the partition waited replica.lag.time.max.ms for the ISR to
// shrink again (10-s gaps in a rolling restart at 30,000 partitions).
func (m *Manager) BeginControlledShutdown() {
	m.repl.mu.Lock()
	m.repl.mu.shuttingDown = true
	m.repl.mu.Unlock()
}

// leavingOnNewEpoch reports whether BeginControlledShutdown ran: a
// partition that becomes a follower in a new epoch is not copied.
func (m *Manager) leavingOnNewEpoch() bool {
	m.repl.mu.Lock()
	defer m.repl.mu.Unlock()
	return m.repl.mu.shuttingDown
}

// withDefaults fills every unset (zero or negative) field with Kafka's default.
func withDefaults(rc ReplicationConfig) ReplicationConfig {
	def := DefaultReplicationConfig()
	if rc.LagTimeMax <= 0 {
		rc.LagTimeMax = def.LagTimeMax
	}
	if rc.FetchMaxBytes <= 0 {
		rc.FetchMaxBytes = def.FetchMaxBytes
	}
	if rc.FetchResponseMaxBytes <= 0 {
		rc.FetchResponseMaxBytes = def.FetchResponseMaxBytes
	}
	if rc.FetchWaitMax <= 0 {
		rc.FetchWaitMax = def.FetchWaitMax
	}
	if rc.FetchMinBytes <= 0 {
		rc.FetchMinBytes = def.FetchMinBytes
	}
	if rc.FetchBackoff <= 0 {
		rc.FetchBackoff = def.FetchBackoff
	}
	if rc.NumFetchers <= 0 {
		rc.NumFetchers = def.NumFetchers
	}
	if rc.HighWatermarkCheckpointInterval <= 0 {
		rc.HighWatermarkCheckpointInterval = def.HighWatermarkCheckpointInterval
	}
	if rc.ClientID == "" {
		rc.ClientID = "replica-fetcher"
	}
	return rc
}

// tpOf names p's log.
func tpOf(p *Partition) storage.TopicPartition {
	return storage.TopicPartition{Topic: p.Topic.Meta.Name, Partition: p.Index}
}
