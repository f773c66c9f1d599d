package broker

// The replica side of cluster mode: the partitions' roles come from the
// controller's LeaderAndIsr and StopReplica (through api.ClusterReplicas,
// adapted here onto replica.Manager), leaders write ISR changes to the
// partition state znodes (zkclient.Client.ChangeISR), and followers find
// their leader's inter-broker endpoint in the metadata cache, or in the
// LiveLeaders of the last LeaderAndIsr when the cache has not caught up.

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/kbroker/kbroker/broker/api"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// ReplicationConfig maps the broker config onto the replica manager's.
func ReplicationConfig(cfg config.Config) replica.ReplicationConfig {
	rc := replica.DefaultReplicationConfig()
	c := cfg.Cluster
	rc.LagTimeMax, rc.FetchMaxBytes, rc.FetchWaitMax = c.ReplicaLagTimeMax, c.ReplicaFetchMaxBytes, c.ReplicaFetchWaitMax
	rc.FetchMinBytes, rc.NumFetchers = c.ReplicaFetchMinBytes, int(c.NumReplicaFetchers)
	rc.ClientID = "broker-" + strconv.Itoa(int(cfg.NodeID)) + "-fetcher"
	return rc
}

// startReplication puts the replica manager in cluster mode (before the
// listeners serve).
func (b *Broker) startReplication() {
	rc := ReplicationConfig(b.cfg)
	rc.Conn = b.cluster.conn
	rc.BrokerEpoch = b.cluster.brokerEpoch
	b.rm.SetReplicationConfig(rc)
	b.rm.OnLeadershipChange(b.co.OnLeadershipChange)
	listener := b.cfg.InterBrokerListener().Name
	b.openCoordConns()
	b.co.SetCluster(coordCluster{b: b, listener: listener}) // cluster_coordinators.go
	c := b.cluster
	b.rm.SetCluster(b.cfg.NodeID, &isrWriter{zk: c.zk}, func(id int32) (string, bool) {
		e, ok := c.cache.BrokerEndpoint(id, listener)
		if !ok {
			return "", false
		}
		return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
	})
}

// replicaAdapter is api.ClusterReplicas over replica.Manager.
type replicaAdapter struct{ m *replica.Manager }

var _ api.ClusterReplicas = replicaAdapter{}

func (r replicaAdapter) LeaderEpoch(topic string, partition int32) (int32, bool) {
	p := r.m.PartitionOf(topic, partition)
	if p == nil {
		return 0, false
	}
	if _, replicated := p.State(); !replicated {
		return 0, false
	}
	return p.LeaderEpoch(), true
}

func toReplica(st api.PartitionState) replica.PartitionState {
	return replica.PartitionState{
		Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, ControllerEpoch: st.ControllerEpoch,
		ISR: st.ISR, Replicas: st.Replicas, ZKVersion: st.ZKVersion, IsNew: st.IsNew,
	}
}

func (r replicaAdapter) MakeLeader(topic string, partition int32, id [16]byte, st api.PartitionState) error {
	return r.m.MakeLeader(topic, partition, id, toReplica(st))
}

func (r replicaAdapter) MakeFollower(topic string, partition int32, id [16]byte, st api.PartitionState) error {
	return r.m.MakeFollower(topic, partition, id, toReplica(st))
}

func (r replicaAdapter) StopReplica(topic string, partition int32, deletePartition bool) error {
	return r.m.StopReplica(topic, partition, deletePartition)
}

func (r replicaAdapter) Offline(topic string, partition int32) bool {
	p := r.m.PartitionOf(topic, partition)
	return p != nil && p.Offline() != nil
}

// isrWriter is replica.ISRWriter over ZooKeeper. The partitions whose ISR
// it wrote wait in pending for FlushISRChanges, which names them in as few
// /isr_change_notification znodes as it can (Kafka's leaders batch theirs
// too, ReplicaManager.maybePropagateIsrChanges): the controller then reads
// one notification, not one per partition.
type isrWriter struct {
	zk *zkclient.Client

	mu      sync.Mutex
	pending []zkdata.TopicPartition
}

var _ replica.ISRChangeFlusher = (*isrWriter)(nil)

// isrChangesPerNotification bounds one notification znode's partitions,
// well under ZooKeeper's 1 MiB jute.maxbuffer even with 249-byte names.
const isrChangesPerNotification = 1000

func (w *isrWriter) ChangeISR(topic string, partition int32, cur replica.PartitionState, isr []int32) (replica.PartitionState, error) {
	tp := zkdata.TopicPartition{Topic: topic, Partition: partition}
	next := zkdata.PartitionState{Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch, ISR: slices.Clone(isr), ControllerEpoch: cur.ControllerEpoch, ZkVersion: cur.ZKVersion}
	v, err := w.zk.UpdatePartitionState(tp, next)
	switch {
	case errors.Is(err, zkclient.ErrBadVersion):
		read, rerr := w.zk.PartitionState(tp)
		if rerr != nil {
			return cur, fmt.Errorf("re-reading %s after a stale ISR write: %w", tp, rerr)
		}
		st := cur.Clone()
		st.Leader, st.LeaderEpoch, st.ISR, st.ControllerEpoch, st.ZKVersion = read.Leader, read.LeaderEpoch, read.ISR, read.ControllerEpoch, read.ZkVersion
		return st, fmt.Errorf("%s: %w", tp, replica.ErrStaleISRVersion)
	case err != nil:
		return cur, err // not known to be written: the leader writes it again
	}
	w.mu.Lock()
	w.pending = append(w.pending, tp)
	w.mu.Unlock()
	st := cur.Clone()
	st.ISR, st.ZKVersion = next.ISR, v
	return st, nil
}

// FlushISRChanges leaves the change notifications of the ISRs written
// since the last flush. Those it could not write stay pending for the
// next (a missing notification only delays the controller's
// UpdateMetadata; the state znode is what counts).
func (w *isrWriter) FlushISRChanges() error {
	w.mu.Lock()
	tps := w.pending
	w.pending = nil
	w.mu.Unlock()
	for len(tps) > 0 {
		n := min(len(tps), isrChangesPerNotification)
		if err := w.zk.NotifyISRChange(tps[:n]); err != nil {
			w.mu.Lock()
			w.pending = append(tps, w.pending...)
			w.mu.Unlock()
			return fmt.Errorf("ISR change notification of %d partitions: %w", len(tps), err)
		}
		tps = tps[n:]
	}
	return nil
}
