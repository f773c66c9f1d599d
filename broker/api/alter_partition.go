package api

// AlterPartition v0–v3 (KIP-497; leader → controller, cluster mode only).
// A Kafka 3.x leader proposes a partition's new ISR to the controller
// instead of writing it to ZooKeeper itself. v1 added the leader recovery
// state (KIP-704), v2 topic ids instead of names, v3 the broker epoch of
// each ISR member (KIP-903; -1 from a ZooKeeper-mode Kafka broker). Only
// the active controller serves it: elsewhere NOT_CONTROLLER for the whole
// request, and Kafka's leader looks the controller up again and retries.
// Kafka's leaders of a kbroker-controlled cluster need it to admit a
// follower back into the ISR or to drop a lagging one. kbroker's own
// leaders write the ISR and notify (/isr_change_notification).

import (
	"context"
	"errors"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleAlterPartition(ctx *network.RequestContext, req *kmsg.AlterPartitionRequest) kmsg.Response {
	c := b.cluster
	if c == nil {
		return notInterBroker(ctx)
	}
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if !c.Controller.Active() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	names := map[[16]byte]string{}
	if req.Version >= 2 {
		for _, t := range b.store.Topics() {
			names[t.ID] = t.Name
		}
	}
	cctx, cancel := context.WithTimeout(context.Background(), controllerCallTimeout)
	defer cancel()
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		name := rt.Topic
		if req.Version >= 2 {
			name = names[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			isr := rp.NewISR
			if req.Version >= 3 {
				isr = make([]int32, 0, len(rp.NewEpochISR))
				for _, m := range rp.NewEpochISR {
					isr = append(isr, m.BrokerID)
				}
			}
			if name == "" {
				sp.ErrorCode = kerr.UnknownTopicID.Code
				if req.Version < 2 {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if rp.LeaderRecoveryState != 0 {
				// kbroker writes no RECOVERING state (unclean
				// elections recover at once): a leader reporting
				// one is answered as Kafka answers an invalid
				// transition.
				sp.ErrorCode = kerr.InvalidRequest.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			tp := controller.TopicPartition{Topic: name, Partition: rp.Partition}
			ps, err := c.Controller.AlterPartition(cctx, req.BrokerID, req.BrokerEpoch, tp, rp.LeaderEpoch, rp.PartitionEpoch, isr)
			if errors.Is(err, kerr.StaleBrokerEpoch) || errors.Is(err, kerr.NotController) {
				// Kafka answers these for the whole request.
				resp.ErrorCode = kerrOf(err).Code
				resp.Topics = nil
				return resp
			}
			if err != nil {
				b.log.Info("AlterPartition refused", "broker", req.BrokerID, "topic", name, "partition", rp.Partition, "err", err)
				sp.ErrorCode = kerrOf(err).Code
			} else {
				b.log.Info("AlterPartition", "broker", req.BrokerID, "topic", name, "partition", rp.Partition, "isr", ps.ISR, "partition_epoch", ps.ZkVersion)
			}
			sp.LeaderID, sp.LeaderEpoch, sp.ISR, sp.PartitionEpoch = ps.Leader, ps.LeaderEpoch, ps.ISR, ps.ZkVersion
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
