package api

// Topic admin in cluster mode, as Kafka's ZooKeeper-mode brokers: any
// broker takes CreateTopics, DeleteTopics and CreatePartitions and writes
// them to ZooKeeper (zkstore: replica assignment over the registered
// brokers, /admin/delete_topics); the active controller elects leaders and
// tells the brokers. ElectLeaders runs on the active controller
// (NOT_CONTROLLER elsewhere; clients send it to the controller named in
// Metadata).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// storeErr maps a metadata store error to a Kafka error and message.
func storeErr(err error) (*kerr.Error, string) {
	switch {
	case errors.Is(err, controller.ErrTopicExists):
		return kerr.TopicAlreadyExists, err.Error()
	case errors.Is(err, controller.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition, err.Error()
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke, err.Error()
	}
	return kerr.UnknownServerError, err.Error()
}

// createOneCluster is createOne in cluster mode.
func (b *API) createOneCluster(req *kmsg.CreateTopicsRequest, rt kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic) (*kerr.Error, string) {
	if err := replica.ValidTopicName(rt.Topic); err != nil {
		return kerr.InvalidTopicException, err.Error()
	}
	if strings.HasPrefix(rt.Topic, "__") && replica.IsInternal(rt.Topic) {
		return kerr.InvalidRequest, fmt.Sprintf("topic %s is internal", rt.Topic)
	}
	partitions, rf := rt.NumPartitions, rt.ReplicationFactor
	var assignment map[int32][]int32
	if len(rt.ReplicaAssignment) > 0 {
		if partitions != -1 || rf != -1 {
			return kerr.InvalidRequest, "both numPartitions or replicationFactor and replicasAssignments were set; both cannot be used at the same time"
		}
		live := b.cluster.Cache.Snapshot().Brokers
		assignment = map[int32][]int32{}
		for i, ra := range rt.ReplicaAssignment {
			if ra.Partition != int32(i) {
				return kerr.InvalidReplicaAssignment, "partitions in the replica assignment must be consecutive from 0"
			}
			if len(ra.Replicas) == 0 || (i > 0 && len(ra.Replicas) != len(rt.ReplicaAssignment[0].Replicas)) {
				return kerr.InvalidReplicaAssignment, "all partitions must have the same, non-zero number of replicas"
			}
			seen := map[int32]bool{}
			for _, r := range ra.Replicas {
				if seen[r] {
					return kerr.InvalidReplicaAssignment, fmt.Sprintf("duplicate replica %d for partition %d", r, ra.Partition)
				}
				seen[r] = true
				if _, ok := live[r]; !ok {
					return kerr.BrokerNotAvailable, fmt.Sprintf("replica %d of partition %d is not a live broker", r, ra.Partition)
				}
			}
			assignment[ra.Partition] = append([]int32(nil), ra.Replicas...)
		}
		partitions, rf = int32(len(rt.ReplicaAssignment)), int16(len(rt.ReplicaAssignment[0].Replicas))
	}
	if partitions == -1 {
		partitions = b.cfg.NumPartitions
	}
	if rf == -1 {
		rf = b.cfg.DefaultReplicationFactor
	}
	if partitions <= 0 {
		return kerr.InvalidPartitions, "number of partitions must be larger than 0"
	}
	if rf <= 0 {
		return kerr.InvalidReplicationFactor, "replication factor must be larger than 0"
	}
	if n := len(b.cluster.Cache.Snapshot().Brokers); int(rf) > n && assignment == nil {
		return kerr.InvalidReplicationFactor, fmt.Sprintf("replication factor: %d larger than available brokers: %d", rf, n)
	}
	configs := map[string]string{}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return kerr.InvalidConfig, fmt.Sprintf("null value not supported for topic config %s", c.Name)
		}
		configs[c.Name] = *c.Value
	}
	if err := config.ValidateTopicConfigs(configs); err != nil {
		return kerr.InvalidConfig, err.Error()
	}
	if len(configs) == 0 {
		configs = nil
	}
	if _, ok := b.store.Topic(rt.Topic); ok {
		return kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", rt.Topic)
	}
	t := controller.Topic{Name: rt.Topic, ID: controller.NewTopicID(), Partitions: partitions, ReplicationFactor: rf, Configs: configs}
	if !req.ValidateOnly {
		var err error
		if assignment != nil {
			s, ok := b.store.(interface {
				CreateTopicWithAssignment(controller.Topic, map[int32][]int32) error
			})
			if !ok {
				return kerr.InvalidReplicaAssignment, "the metadata store takes no replica assignment"
			}
			err = s.CreateTopicWithAssignment(t, assignment)
		} else {
			err = b.store.CreateTopic(t)
		}
		if err != nil {
			return storeErr(err)
		}
		st.TopicID = t.ID
	}
	st.NumPartitions, st.ReplicationFactor = partitions, rf
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

// deleteTopicCluster queues a topic for deletion by the controller; a
// topic given by id is looked up in the metadata cache.
func (b *API) deleteTopicCluster(name *string, id [16]byte) (*string, [16]byte, *kerr.Error) {
	s := b.cluster.Cache.Snapshot()
	if name == nil || *name == "" {
		t := s.TopicByID(id)
		if t == nil {
			return name, id, kerr.UnknownTopicID
		}
		n := t.Name
		name = &n
	} else if t := s.Topics[*name]; t != nil {
		id = t.ID
	}
	if replica.IsInternal(*name) {
		return name, id, kerr.TopicAuthorizationFailed
	}
	if err := b.store.DeleteTopic(*name); err != nil {
		kerrv, _ := storeErr(err)
		return name, id, kerrv
	}
	return name, id, nil
}

// createPartitionsCluster raises a topic's partition count in ZooKeeper.
// Manual assignments are refused (zkstore continues Kafka's assignment
// pattern only).
func (b *API) createPartitionsCluster(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) (*kerr.Error, string) {
	t, ok := b.store.Topic(rt.Topic)
	if !ok {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	if rt.Count <= t.Partitions {
		return kerr.InvalidPartitions, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", t.Partitions, rt.Count)
	}
	if len(rt.Assignment) > 0 {
		return kerr.InvalidReplicaAssignment, "manual replica assignment of new partitions is not supported in cluster mode"
	}
	if validateOnly {
		return nil, ""
	}
	if err := b.store.AddPartitions(rt.Topic, rt.Count); err != nil {
		return storeErr(err)
	}
	return nil, ""
}

// handleElectLeadersCluster runs the election on the active controller.
func (b *API) handleElectLeadersCluster(req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if req.Version >= 1 && req.ElectionType != 0 && req.ElectionType != 1 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	c := b.cluster
	if !c.Controller.Active() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	strategy := controller.ElectPreferred
	if req.Version >= 1 && req.ElectionType == 1 {
		strategy = controller.ElectOffline
	}
	var tps []controller.TopicPartition
	all := req.Topics == nil
	if all {
		s := c.Cache.Snapshot()
		for _, n := range s.TopicNames() {
			for p := range s.Topics[n].Partitions {
				tps = append(tps, controller.TopicPartition{Topic: n, Partition: p})
			}
		}
	}
	for _, rt := range req.Topics {
		for _, p := range rt.Partitions {
			tps = append(tps, controller.TopicPartition{Topic: rt.Topic, Partition: p})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerCallTimeout)
	defer cancel()
	failed, err := c.Controller.ElectLeaders(ctx, tps, strategy)
	if err != nil {
		resp.ErrorCode = kerrOf(err).Code
		return resp
	}
	idx := map[string]int{}
	for _, tp := range tps {
		perr := failed[tp]
		kerrv := kerrOf(perr)
		if all && errors.Is(perr, kerr.ElectionNotNeeded) {
			continue // as Kafka: "all partitions" leaves out those needing none
		}
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(resp.Topics)
			idx[tp.Topic] = i
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = tp.Topic
			resp.Topics = append(resp.Topics, st)
		}
		sp := kmsg.NewElectLeadersResponseTopicPartition()
		sp.Partition = tp.Partition
		if kerrv != nil {
			sp.ErrorCode = kerrv.Code
			msg := perr.Error()
			sp.ErrorMessage = &msg
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, sp)
	}
	return resp
}
