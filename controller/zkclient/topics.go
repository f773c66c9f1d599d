package zkclient

import (
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// ClusterID returns /cluster/id, creating it with proposed when absent
// (the first broker of a cluster decides; the others read it).
func (c *Client) ClusterID(proposed string) (string, error) {
	data, _, err := c.Get(zkdata.ClusterIDPath)
	if errors.Is(err, zk.ErrNoNode) {
		enc, eerr := zkdata.EncodeClusterID(proposed)
		if eerr != nil {
			return "", eerr
		}
		if _, err = c.CreateWithParents(zkdata.ClusterIDPath, enc, 0); err == nil {
			return proposed, nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return "", fmt.Errorf("creating cluster id: %w", err)
		}
		data, _, err = c.Get(zkdata.ClusterIDPath)
	}
	if err != nil {
		return "", fmt.Errorf("reading cluster id: %w", err)
	}
	return zkdata.DecodeClusterID(data)
}

// CreateTopic writes a new topic as Kafka's AdminZkClient does: its config
// overrides to /config/topics/<t> first, then the assignment to
// /brokers/topics/<t>, whose creation the controller watches. A topic that
// exists is zk.ErrNodeExists.
func (c *Client) CreateTopic(name string, a zkdata.TopicAssignment, configs map[string]string) error {
	if ok, _, err := c.Exists(zkdata.TopicPath(name)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("topic %s: %w", name, zk.ErrNodeExists)
	}
	cfg, err := zkdata.EncodeConfigEntity(configs)
	if err != nil {
		return err
	}
	if _, err := c.CreateWithParents(zkdata.TopicConfigPath(name), cfg, 0); errors.Is(err, zk.ErrNodeExists) {
		if _, err := c.Set(zkdata.TopicConfigPath(name), cfg, -1); err != nil {
			return fmt.Errorf("topic %s config: %w", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("topic %s config: %w", name, err)
	}
	data, err := a.Encode()
	if err != nil {
		return err
	}
	if _, err := c.CreateWithParents(zkdata.TopicPath(name), data, 0); err != nil {
		return fmt.Errorf("topic %s: %w", name, err)
	}
	return nil
}

// TopicAssignment reads /brokers/topics/<t> and its data version.
func (c *Client) TopicAssignment(name string) (zkdata.TopicAssignment, int32, error) {
	data, stat, err := c.Get(zkdata.TopicPath(name))
	if err != nil {
		return zkdata.TopicAssignment{}, 0, fmt.Errorf("topic %s: %w", name, err)
	}
	a, err := zkdata.DecodeTopicAssignment(name, data)
	return a, stat.Version, err
}

// TopicConfig reads /config/topics/<t> (empty when absent).
func (c *Client) TopicConfig(name string) (map[string]string, error) {
	data, _, err := c.Get(zkdata.TopicConfigPath(name))
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return zkdata.DecodeConfigEntity(data)
}

// SetTopicConfig replaces a topic's overrides and leaves a
// /config/changes notification for the brokers, as Kafka's AdminZkClient.
func (c *Client) SetTopicConfig(name string, configs map[string]string) error {
	cfg, err := zkdata.EncodeConfigEntity(configs)
	if err != nil {
		return err
	}
	if _, err := c.Set(zkdata.TopicConfigPath(name), cfg, -1); errors.Is(err, zk.ErrNoNode) {
		_, err = c.CreateWithParents(zkdata.TopicConfigPath(name), cfg, 0)
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	note, err := zkdata.EncodeConfigChange(zkdata.ConfigEntityTopics + "/" + name)
	if err != nil {
		return err
	}
	_, err = c.CreateWithParents(zkdata.ConfigChangeSeqPath(), note, zk.FlagSequence)
	return err
}

// MarkTopicForDeletion creates /admin/delete_topics/<t>, which the
// controller acts on (DeleteTopics in ZooKeeper mode).
func (c *Client) MarkTopicForDeletion(name string) error {
	if ok, _, err := c.Exists(zkdata.TopicPath(name)); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("topic %s: %w", name, zk.ErrNoNode)
	}
	_, err := c.CreateWithParents(zkdata.DeleteTopicPath(name), nil, 0)
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

// PartitionState reads one partition's state znode.
func (c *Client) PartitionState(tp zkdata.TopicPartition) (zkdata.PartitionState, error) {
	data, stat, err := c.Get(zkdata.PartitionStatePath(tp.Topic, tp.Partition))
	if err != nil {
		return zkdata.PartitionState{}, fmt.Errorf("partition %s state: %w", tp, err)
	}
	return zkdata.DecodePartitionState(data, stat.Version)
}

// UpdatePartitionState writes a partition's state conditionally on
// st.ZkVersion — what a leader does to change its ISR — and returns the new
// version. A stale writer gets zk.ErrBadVersion and must re-read.
func (c *Client) UpdatePartitionState(tp zkdata.TopicPartition, st zkdata.PartitionState) (int32, error) {
	data, err := st.Encode()
	if err != nil {
		return 0, err
	}
	stat, err := c.Set(zkdata.PartitionStatePath(tp.Topic, tp.Partition), data, st.ZkVersion)
	if err != nil {
		return 0, fmt.Errorf("partition %s state at version %d: %w", tp, st.ZkVersion, err)
	}
	return stat.Version, nil
}

// NotifyISRChange creates an /isr_change_notification/isr_change_<seq>
// znode naming partitions whose ISR this leader changed, so the controller
// re-reads them and updates every broker's metadata.
func (c *Client) NotifyISRChange(tps []zkdata.TopicPartition) error {
	data, err := zkdata.EncodeIsrChange(tps)
	if err != nil {
		return err
	}
	_, err = c.CreateWithParents(zkdata.IsrChangeSeqPath(), data, zk.FlagSequence)
	return err
}

// NotifyLogDirFailure creates a persistent sequential
// /log_dir_event_notification/log_dir_event_<seq> znode saying that some of
// broker's log directories went offline (Kafka's propagateLogDirEvent), so
// the controller asks the broker which replicas it still hosts.
func (c *Client) NotifyLogDirFailure(broker int32) error {
	data, err := zkdata.EncodeLogDirEvent(broker)
	if err != nil {
		return err
	}
	_, err = c.CreateWithParents(zkdata.LogDirEventSeqPath(), data, zk.FlagSequence)
	if err != nil {
		return fmt.Errorf("log dir event of broker %d: %w", broker, err)
	}
	return nil
}

// SetTopicAssignment rewrites /brokers/topics/<t> if it is still at version
// (CreatePartitions adds partitions this way; the controller's watch on the
// topic znode picks them up). The topic id must be kept.
func (c *Client) SetTopicAssignment(name string, a zkdata.TopicAssignment, version int32) error {
	data, err := a.Encode()
	if err != nil {
		return err
	}
	if _, err := c.Set(zkdata.TopicPath(name), data, version); err != nil {
		return fmt.Errorf("topic %s assignment at version %d: %w", name, version, err)
	}
	return nil
}

// ChangeISR is a partition leader's ISR shrink or expand, the ZooKeeper way
// (before AlterPartition): it writes newISR into the state, keeping leader,
// leader epoch and controller epoch, conditional on cur.ZkVersion, then
// leaves an ISR change notification so the controller tells every broker.
// zk.ErrBadVersion means someone else (the controller) changed the
// partition: the leader must re-read the state and obey it, never retry
// its own view.
func (c *Client) ChangeISR(tp zkdata.TopicPartition, cur zkdata.PartitionState, newISR []int32) (zkdata.PartitionState, error) {
	next := cur.Clone()
	next.ISR = append([]int32(nil), newISR...)
	v, err := c.UpdatePartitionState(tp, next)
	if err != nil {
		return cur, err
	}
	next.ZkVersion = v
	if err := c.NotifyISRChange([]zkdata.TopicPartition{tp}); err != nil {
		return next, fmt.Errorf("partition %s ISR written, notification failed: %w", tp, err)
	}
	return next, nil
}
