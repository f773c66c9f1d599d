package zkcontroller

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// zkStates is the controller.StateWriter over ZooKeeper: every write is a
// multi-op that first checks /controller_epoch's version, so a controller
// that lost its term cannot write.
type zkStates struct{ c *zkclient.Client }

var _ controller.StateWriter = zkStates{}

// CreatePartitionStates creates each topic's partitions znode, then every
// partition's znode and its state, conditional on the epoch, in batched
// multi-ops (zkclient.CreateManyChecked), pipelined.
func (z zkStates) CreatePartitionStates(epochVersion int32, states map[controller.TopicPartition]zkdata.PartitionState) (map[controller.TopicPartition]error, error) {
	failed := map[controller.TopicPartition]error{}
	tps := make([]controller.TopicPartition, 0, len(states))
	topics := map[string]bool{}
	for tp := range states {
		tps = append(tps, tp)
		if !topics[tp.Topic] {
			topics[tp.Topic] = true
			if err := z.c.EnsurePath(zkdata.PartitionsPath(tp.Topic)); err != nil {
				return failed, fmt.Errorf("creating %s: %w", zkdata.PartitionsPath(tp.Topic), err)
			}
		}
	}
	data := make([][]byte, len(tps))
	encErr := make([]error, len(tps))
	var ops []zkclient.CreateOp
	var idx []int
	for i, tp := range tps {
		if data[i], encErr[i] = states[tp].Encode(); encErr[i] != nil {
			continue
		}
		ops = append(ops, zkclient.CreateOp{Parent: zkdata.PartitionPath(tp.Topic, tp.Partition),
			Path: zkdata.PartitionStatePath(tp.Topic, tp.Partition), Data: data[i]})
		idx = append(idx, i)
	}
	type result struct {
		checkFailed bool
		encErr, err error
	}
	res := make([]result, len(tps))
	for i := range tps {
		res[i].encErr = encErr[i]
	}
	for k, r := range z.c.CreateManyChecked(zkdata.ControllerEpochPath, epochVersion, ops) {
		res[idx[k]].checkFailed, res[idx[k]].err = r.CheckFailed, r.Err
	}
	var fatal error
	for i, tp := range tps {
		r := res[i]
		switch {
		case r.checkFailed:
			return failed, fmt.Errorf("creating state of %s: %w", tp, controller.ErrControllerMoved)
		case r.encErr != nil:
			failed[tp] = r.encErr
		case errors.Is(r.err, zk.ErrNodeExists):
			failed[tp] = r.err
		case r.err != nil && fatal == nil:
			fatal = fmt.Errorf("creating state of %s: %w", tp, r.err)
		}
	}
	return failed, fatal
}

// UpdatePartitionStates writes every state conditionally on its version
// and on the epoch, in batched multi-ops (zkclient.SetManyChecked): each
// write's outcome is the one it would have had alone, as Kafka's
// updateLeaderAndIsr writes them.
func (z zkStates) UpdatePartitionStates(epochVersion int32, states map[controller.TopicPartition]zkdata.PartitionState) (map[controller.TopicPartition]int32, map[controller.TopicPartition]error, error) {
	written, failed := map[controller.TopicPartition]int32{}, map[controller.TopicPartition]error{}
	tps := make([]controller.TopicPartition, 0, len(states))
	for tp := range states {
		tps = append(tps, tp)
	}
	type result struct {
		version     int32
		checkFailed bool
		encErr, err error
	}
	res := make([]result, len(tps))
	var ops []zkclient.SetOp
	var idx []int
	for i, tp := range tps {
		st := states[tp]
		data, err := st.Encode()
		if err != nil {
			res[i].encErr = err
			continue
		}
		ops = append(ops, zkclient.SetOp{Path: zkdata.PartitionStatePath(tp.Topic, tp.Partition), Data: data, Version: st.ZkVersion})
		idx = append(idx, i)
	}
	for k, r := range z.c.SetManyChecked(zkdata.ControllerEpochPath, epochVersion, ops) {
		res[idx[k]].version, res[idx[k]].checkFailed, res[idx[k]].err = r.Version, r.CheckFailed, r.Err
	}
	var fatal error
	for i, tp := range tps {
		r := res[i]
		switch {
		case r.checkFailed:
			return written, failed, fmt.Errorf("writing state of %s: %w", tp, controller.ErrControllerMoved)
		case r.encErr != nil:
			failed[tp] = r.encErr
		case r.err == nil:
			written[tp] = r.version
		case errors.Is(r.err, zk.ErrBadVersion), errors.Is(r.err, zk.ErrNoNode):
			failed[tp] = fmt.Errorf("%w: %w", controller.ErrStateVersionConflict, r.err)
		case fatal == nil:
			fatal = fmt.Errorf("writing state of %s: %w", tp, r.err)
		}
	}
	return written, failed, fatal
}

// ReadPartitionStates reads the state znodes, pipelined; a missing one is
// left out.
func (z zkStates) ReadPartitionStates(tps []controller.TopicPartition) (map[controller.TopicPartition]zkdata.PartitionState, error) {
	paths := make([]string, len(tps))
	for i, tp := range tps {
		paths[i] = zkdata.PartitionStatePath(tp.Topic, tp.Partition)
	}
	res := z.c.GetMany(paths)
	out := make(map[controller.TopicPartition]zkdata.PartitionState, len(tps))
	for i, tp := range tps {
		r := res[i]
		if errors.Is(r.Err, zk.ErrNoNode) {
			continue
		}
		if r.Err != nil {
			return out, fmt.Errorf("partition %s state: %w", tp, r.Err)
		}
		st, err := zkdata.DecodePartitionState(r.Data, r.Stat.Version)
		if err != nil {
			return out, err
		}
		out[tp] = st
	}
	return out, nil
}

func (z zkStates) WriteTopicAssignment(epochVersion int32, topic string, a zkdata.TopicAssignment) error {
	data, err := a.Encode()
	if err != nil {
		return err
	}
	_, checkFailed, err := z.c.SetChecked(zkdata.ControllerEpochPath, epochVersion, zkdata.TopicPath(topic), data, -1)
	if checkFailed {
		return fmt.Errorf("writing assignment of %s: %w", topic, controller.ErrControllerMoved)
	}
	return err
}
