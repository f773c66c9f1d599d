package api

// CreateTopics v0–v7. v1 ValidateOnly and ErrorMessage; v5 flexible and the
// created topic's partitions, replication factor and configs in the answer;
// v7 topic id. A single node accepts replication factor 1 and replica
// assignments that name only itself.

import (
	"fmt"

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
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions = -1
		st.ReplicationFactor = -1
		kerrv, msg := b.createOne(req, rt, seen[rt.Topic] > 1, &st)
		if kerrv != nil {
			st.ErrorCode = kerrv.Code
			if msg == "" {
				msg = kerrv.Message
			}
			st.ErrorMessage = &msg
			// Kafka leaves ConfigErrorCode (KIP-525: the error of
			// describing the created topic's configs) at 0 and the
			// list empty, not null, whatever failed.
			st.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.co.TopicsChanged()
	return resp
}

func (b *API) createOne(req *kmsg.CreateTopicsRequest, rt kmsg.CreateTopicsRequestTopic, dup bool, st *kmsg.CreateTopicsResponseTopic) (*kerr.Error, string) {
	if dup {
		return kerr.InvalidRequest, fmt.Sprintf("create topics request contains topic %s more than once", rt.Topic)
	}
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 || rf != -1 {
			return kerr.InvalidRequest, "both numPartitions or replicationFactor and replicasAssignments were set; both cannot be used at the same time"
		}
		for i, ra := range rt.ReplicaAssignment {
			if ra.Partition != int32(i) {
				return kerr.InvalidReplicaAssignment, "partitions in the replica assignment must be consecutive from 0"
			}
			if len(ra.Replicas) != 1 || ra.Replicas[0] != b.cfg.NodeID {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("replica assignment for partition %d names brokers other than %d", ra.Partition, b.cfg.NodeID)
			}
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
	rc := config.ResolveTopicConfig(b.cfg, configs)
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
