package api

// LeaderAndIsr v0–v7 (controller → broker, cluster mode only). v1 IsNew,
// v2 partitions grouped by topic and the broker epoch, v3 adding/removing
// replicas, v4 flexible, v5 topic ids and Type (answers grouped by topic
// id), v6 LeaderRecoveryState, v7 IsKRaftController. After the controller
// fence, each partition is admitted by its leader epoch
// (controller.AdmitPartitionState: an older one is STALE_CONTROLLER_EPOCH
// for it), then this broker becomes its leader or a follower of its leader
// (ClusterReplicas); errors are per partition. A partition hosted in an
// offline log dir is KAFKA_STORAGE_ERROR before any epoch check. The
// metadata cache takes the new leaders and ISRs before any role changes,
// ahead of the UpdateMetadata that follows.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleLeaderAndISR(ctx *network.RequestContext, req *kmsg.LeaderAndISRRequest) kmsg.Response {
	c := b.cluster
	if c == nil {
		return notInterBroker(ctx)
	}
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	topics := req.TopicStates
	if req.Version < 2 {
		topics = groupLeaderAndISR(req.PartitionStates)
	}
	brokerEpoch := int64(-1)
	if req.Version >= 2 {
		brokerEpoch = req.BrokerEpoch
	}
	if kerrv := c.admitController(req.ControllerEpoch, brokerEpoch); kerrv != nil {
		resp.ErrorCode = kerrv.Code
		return resp
	}
	c.Cache.NoteLiveLeaders(c.Listener, req.LiveLeaders)
	// Leaders first in the cache, then the roles: a client this broker
	// answers NOT_LEADER_OR_FOLLOWER must find the new leader in its
	// Metadata answer (metacache.Cache.ApplyLeaderAndISR).
	c.Cache.ApplyLeaderAndISR(topics)
	for _, t := range topics {
		rt := kmsg.NewLeaderAndISRResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.PartitionStates {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Topic, rp.Partition = t.Topic, p.Partition
			if kerrv := b.becomeLeaderOrFollower(c, t.Topic, t.TopicID, p); kerrv != nil {
				rp.ErrorCode = kerrv.Code
			}
			if req.Version >= 5 {
				rt.Partitions = append(rt.Partitions, rp)
			} else {
				resp.Partitions = append(resp.Partitions, rp)
			}
		}
		if req.Version >= 5 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp
}

func (b *API) becomeLeaderOrFollower(c *Cluster, topic string, id [16]byte, p kmsg.LeaderAndISRRequestTopicPartition) *kerr.Error {
	if c.Replicas == nil {
		return kerr.KafkaStorageError
	}
	// A replica in an offline log dir answers KAFKA_STORAGE_ERROR whatever
	// the epochs: the controller takes it for an offline replica.
	if c.Replicas.Offline(topic, p.Partition) {
		return kerr.KafkaStorageError
	}
	cur := int32(-1)
	if e, ok := c.Replicas.LeaderEpoch(topic, p.Partition); ok {
		cur = e
	}
	if _, err := controller.AdmitPartitionState(p.LeaderEpoch, cur); err != nil {
		b.log.Info("ignoring LeaderAndIsr partition state", "topic", topic, "partition", p.Partition, "err", err)
		return kerrOf(err)
	}
	st := PartitionState{
		Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ControllerEpoch: p.ControllerEpoch,
		ISR: p.ISR, Replicas: p.Replicas, ZKVersion: p.ZKVersion, IsNew: p.IsNew,
	}
	var err error
	if p.Leader == c.BrokerID {
		err = c.Replicas.MakeLeader(topic, p.Partition, id, st)
	} else {
		err = c.Replicas.MakeFollower(topic, p.Partition, id, st)
	}
	if err != nil {
		b.log.Warn("LeaderAndIsr partition failed", "topic", topic, "partition", p.Partition, "leader", p.Leader, "err", err)
		return kerrOf(err)
	}
	return nil
}

// groupLeaderAndISR groups v0–v1's flat partition states by topic.
func groupLeaderAndISR(ps []kmsg.LeaderAndISRRequestTopicPartition) []kmsg.LeaderAndISRRequestTopicState {
	var out []kmsg.LeaderAndISRRequestTopicState
	idx := map[string]int{}
	for _, p := range ps {
		i, ok := idx[p.Topic]
		if !ok {
			i = len(out)
			idx[p.Topic] = i
			t := kmsg.NewLeaderAndISRRequestTopicState()
			t.Topic = p.Topic
			out = append(out, t)
		}
		out[i].PartitionStates = append(out[i].PartitionStates, p)
	}
	return out
}
