package api

// CreateTopics v0–v7. v1 ValidateOnly and ErrorMessage; v5 flexible and the
// created topic's partitions, replication factor and configs in the answer;
// v7 topic id. In cluster mode the answer waits until this broker's metadata
// shows a leader for every new partition (admin_wait.go). A single node
// accepts replication factor 1 and replica
// assignments that name only itself. A manual assignment may list its
// partitions in any order (clients built on maps do); Kafka's controller
// (ReplicationControlManager) checks only that they are 0..n-1, each once,
// with replica lists of one size, and so does validateAssignment.

import (
	"fmt"
	"slices"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleCreateTopics(_ *network.RequestContext, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	created := map[string]partitionRange{} // cluster mode: to wait for (admin_wait.go)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions = -1
		st.ReplicationFactor = -1
		kerrv, msg := b.createOne(req, rt, seen[rt.Topic] > 1, &st)
		if kerrv != nil {
			failCreatedTopic(&st, kerrv.Code, &msg, kerrv.Message)
		} else if b.cluster != nil && !req.ValidateOnly {
			created[rt.Topic] = partitionRange{id: st.TopicID, to: st.NumPartitions}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if b.cluster != nil && !req.ValidateOnly {
		pending := b.awaitPartitions(req.TimeoutMillis, created)
		for i := range resp.Topics {
			if pending[resp.Topics[i].Topic] {
				failCreatedTopic(&resp.Topics[i], kerr.RequestTimedOut.Code, nil, "")
			}
		}
		return resp // UpdateMetadata tells the KIP-848 coordinator
	}
	b.co.TopicsChanged()
	return resp
}

// failCreatedTopic sets a topic's answer to an error, as Kafka's does:
// the message (fallback when msg is empty, none when msg is nil), no
// partition count or replication factor, and an empty (not null) config
// list with ConfigErrorCode (KIP-525) left at 0.
func failCreatedTopic(st *kmsg.CreateTopicsResponseTopic, code int16, msg *string, fallback string) {
	st.ErrorCode = code
	if msg != nil && *msg == "" {
		*msg = fallback
	}
	st.ErrorMessage = msg
	st.NumPartitions, st.ReplicationFactor = -1, -1
	st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
}

func (b *API) createOne(req *kmsg.CreateTopicsRequest, rt kmsg.CreateTopicsRequestTopic, dup bool, st *kmsg.CreateTopicsResponseTopic) (*kerr.Error, string) {
	if dup {
		return kerr.InvalidRequest, fmt.Sprintf("create topics request contains topic %s more than once", rt.Topic)
	}
	if b.cluster != nil {
		return b.createOneCluster(req, rt, st) // admin_cluster.go
	}
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 || rf != -1 {
			return kerr.InvalidRequest, "both numPartitions or replicationFactor and replicasAssignments were set; both cannot be used at the same time"
		}
		if kerrv, msg := b.validateAssignment(rt.ReplicaAssignment); kerrv != nil {
			return kerrv, msg
		}
		partitions, rf = int32(len(rt.ReplicaAssignment)), 1
	}
	configs := map[string]string{}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return kerr.InvalidConfig, fmt.Sprintf("null value not supported for topic config %s", c.Name)
		}
		configs[c.Name] = *c.Value
	}
	if len(configs) == 0 {
		configs = nil
	}
	t, kerrv, msg := b.rm.CreateTopic(rt.Topic, partitions, rf, configs, req.ValidateOnly)
	if kerrv != nil {
		return kerrv, msg
	}
	if partitions == -1 {
		partitions = b.cfg.NumPartitions
	}
	st.NumPartitions = partitions
	st.ReplicationFactor = 1
	if t != nil {
		st.TopicID = t.Meta.ID
	}
	rc := config.ResolveTopicConfig(b.defaults(), configs)
	for _, d := range config.TopicConfigs {
		v := rc.Values[d.Name]
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name = d.Name
		c.Value = &v
		c.Source = config.ConfigSource(rc, d)
		st.Configs = append(st.Configs, c)
	}
	return nil, ""
}

// validateAssignment checks a manual replica assignment as Kafka's
// ReplicationControlManager.createTopic does, with its
// INVALID_REPLICA_ASSIGNMENT messages: no partition twice, each replica list
// valid (validateReplicas), and the partition ids exactly 0..n-1 in any order.
func (b *API) validateAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) (*kerr.Error, string) {
	seen := make(map[int32]bool, len(as))
	rf := -1
	for _, ra := range as {
		if seen[ra.Partition] {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Found multiple manual partition assignments for partition %d", ra.Partition)
		}
		seen[ra.Partition] = true
		if msg := b.validateReplicas(ra.Replicas, rf); msg != "" {
			return kerr.InvalidReplicaAssignment, msg
		}
		rf = len(ra.Replicas)
	}
	for i := range int32(len(as)) {
		if !seen[i] {
			return kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence"
		}
	}
	return nil, ""
}

// validateReplicas is Kafka's validateManualPartitionAssignment for one
// replica list on a single node: not empty, only registered brokers (this
// one), none twice — checked in ascending id order, so the message names the
// smallest offender, as Kafka's does — and, when rf >= 0, rf replicas. It
// returns Kafka's message, or "" when the list is valid.
func (b *API) validateReplicas(replicas []int32, rf int) string {
	if len(replicas) == 0 {
		return "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if id != b.cfg.NodeID {
			return fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if rf >= 0 && len(replicas) != rf {
		return fmt.Sprintf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	return ""
}
