package api

// Metadata, DescribeCluster and FindCoordinator in cluster mode answer from
// the metadata cache (the controller's UpdateMetadata requests), as Kafka's
// ZooKeeper-mode brokers do: every live broker at its endpoint on the
// listener the request came in on, each partition's leader, leader epoch,
// replicas, ISR and offline replicas, and the controller's id. A topic not
// in the cache is UNKNOWN_TOPIC_OR_PARTITION unless the request may
// auto-create it: then it is created, or, when ZooKeeper already has it (not
// yet propagated, or being deleted), LEADER_NOT_AVAILABLE, so clients
// retry, as Kafka's TopicExistsException answer. Produce and Fetch answers that say NOT_LEADER_OR_FOLLOWER get the
// current-leader hints of their newer versions (leaderHints*).

import (
	"errors"
	"fmt"
	"sort"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/metacache"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listenerOf is the listener whose endpoints an answer carries: the one the
// request came in on, else the first advertised.
func (b *API) listenerOf(ctx *network.RequestContext) string {
	if ctx != nil && ctx.Listener.Name != "" {
		return ctx.Listener.Name
	}
	return b.cfg.AdvertisedListeners[0].Name
}

// controllerID is the active controller as this broker knows it.
func (c *Cluster) controllerID(s *metacache.Snapshot) int32 {
	if id := c.Controller.ControllerID(); id >= 0 {
		return id
	}
	return s.ControllerID
}

func (b *API) handleMetadataCluster(ctx *network.RequestContext, req *kmsg.MetadataRequest) kmsg.Response {
	c := b.cluster
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	s := c.Cache.Snapshot()
	listener := b.listenerOf(ctx)
	for _, id := range s.BrokerIDs() {
		br := s.Brokers[id]
		if e, ok := br.Endpoint(listener); ok {
			resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: id, Host: e.Host, Port: e.Port, Rack: br.Rack})
		}
	}
	cid := b.store.ClusterID()
	resp.ClusterID = &cid
	resp.ControllerID = c.controllerID(s)
	resp.AuthorizedOperations = authorizedOps(req.IncludeClusterAuthorizedOperations, clusterOps)

	if req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0) {
		for _, n := range s.TopicNames() {
			resp.Topics = append(resp.Topics, b.metadataTopicCluster(req, s, listener, s.Topics[n]))
		}
		return resp
	}
	autoCreate := b.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			if t := s.TopicByID(rt.TopicID); t != nil {
				resp.Topics = append(resp.Topics, b.metadataTopicCluster(req, s, listener, t))
				continue
			}
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		if t := s.Topics[name]; t != nil {
			resp.Topics = append(resp.Topics, b.metadataTopicCluster(req, s, listener, t))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		mt.IsInternal = replica.IsInternal(name)
		switch {
		case replica.ValidTopicName(name) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		case !autoCreate || replica.IsInternal(name):
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case b.storeHasTopic(name):
			mt.ErrorCode = kerr.LeaderNotAvailable.Code // created, not yet propagated, or being deleted
		case !b.mayAutoCreate(ctx, name):
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		default:
			err := b.store.CreateTopic(controller.Topic{Name: name, Partitions: b.cfg.NumPartitions, ReplicationFactor: b.cfg.DefaultReplicationFactor})
			switch {
			case err == nil, errors.Is(err, controller.ErrTopicExists):
				mt.ErrorCode = kerr.LeaderNotAvailable.Code
			default:
				b.log.Warn("auto-creating topic failed", clientAttrs(ctx, "topic", name, "err", err)...)
				mt.ErrorCode = kerrOf(err).Code
			}
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

func (b *API) metadataTopicCluster(req *kmsg.MetadataRequest, s *metacache.Snapshot, listener string, t *metacache.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = replica.IsInternal(name)
	mt.AuthorizedOperations = authorizedOps(req.IncludeTopicAuthorizedOperations, topicOps)
	idx := make([]int32, 0, len(t.Partitions))
	for p := range t.Partitions {
		idx = append(idx, p)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	for _, i := range idx {
		st := t.Partitions[i]
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = i
		mp.LeaderEpoch = st.LeaderEpoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = st.Replicas, st.ISR, st.OfflineReplicas
		mp.Leader = -1
		if br, ok := s.Brokers[st.Leader]; ok {
			if _, ok := br.Endpoint(listener); ok {
				mp.Leader = st.Leader
			}
		}
		if mp.Leader == -1 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func (b *API) handleDescribeClusterCluster(ctx *network.RequestContext, req *kmsg.DescribeClusterRequest) kmsg.Response {
	c := b.cluster
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp
	}
	s := c.Cache.Snapshot()
	resp.EndpointType = 1
	resp.ClusterID = b.store.ClusterID()
	resp.ControllerID = c.controllerID(s)
	resp.ClusterAuthorizedOperations = authorizedOps(req.IncludeClusterAuthorizedOperations, clusterOps)
	listener := b.listenerOf(ctx)
	for _, id := range s.BrokerIDs() {
		br := s.Brokers[id]
		if e, ok := br.Endpoint(listener); ok {
			resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: id, Host: e.Host, Port: e.Port, Rack: br.Rack})
		}
	}
	return resp
}

// storeHasTopic reports whether ZooKeeper holds the topic.
func (b *API) storeHasTopic(name string) bool {
	_, ok := b.store.Topic(name)
	return ok
}

// coordinatorTopic is the internal topic and partition that coordinates key
// (0 group, 1 transactional id), creating the topic in ZooKeeper on first
// use with its replication factor capped at the live brokers.
func (b *API) coordinatorPartition(s *metacache.Snapshot, keyType int8, key string) (string, int32, *kerr.Error) {
	var (
		topic string
		n     int32
		rf    int16
		cfgs  map[string]string
	)
	switch keyType {
	case 0:
		topic, n, rf = "__consumer_offsets", b.cfg.OffsetsTopicNumPartitions, b.cfg.Cluster.OffsetsTopicReplicationFactor
		cfgs = map[string]string{"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": fmt.Sprint(b.cfg.OffsetsTopicSegmentBytes)}
	case 1:
		topic, n, rf = "__transaction_state", b.cfg.TransactionStateLogNumPartitions, b.cfg.Cluster.TxnStateReplicationFactor
		cfgs = map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed", "segment.bytes": fmt.Sprint(b.cfg.TransactionStateLogSegmentBytes),
			"min.insync.replicas": fmt.Sprint(b.cfg.Cluster.TxnStateMinISR)}
	default:
		return "", 0, kerr.InvalidRequest
	}
	if t := s.Topics[topic]; t != nil {
		n = int32(len(t.Partitions))
	} else if _, ok := b.store.Topic(topic); !ok {
		rf = config.InternalReplicationFactor(rf, len(s.Brokers))
		err := b.store.CreateTopic(controller.Topic{Name: topic, Partitions: n, ReplicationFactor: rf, Configs: cfgs})
		if err != nil && !errors.Is(err, controller.ErrTopicExists) {
			b.log.Error("creating internal topic", "topic", topic, "err", err)
		}
		return topic, -1, kerr.CoordinatorNotAvailable
	}
	if keyType == 0 {
		return topic, group.PartitionFor(key, n), nil
	}
	return topic, txn.PartitionFor(key, n), nil
}

// findCoordinatorCluster answers one key: the leader of its partition of
// the internal topic, COORDINATOR_NOT_AVAILABLE while there is none.
func (b *API) findCoordinatorCluster(ctx *network.RequestContext, keyType int8, key string) (kmsg.FindCoordinatorResponseCoordinator, *kerr.Error) {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key = key
	c.NodeID, c.Host, c.Port = -1, "", -1
	s := b.cluster.Cache.Snapshot()
	topic, p, kerrv := b.coordinatorPartition(s, keyType, key)
	if kerrv != nil {
		return c, kerrv
	}
	_, e, ok := s.LeaderEndpoint(topic, p, b.listenerOf(ctx))
	if !ok {
		return c, kerr.CoordinatorNotAvailable
	}
	st, _ := s.Partition(topic, p)
	c.NodeID, c.Host, c.Port = st.Leader, e.Host, e.Port
	return c, nil
}

// leaderHintsProduce fills, for partitions answered NOT_LEADER_OR_FOLLOWER
// (or unknown here while the cache names another leader, which becomes
// NOT_LEADER_OR_FOLLOWER as in Kafka), the current leader (v10+) and the
// leaders' endpoints (NodeEndpoints, v10+), so clients re-route without a
// metadata round trip (KIP-951).
func (b *API) leaderHintsProduce(ctx *network.RequestContext, resp *kmsg.ProduceResponse) {
	c := b.cluster
	if c == nil {
		return
	}
	s := c.Cache.Snapshot()
	listener := b.listenerOf(ctx)
	seen := map[int32]bool{}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			st, e, ok := b.redirect(s, listener, rt.Topic, rp.Partition, rp.ErrorCode)
			if !ok {
				continue
			}
			rp.ErrorCode = kerr.NotLeaderForPartition.Code
			if resp.Version < 10 {
				continue
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = st.Leader, st.LeaderEpoch
			if !seen[st.Leader] {
				seen[st.Leader] = true
				resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: st.Leader, Host: e.Host, Port: e.Port, Rack: s.Brokers[st.Leader].Rack})
			}
		}
	}
}

// leaderHintsFetch is leaderHintsProduce for Fetch: CurrentLeader v12+,
// NodeEndpoints v16+.
func (b *API) leaderHintsFetch(ctx *network.RequestContext, resp *kmsg.FetchResponse) {
	c := b.cluster
	if c == nil {
		return
	}
	s := c.Cache.Snapshot()
	listener := b.listenerOf(ctx)
	seen := map[int32]bool{}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		name := rt.Topic
		if resp.Version >= 13 {
			t := s.TopicByID(rt.TopicID)
			if t == nil {
				continue
			}
			name = t.Name
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			st, e, ok := b.redirect(s, listener, name, rp.Partition, rp.ErrorCode)
			if !ok {
				continue
			}
			rp.ErrorCode = kerr.NotLeaderForPartition.Code
			if resp.Version < 12 {
				continue
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = st.Leader, st.LeaderEpoch
			if resp.Version >= 16 && !seen[st.Leader] {
				seen[st.Leader] = true
				resp.Brokers = append(resp.Brokers, kmsg.FetchResponseBroker{NodeID: st.Leader, Host: e.Host, Port: e.Port, Rack: s.Brokers[st.Leader].Rack})
			}
		}
	}
}

// redirect reports whether a partition's answer should send the client to
// another broker: the answer is NOT_LEADER_OR_FOLLOWER or
// UNKNOWN_TOPIC_OR_PARTITION, and the cache names a live leader other than
// this broker.
func (b *API) redirect(s *metacache.Snapshot, listener, topic string, partition int32, code int16) (metacache.Partition, metacache.Endpoint, bool) {
	if code != kerr.NotLeaderForPartition.Code && code != kerr.UnknownTopicOrPartition.Code {
		return metacache.Partition{}, metacache.Endpoint{}, false
	}
	st, e, ok := s.LeaderEndpoint(topic, partition, listener)
	if !ok || st.Leader == b.cluster.BrokerID {
		return st, e, false
	}
	return st, e, true
}

func (b *API) handleFindCoordinatorCluster(ctx *network.RequestContext, req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c, kerrv := b.findCoordinatorCluster(ctx, req.CoordinatorType, key)
		if kerrv != nil {
			c.ErrorCode = kerrv.Code
			msg := kerrv.Message
			c.ErrorMessage = &msg
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
	}
	return resp
}
