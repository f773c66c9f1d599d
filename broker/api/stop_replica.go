package api

// StopReplica v0–v4 (controller → broker, cluster mode only). v0–v2 carry
// one DeletePartitions flag for all partitions (v1 grouped by topic, with
// the broker epoch; v2 flexible); v3 per-partition leader epoch and delete
// flag; v4 IsKRaftController. After the controller fence, each partition
// stops being led or followed; Delete removes its log. A leader epoch of
// -1 or controller.EpochDuringDelete always applies, otherwise only one at
// least the partition's current epoch (FENCED_LEADER_EPOCH, as Kafka).

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleStopReplica(ctx *network.RequestContext, req *kmsg.StopReplicaRequest) kmsg.Response {
	c := b.cluster
	if c == nil {
		return notInterBroker(ctx)
	}
	resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
	brokerEpoch := int64(-1)
	if req.Version >= 1 {
		brokerEpoch = req.BrokerEpoch
	}
	if kerrv := c.admitController(req.ControllerEpoch, brokerEpoch); kerrv != nil {
		resp.ErrorCode = kerrv.Code
		return resp
	}
	for _, t := range req.Topics {
		states := t.PartitionStates
		if req.Version < 3 {
			parts := t.Partitions
			if req.Version == 0 {
				parts = []int32{t.Partition}
			}
			for _, p := range parts {
				states = append(states, kmsg.StopReplicaRequestTopicPartitionState{Partition: p, LeaderEpoch: -1, Delete: req.DeletePartitions})
			}
		}
		for _, p := range states {
			rp := kmsg.NewStopReplicaResponsePartition()
			rp.Topic, rp.Partition = t.Topic, p.Partition
			if kerrv := b.stopReplica(c, t.Topic, p); kerrv != nil {
				rp.ErrorCode = kerrv.Code
			}
			resp.Partitions = append(resp.Partitions, rp)
		}
	}
	return resp
}

func (b *API) stopReplica(c *Cluster, topic string, p kmsg.StopReplicaRequestTopicPartitionState) *kerr.Error {
	if c.Replicas == nil {
		return kerr.KafkaStorageError
	}
	if p.LeaderEpoch != -1 && p.LeaderEpoch != controller.EpochDuringDelete {
		if cur, ok := c.Replicas.LeaderEpoch(topic, p.Partition); ok && p.LeaderEpoch < cur {
			return kerr.FencedLeaderEpoch
		}
	}
	if err := c.Replicas.StopReplica(topic, p.Partition, p.Delete); err != nil {
		b.log.Warn("StopReplica failed", "topic", topic, "partition", p.Partition, "err", err)
		return kerrOf(err)
	}
	return nil
}
