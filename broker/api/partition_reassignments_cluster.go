package api

// AlterPartitionReassignments and ListPartitionReassignments in cluster
// mode (KIP-455): served by the active controller, which moves each
// partition's replicas through controller.Machine.OnReassign (add the
// target replicas, let them catch up into the ISR, move leadership into
// the target, remove the others); other brokers answer NOT_CONTROLLER, and
// clients send these requests to the controller Metadata names. A null
// replica list cancels the partition's reassignment in progress (its
// target becomes its original replicas), NO_REASSIGNMENT_IN_PROGRESS when
// there is none. With AllowReplicationFactorChange false (v1) a target of
// another size than the original replicas is INVALID_REPLICATION_FACTOR.

import (
	"context"
	"fmt"
	"sort"

	"github.com/kbroker/kbroker/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleAlterPartitionAssignmentsCluster(req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	c := b.cluster
	if !c.Controller.Active() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerCallTimeout)
	defer cancel()
	inProgress, err := c.Controller.Reassignments(ctx)
	if err != nil {
		resp.ErrorCode = kerrOf(err).Code
		return resp
	}
	s := c.Cache.Snapshot()
	errs := map[controller.TopicPartition]error{}
	targets := map[controller.TopicPartition][]int32{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := controller.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			st, ok := s.Partition(rt.Topic, rp.Partition)
			cur, moving := inProgress[tp]
			origin := st.Replicas
			if moving {
				origin = cur.Origin()
			}
			switch {
			case !ok:
				errs[tp] = fmt.Errorf("Unable to find partition %s:%d.: %w", rt.Topic, rp.Partition, kerr.UnknownTopicOrPartition)
			case rp.Replicas == nil && !moving:
				errs[tp] = kerr.NoReassignmentInProgress
			case rp.Replicas == nil:
				targets[tp] = origin
			case len(rp.Replicas) == 0:
				errs[tp] = fmt.Errorf("The manual partition assignment includes an empty replica list.: %w", kerr.InvalidReplicaAssignment)
			case !allowRF && len(rp.Replicas) != len(origin):
				errs[tp] = fmt.Errorf("The replication factor is changed from %d to %d: %w", len(origin), len(rp.Replicas), kerr.InvalidReplicationFactor)
			default:
				targets[tp] = rp.Replicas
			}
		}
	}
	if len(targets) > 0 {
		failed, err := c.Controller.Reassign(ctx, targets)
		if err != nil {
			resp.ErrorCode = kerrOf(err).Code
			msg := err.Error()
			resp.ErrorMessage = &msg
			return resp
		}
		for tp, err := range failed {
			errs[tp] = err
		}
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			if err := errs[controller.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]; err != nil {
				sp.ErrorCode = kerrOf(err).Code
				if err != kerr.NoReassignmentInProgress { // Kafka sends no message there
					msg := err.Error()
					sp.ErrorMessage = &msg
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (b *API) handleListPartitionReassignmentsCluster(req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	c := b.cluster
	if !c.Controller.Active() {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerCallTimeout)
	defer cancel()
	all, err := c.Controller.Reassignments(ctx)
	if err != nil {
		resp.ErrorCode = kerrOf(err).Code
		return resp
	}
	// Null topics: every reassignment; else the named partitions that are
	// moving (unknown ones are skipped, as Kafka's controller does).
	var tps []controller.TopicPartition
	if req.Topics == nil {
		for tp := range all {
			tps = append(tps, tp)
		}
	} else {
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				tp := controller.TopicPartition{Topic: rt.Topic, Partition: p}
				if _, ok := all[tp]; ok {
					tps = append(tps, tp)
				}
			}
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	for _, tp := range tps {
		a := all[tp]
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.Replicas = append([]int32{}, a.Replicas...)
		rp.AddingReplicas = append([]int32{}, a.Adding...)
		rp.RemovingReplicas = append([]int32{}, a.Removing...)
		rt := &resp.Topics[len(resp.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp
}
