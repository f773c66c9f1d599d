package zkcontroller

import (
	"context"
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/controller"
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
func (c *Controller) ControlledShutdown(ctx context.Context, id int32, brokerEpoch int64) ([]controller.TopicPartition, error) {
	var remaining []controller.TopicPartition
	err := c.call(ctx, func() error {
		r, out, err := c.machine.OnControlledShutdown(id, brokerEpoch)
		if err == nil {
			remaining = r
		}
		return c.apply(out, err)
	})
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
