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
		var kerrv *kerr.Error
		var msg string
		if assignment, kerrv, msg = manualTopicAssignment(rt.ReplicaAssignment); kerrv != nil {
			return kerrv, msg
		}
		partitions, rf = int32(len(assignment)), int16(len(assignment[0]))
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

// manualTopicAssignment checks a CreateTopics replica assignment as Kafka
// 3.9's ZooKeeper mode does (ZkAdminManager, AdminZkClient.validateTopicCreate),
// with its messages: every partition with one replica count, no broker
// twice in a list, and the partition ids 0..n-1 in any order (clients that
// build the assignment from a map send it unordered). As there, brokers
// are not checked against the live ones: a partition on a broker that is
// down has no leader until it returns.
func manualTopicAssignment(as []kmsg.CreateTopicsRequestTopicReplicaAssignment) (map[int32][]int32, *kerr.Error, string) {
	assignment := make(map[int32][]int32, len(as))
	for _, ra := range as {
		if _, dup := assignment[ra.Partition]; dup {
			// Kafka 3.9 keeps the last; KRaft refuses, as here.
			return nil, kerr.InvalidReplicaAssignment, fmt.Sprintf("Found multiple manual partition assignments for partition %d", ra.Partition)
		}
		assignment[ra.Partition] = append([]int32(nil), ra.Replicas...)
	}
	sizes := map[int]bool{}
	for _, rs := range assignment {
		sizes[len(rs)] = true
	}
	if len(sizes) != 1 {
		return nil, kerr.InvalidReplicaAssignment, "All partitions should have the same number of replicas"
	}
	for p, rs := range assignment {
		if len(rs) == 0 {
			return nil, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0."
		}
		if repeatsBroker(rs) {
			return nil, kerr.InvalidReplicaAssignment, fmt.Sprintf("Duplicate replica assignment found: partition %d has replicas %v", p, rs)
		}
	}
	for p := range int32(len(assignment)) {
		if _, ok := assignment[p]; !ok {
			return nil, kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence"
		}
	}
	return assignment, nil, ""
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

// createPartitionsCluster raises a topic's partition count in ZooKeeper and
// returns the partitions it creates, to wait for. A manual assignment is
// checked as Kafka 3.9's ZkAdminManager.createPartitions does (live brokers
// only, one list per new partition, the topic's replication factor), with
// its messages; without one zkstore continues Kafka's assignment pattern.
func (b *API) createPartitionsCluster(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) (partitionRange, *kerr.Error, string) {
	t, ok := b.store.Topic(rt.Topic)
	if !ok {
		return partitionRange{}, kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	created := partitionRange{id: t.ID, from: t.Partitions, to: rt.Count}
	if rt.Count <= t.Partitions {
		return created, kerr.InvalidPartitions, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", t.Partitions, rt.Count)
	}
	var given [][]int32
	if rt.Assignment != nil {
		live := b.cluster.Cache.Snapshot()
		if kerrv, msg := checkNewPartitions(rt, t.Partitions, t.ReplicationFactor, live.BrokerIDs()); kerrv != nil {
			return created, kerrv, msg
		}
		for _, a := range rt.Assignment {
			given = append(given, a.Replicas)
		}
	}
	if validateOnly {
		return created, nil, ""
	}
	s, ok := b.store.(interface {
		AddPartitionsWithAssignment(name string, total int32, given [][]int32) error
	})
	if !ok {
		return created, kerr.InvalidReplicaAssignment, "the metadata store takes no replica assignment"
	}
	if err := s.AddPartitionsWithAssignment(rt.Topic, rt.Count, given); err != nil {
		kerrv, msg := storeErr(err)
		return created, kerrv, msg
	}
	return created, nil, ""
}

// checkNewPartitions is Kafka 3.9's check of a CreatePartitions manual
// assignment (ZkAdminManager.createPartitions, then
// AdminZkClient.validateReplicaAssignment), with its messages.
func checkNewPartitions(rt kmsg.CreatePartitionsRequestTopic, cur int32, rf int16, live []int32) (*kerr.Error, string) {
	isLive := map[int32]bool{}
	for _, id := range live {
		isLive[id] = true
	}
	var unknown []string
	seenUnknown := map[int32]bool{}
	for _, a := range rt.Assignment {
		for _, r := range a.Replicas {
			if !isLive[r] && !seenUnknown[r] {
				seenUnknown[r] = true
				unknown = append(unknown, fmt.Sprint(r))
			}
		}
	}
	if len(unknown) > 0 {
		return kerr.InvalidReplicaAssignment, fmt.Sprintf("Unknown broker(s) in replica assignment: %s.", strings.Join(unknown, ", "))
	}
	if inc := rt.Count - cur; int32(len(rt.Assignment)) != inc {
		return kerr.InvalidReplicaAssignment, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", inc, len(rt.Assignment))
	}
	for i, a := range rt.Assignment {
		p := cur + int32(i)
		if len(a.Replicas) == 0 {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Cannot have replication factor of 0 for partition id %d.", p)
		}
		if repeatsBroker(a.Replicas) {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Duplicate brokers not allowed in replica assignment: %s for partition id %d.", joinIDs(a.Replicas), p)
		}
		if len(a.Replicas) != int(rf) {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Inconsistent replication factor between partitions, partition 0 has %d while partitions [%d] have replication factors [%d], respectively.", rf, p, len(a.Replicas))
		}
	}
	return nil, ""
}

// repeatsBroker reports whether a replica list names a broker twice.
func repeatsBroker(replicas []int32) bool {
	seen := make(map[int32]bool, len(replicas))
	for _, r := range replicas {
		if seen[r] {
			return true
		}
		seen[r] = true
	}
	return false
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
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
