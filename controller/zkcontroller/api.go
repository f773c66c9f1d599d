package zkcontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrNotController answers requests that only the active controller serves.
var ErrNotController = fmt.Errorf("this broker is not the controller: %w", kerr.NotController)

// call runs f on the loop and waits for it.
func (c *Controller) call(ctx context.Context, f func() error) error {
	res := make(chan error, 1)
	ev := event{kind: evCall, call: func() {
		if c.machine == nil {
			res <- ErrNotController
			return
		}
		res <- f()
	}}
	select {
	case c.events <- ev:
	case <-c.done:
		return errors.New("controller closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// apply finishes a decision of the machine, on the loop: one that found a
// newer controller makes this one resign (ErrNotController), another error
// is returned as it is, and otherwise the decision's output is carried out.
func (c *Controller) apply(out controller.Output, err error) error {
	if err != nil {
		if errors.Is(err, controller.ErrControllerMoved) {
			c.fail(err)
			return ErrNotController
		}
		return err
	}
	return c.perform(out)
}

// ControlledShutdown handles a ControlledShutdown request (Kafka's
// ControlledShutdown API) from broker id at brokerEpoch and returns the
// partitions it still leads; the broker retries until none remain.
//
// It answers once the LeaderAndIsr and UpdateMetadata requests of the
// moves are delivered to every live broker, the stopping one included (or
// GateTimeout after they were queued: a broker that does not answer delays
// the shutdown by at most that). Kafka answers as soon as they are queued;
// its broker then stops serving, and a client that asks another broker for
// metadata before the moves reached it is told the old leaders and, with
// franz-go, asks again only after its metadata min age (5 s): a 5-s gap in
// a rolling restart's acknowledgements at 10,000 partitions.
func (c *Controller) ControlledShutdown(ctx context.Context, id int32, brokerEpoch int64) ([]controller.TopicPartition, error) {
	var remaining []controller.TopicPartition
	err := c.call(ctx, func() error {
		r, out, err := c.machine.OnControlledShutdown(id, brokerEpoch)
		if err == nil {
			remaining = r
		}
		return c.apply(out, err)
	})
	if err == nil {
		dctx, cancel := context.WithTimeout(ctx, GateTimeout)
		c.channel.Drain(dctx)
		cancel()
	}
	return remaining, err
}

// ElectLeaders runs a preferred (controller.ElectPreferred) or unclean
// (controller.ElectOffline) election, as the ElectLeaders API asks.
func (c *Controller) ElectLeaders(ctx context.Context, tps []controller.TopicPartition, strategy controller.ElectionStrategy) (map[controller.TopicPartition]error, error) {
	var failed map[controller.TopicPartition]error
	err := c.call(ctx, func() error {
		f, out, err := c.machine.OnElectLeaders(tps, strategy)
		if err == nil {
			failed = f
		}
		return c.apply(out, err)
	})
	return failed, err
}

// Snapshot returns a copy of the partition states the active controller
// holds (for tests and admin answers); ErrNotController on a standby.
func (c *Controller) Snapshot(ctx context.Context) (map[controller.TopicPartition]zkdata.PartitionState, error) {
	out := map[controller.TopicPartition]zkdata.PartitionState{}
	err := c.call(ctx, func() error {
		for tp, st := range c.machine.Ctx.States {
			out[tp] = st.Clone()
		}
		return nil
	})
	return out, err
}

// Reassign starts partition reassignments (AlterPartitionReassignments); a
// target equal to the original replicas cancels one. The map holds the
// partitions refused, with kerr codes.
func (c *Controller) Reassign(ctx context.Context, targets map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	var failed map[controller.TopicPartition]error
	err := c.call(ctx, func() error {
		f, out, err := c.machine.OnReassign(targets)
		if err == nil {
			failed = f
		}
		return c.apply(out, err)
	})
	return failed, err
}

// Reassignments lists the reassignments in progress
// (ListPartitionReassignments).
func (c *Controller) Reassignments(ctx context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	var out map[controller.TopicPartition]controller.Assignment
	err := c.call(ctx, func() error {
		out = c.machine.Ctx.Reassignments()
		return nil
	})
	return out, err
}

// AlterPartition handles one partition of an AlterPartition request
// (KIP-497): leader broker at brokerEpoch (-1: not checked) proposes isr
// for tp at its leaderEpoch and partitionEpoch (the zkVersion of the
// partition's state znode, as Kafka's ZooKeeper controller uses it). It
// returns the state written, or the one in place when nothing changes,
// and a kerr for a refused proposal: FENCED_LEADER_EPOCH,
// NOT_LEADER_OR_FOLLOWER, INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA,
// UNKNOWN_TOPIC_OR_PARTITION. Kafka 3.x leaders send it to the controller
// instead of writing the ISR themselves; kbroker's leaders write it and
// notify (/isr_change_notification), which Kafka's controller reads too.
func (c *Controller) AlterPartition(ctx context.Context, leader int32, brokerEpoch int64, tp controller.TopicPartition, leaderEpoch, partitionEpoch int32, isr []int32) (zkdata.PartitionState, error) {
	var out zkdata.PartitionState
	err := c.call(ctx, func() error {
		mc := c.machine.Ctx
		if lb, ok := mc.Live[leader]; !ok || (brokerEpoch >= 0 && lb.Epoch != brokerEpoch) {
			return fmt.Errorf("AlterPartition from broker %d at epoch %d: %w", leader, brokerEpoch, kerr.StaleBrokerEpoch)
		}
		st, ok := mc.States[tp]
		a, assigned := mc.Assignment(tp)
		if !ok || !assigned || mc.Deleting[tp.Topic] {
			return fmt.Errorf("partition %s: %w", tp, kerr.UnknownTopicOrPartition)
		}
		out = st.Clone()
		switch {
		case leaderEpoch < st.LeaderEpoch:
			return fmt.Errorf("partition %s: leader epoch %d, current %d: %w", tp, leaderEpoch, st.LeaderEpoch, kerr.FencedLeaderEpoch)
		case st.Leader != leader || leaderEpoch > st.LeaderEpoch:
			return fmt.Errorf("partition %s: broker %d is not its leader (%d, epoch %d): %w", tp, leader, st.Leader, st.LeaderEpoch, kerr.NotLeaderForPartition)
		case partitionEpoch != st.ZkVersion:
			return fmt.Errorf("partition %s: partition epoch %d, current %d: %w", tp, partitionEpoch, st.ZkVersion, kerr.InvalidUpdateVersion)
		}
		if slices.Equal(sortedIDs(isr), sortedIDs(st.ISR)) {
			return nil // already in place
		}
		if !slices.Contains(isr, leader) {
			return fmt.Errorf("partition %s: proposed ISR %v leaves out its leader %d: %w", tp, isr, leader, kerr.InvalidRequest)
		}
		for _, id := range isr {
			if _, live := mc.Live[id]; !live || !slices.Contains(a.Replicas, id) {
				return fmt.Errorf("partition %s: proposed ISR %v names broker %d that is not a live replica: %w", tp, isr, id, kerr.IneligibleReplica)
			}
		}
		next, err := c.zk.ChangeISR(zkdata.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}, st, isr)
		switch {
		case errors.Is(err, zkclient.ErrBadVersion):
			return fmt.Errorf("partition %s: state changed in ZooKeeper: %w", tp, kerr.InvalidUpdateVersion)
		case err != nil && next.ZkVersion == st.ZkVersion:
			return fmt.Errorf("partition %s: writing the ISR: %w", tp, err)
		}
		// Written; the change notification (or its failure) only makes
		// the controller tell the brokers, which it does now.
		out = next
		o, err := c.machine.OnISRChange([]controller.TopicPartition{tp})
		return c.apply(o, err)
	})
	return out, err
}

// sortedIDs is a sorted copy of ids.
func sortedIDs(ids []int32) []int32 {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}
