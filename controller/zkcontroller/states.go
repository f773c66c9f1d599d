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

func (z zkStates) CreatePartitionStates(epochVersion int32, states map[controller.TopicPartition]zkdata.PartitionState) (map[controller.TopicPartition]error, error) {
	failed := map[controller.TopicPartition]error{}
	for tp, st := range states {
		if err := z.c.EnsurePath(zkdata.PartitionPath(tp.Topic, tp.Partition)); err != nil {
			return failed, fmt.Errorf("creating %s: %w", zkdata.PartitionPath(tp.Topic, tp.Partition), err)
		}
		data, err := st.Encode()
		if err != nil {
			failed[tp] = err
			continue
		}
		checkFailed, err := z.c.CreateChecked(zkdata.ControllerEpochPath, epochVersion, zkdata.PartitionStatePath(tp.Topic, tp.Partition), data)
		switch {
		case checkFailed:
			return failed, fmt.Errorf("creating state of %s: %w", tp, controller.ErrControllerMoved)
		case errors.Is(err, zk.ErrNodeExists):
			failed[tp] = err
		case err != nil:
			return failed, fmt.Errorf("creating state of %s: %w", tp, err)
		}
	}
	return failed, nil
}

func (z zkStates) UpdatePartitionStates(epochVersion int32, states map[controller.TopicPartition]zkdata.PartitionState) (map[controller.TopicPartition]int32, map[controller.TopicPartition]error, error) {
	written, failed := map[controller.TopicPartition]int32{}, map[controller.TopicPartition]error{}
	for tp, st := range states {
		data, err := st.Encode()
		if err != nil {
			failed[tp] = err
			continue
		}
		stat, checkFailed, err := z.c.SetChecked(zkdata.ControllerEpochPath, epochVersion,
			zkdata.PartitionStatePath(tp.Topic, tp.Partition), data, st.ZkVersion)
		switch {
		case checkFailed:
			return written, failed, fmt.Errorf("writing state of %s: %w", tp, controller.ErrControllerMoved)
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
			failed[tp] = fmt.Errorf("%w: %w", controller.ErrStateVersionConflict, err)
		case err != nil:
			return written, failed, fmt.Errorf("writing state of %s: %w", tp, err)
		default:
			written[tp] = stat.Version
		}
	}
	return written, failed, nil
}

func (z zkStates) ReadPartitionStates(tps []controller.TopicPartition) (map[controller.TopicPartition]zkdata.PartitionState, error) {
	out := map[controller.TopicPartition]zkdata.PartitionState{}
	for _, tp := range tps {
		st, err := z.c.PartitionState(tp)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
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
