package api

import (
	"context"
	"errors"
	"time"

	"github.com/kbroker/kbroker/broker/metacache"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster is what the handlers need in cluster mode (zookeeper.connect
// set); a single node has none and every handler behaves as before.
type Cluster struct {
	// BrokerID is this broker's broker.id.
	BrokerID int32
	// Listener is the inter-broker listener's name (LeaderAndIsr's
	// LiveLeaders are endpoints on it).
	Listener string
	// Fence admits controller requests by controller and broker epoch.
	Fence *controller.Fence
	// BrokerEpoch is the epoch of this broker's current registration
	// (zkclient.Registration.Epoch).
	BrokerEpoch func() int64
	// Cache is the metadata cache UpdateMetadata keeps.
	Cache *metacache.Cache
	// Controller is this broker's controller (zkcontroller.Controller).
	Controller ClusterController
	// Replicas hosts the partitions' roles. Without it (the replica side
	// not wired) LeaderAndIsr and StopReplica refuse every partition with
	// KAFKA_STORAGE_ERROR rather than pretend.
	Replicas ClusterReplicas
}

// ClusterController is what the handlers need of this broker's controller
// (zkcontroller.Controller): whether it is active, who is, and the
// requests only the active controller serves.
type ClusterController interface {
	Active() bool
	ControllerID() int32
	ControlledShutdown(ctx context.Context, id int32, brokerEpoch int64) ([]controller.TopicPartition, error)
	ElectLeaders(ctx context.Context, tps []controller.TopicPartition, strategy controller.ElectionStrategy) (map[controller.TopicPartition]error, error)
	// Reassign starts (or, with the original replicas as target, cancels)
	// reassignments; the map holds the partitions refused.
	Reassign(ctx context.Context, targets map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error)
	// AlterPartition applies a leader's proposed ISR (alter_partition.go)
	// and returns the partition's state.
	AlterPartition(ctx context.Context, leader int32, brokerEpoch int64, tp controller.TopicPartition, leaderEpoch, partitionEpoch int32, isr []int32) (zkdata.PartitionState, error)
	// Reassignments lists the reassignments in progress.
	Reassignments(ctx context.Context) (map[controller.TopicPartition]controller.Assignment, error)
	// AllocateProducerIDs claims a producer id block for a broker
	// (allocate_producer_ids.go).
	AllocateProducerIDs(ctx context.Context, id int32, brokerEpoch int64) (zkdata.ProducerIDBlock, error)
}

// SetCluster turns on cluster mode; call it before the broker serves.
func (b *API) SetCluster(c *Cluster) { b.cluster = c }

// controllerCallTimeout bounds a request handled by the active controller's
// loop (ControlledShutdown, ElectLeaders).
const controllerCallTimeout = 30 * time.Second

// notInterBroker answers an inter-broker request on a single node: it is
// not an API a single node knows, so the connection closes, as before.
func notInterBroker(ctx *network.RequestContext) kmsg.Response {
	ctx.CloseConn = true
	return nil
}

// admitController runs a controller request through the fence: nil, or
// STALE_CONTROLLER_EPOCH / STALE_BROKER_EPOCH for the whole request.
func (c *Cluster) admitController(controllerEpoch int32, brokerEpoch int64) *kerr.Error {
	if err := c.Fence.Admit(controllerEpoch, brokerEpoch, c.BrokerEpoch()); err != nil {
		return kerrOf(err)
	}
	return nil
}

// kerrOf is the Kafka error an error wraps, UNKNOWN_SERVER_ERROR if none.
func kerrOf(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// PartitionState is what a LeaderAndIsr request says of one partition (the
// contract's replica.PartitionState, which the broker converts to).
type PartitionState struct {
	Leader, LeaderEpoch, ControllerEpoch int32
	ISR, Replicas                        []int32
	// ZKVersion is the partition epoch: the state znode's version, for
	// version-checked ISR writes.
	ZKVersion int32
	IsNew     bool
}

// ClusterReplicas is what LeaderAndIsr and StopReplica need of the
// partitions (replica.Manager's cluster-mode methods, adapted by the
// broker): roles, their leader epochs and stopping.
type ClusterReplicas interface {
	// LeaderEpoch is the leader epoch this broker holds for a partition
	// (false when it hosts no replica of it).
	LeaderEpoch(topic string, partition int32) (int32, bool)
	MakeLeader(topic string, partition int32, topicID [16]byte, st PartitionState) error
	MakeFollower(topic string, partition int32, topicID [16]byte, st PartitionState) error
	StopReplica(topic string, partition int32, deletePartition bool) error
	// Offline reports whether this broker hosts the partition in an
	// offline log dir (or with an offline log): LeaderAndIsr answers
	// KAFKA_STORAGE_ERROR for it, as Kafka's HostedPartition.Offline.
	Offline(topic string, partition int32) bool
}
