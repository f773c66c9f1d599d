package api

// Whether a topic or partition exists is a question about the cluster, not
// about this broker's replicas: Kafka's handlers ask the metadata cache
// (metadataCache.contains, getTopicName), so that a group coordinator, or any
// broker answering an admin request, accepts a topic whose replicas all live
// elsewhere. On a single node the replica manager holds every topic and is
// that cache; in cluster mode the metadata cache (UpdateMetadata) is.
//
// Replica-local questions (read this log, answer as its leader) still go to
// the replica manager; when it has no replica of a partition that the
// cluster knows, the answer is NOT_LEADER_OR_FOLLOWER, as Kafka's
// ReplicaManager.getPartitionOrError gives, not UNKNOWN_TOPIC_OR_PARTITION.

import (
	"slices"

	"github.com/kbroker/kbroker/broker/metacache"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
)

// clusterTopic is what the cluster knows of one topic.
type clusterTopic struct {
	Name string
	ID   [16]byte
	// Partitions are its partitions' indexes, ascending.
	Partitions []int32
}

// has reports whether partition p exists.
func (t clusterTopic) has(p int32) bool {
	_, ok := slices.BinarySearch(t.Partitions, p)
	return ok
}

// topicNamed returns the topic called name as the cluster knows it.
func (b *API) topicNamed(name string) (clusterTopic, bool) {
	if c := b.cluster; c != nil && c.Cache != nil {
		t := c.Cache.Snapshot().Topics[name]
		if t == nil {
			return clusterTopic{}, false
		}
		return cacheTopic(t), true
	}
	t := b.rm.TopicByName(name)
	if t == nil {
		return clusterTopic{}, false
	}
	return localTopic(t), true
}

// topicWithID returns the topic whose id is id as the cluster knows it.
func (b *API) topicWithID(id [16]byte) (clusterTopic, bool) {
	if c := b.cluster; c != nil && c.Cache != nil {
		t := c.Cache.Snapshot().TopicByID(id)
		if t == nil {
			return clusterTopic{}, false
		}
		return cacheTopic(t), true
	}
	t := b.rm.TopicByID(id)
	if t == nil {
		return clusterTopic{}, false
	}
	return localTopic(t), true
}

func cacheTopic(t *metacache.Topic) clusterTopic {
	ct := clusterTopic{Name: t.Name, ID: t.ID, Partitions: make([]int32, 0, len(t.Partitions))}
	for p := range t.Partitions {
		ct.Partitions = append(ct.Partitions, p)
	}
	slices.Sort(ct.Partitions)
	return ct
}

func localTopic(t *replica.Topic) clusterTopic {
	ct := clusterTopic{Name: t.Meta.Name, ID: t.Meta.ID, Partitions: make([]int32, len(t.Partitions))}
	for i := range ct.Partitions {
		ct.Partitions[i] = int32(i)
	}
	return ct
}

// partitionState is a partition's leader epoch and high watermark: this
// broker's replica's when it hosts one; else the leader epoch of the
// metadata cache and no high watermark (-1).
func (b *API) partitionState(topic string, p int32) (epoch int32, hw int64) {
	if rp := b.rm.PartitionOf(topic, p); rp != nil {
		return rp.LeaderEpoch(), rp.HighWatermark()
	}
	if c := b.cluster; c != nil && c.Cache != nil {
		if st, ok := c.Cache.Snapshot().Partition(topic, p); ok {
			return st.LeaderEpoch, -1
		}
	}
	return -1, -1
}

// topicNames lists the cluster's topics, in no order.
func (b *API) topicNames() []string {
	if c := b.cluster; c != nil && c.Cache != nil {
		return c.Cache.Snapshot().TopicNames()
	}
	return b.rm.TopicNames()
}

// partitionExists reports whether topic has partition p in the cluster. It
// is asked once per partition of an OffsetCommit, so it looks the partition
// up directly instead of building the topic's clusterTopic.
func (b *API) partitionExists(topic string, p int32) bool {
	if c := b.cluster; c != nil && c.Cache != nil {
		_, ok := c.Cache.Snapshot().Partition(topic, p)
		return ok
	}
	return b.rm.PartitionOf(topic, p) != nil
}

// notHostedErr is the error for a partition this broker has no replica of:
// NOT_LEADER_OR_FOLLOWER when it exists in the cluster (the client's
// metadata is stale), else UNKNOWN_TOPIC_OR_PARTITION.
func (b *API) notHostedErr(topic string, p int32) *kerr.Error {
	if b.cluster != nil && b.partitionExists(topic, p) {
		return kerr.NotLeaderForPartition
	}
	return kerr.UnknownTopicOrPartition
}
