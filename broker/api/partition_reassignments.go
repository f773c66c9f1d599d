package api

// AlterPartitionReassignments v0–v1 and ListPartitionReassignments v0
// (KIP-455) on a single node. v1 of AlterPartitionReassignments added
// AllowReplicationFactorChange (default true), echoed in the response.
//
// One broker can hold only the replica set it has, [node.id], so no
// reassignment is ever in progress: ListPartitionReassignments answers an
// empty list (unknown topics are skipped, as Kafka's controller skips them).
// AlterPartitionReassignments checks each partition as Kafka's
// ReplicationControlManager does, with its codes and messages: an unknown
// topic or partition is UNKNOWN_TOPIC_OR_PARTITION; a cancellation (null
// replicas) NO_REASSIGNMENT_IN_PROGRESS without a message; the replica list
// goes through the manual-assignment checks of CreateTopics
// (validateReplicas), then a replication factor change when not allowed is
// INVALID_REPLICATION_FACTOR — the order and messages of Kafka 4.4.0,
// checked against it; so the only list that passes is [node.id] — a reassignment to the replicas the
// partition already has, which succeeds and changes nothing. In cluster mode
// the controller moves replicas (partition_reassignments_cluster.go).

import (
	"fmt"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleAlterPartitionAssignments(_ *network.RequestContext, req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	if b.cluster != nil {
		return b.handleAlterPartitionAssignmentsCluster(req) // partition_reassignments_cluster.go
	}
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			if kerrv, msg := b.reassign(rt.Topic, rp, allowRF); kerrv != nil {
				sp.ErrorCode = kerrv.Code
				if msg != "" {
					sp.ErrorMessage = &msg
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// reassign checks one partition's reassignment; on one node the only valid
// target is the current replica set, which needs no change.
func (b *API) reassign(topic string, rp kmsg.AlterPartitionAssignmentsRequestTopicPartition, allowRF bool) (*kerr.Error, string) {
	t := b.rm.TopicByName(topic)
	if t == nil {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find a topic named %s.", topic)
	}
	if rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find partition %s:%d.", topic, rp.Partition)
	}
	if rp.Replicas == nil {
		return kerr.NoReassignmentInProgress, "" // Kafka sends no message here
	}
	if msg := b.validateReplicas(rp.Replicas, -1); msg != "" {
		return kerr.InvalidReplicaAssignment, msg
	}
	// Unreachable on one node today (the only valid list is [node.id]),
	// kept in Kafka's order for when the cluster brings more brokers.
	const current = 1 // replicas of every partition on a single node
	if !allowRF && len(rp.Replicas) != current {
		return kerr.InvalidReplicationFactor, fmt.Sprintf("The replication factor is changed from %d to %d", current, len(rp.Replicas))
	}
	return nil, ""
}

func (b *API) handleListPartitionReassignments(_ *network.RequestContext, req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	if b.cluster != nil {
		return b.handleListPartitionReassignmentsCluster(req) // partition_reassignments_cluster.go
	}
	// No reassignment is ever in progress on one node.
	return req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
}
