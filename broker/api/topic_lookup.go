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

import "github.com/twmb/franz-go/pkg/kerr"

// clusterTopic is what the cluster knows of one topic.
type clusterTopic struct {
	Name string
	ID   [16]byte
	// has reports whether partition p exists.
	has func(p int32) bool
}

// topicNamed returns the topic called name as the cluster knows it.
func (b *API) topicNamed(name string) (clusterTopic, bool) {
	if c := b.cluster; c != nil && c.Cache != nil {
		t := c.Cache.Snapshot().Topics[name]
		if t == nil {
			return clusterTopic{}, false
		}
		return cacheTopic(t.Name, t.ID, t.Partitions), true
	}
	t := b.rm.TopicByName(name)
	if t == nil {
		return clusterTopic{}, false
	}
	return localTopic(t.Meta.Name, t.Meta.ID, int32(len(t.Partitions))), true
}

// topicWithID returns the topic whose id is id as the cluster knows it.
func (b *API) topicWithID(id [16]byte) (clusterTopic, bool) {
	if c := b.cluster; c != nil && c.Cache != nil {
		t := c.Cache.Snapshot().TopicByID(id)
		if t == nil {
			return clusterTopic{}, false
		}
		return cacheTopic(t.Name, t.ID, t.Partitions), true
	}
	t := b.rm.TopicByID(id)
	if t == nil {
		return clusterTopic{}, false
	}
	return localTopic(t.Meta.Name, t.Meta.ID, int32(len(t.Partitions))), true
}

func cacheTopic[P any](name string, id [16]byte, parts map[int32]P) clusterTopic {
	return clusterTopic{Name: name, ID: id, has: func(p int32) bool { _, ok := parts[p]; return ok }}
}

func localTopic(name string, id [16]byte, n int32) clusterTopic {
	return clusterTopic{Name: name, ID: id, has: func(p int32) bool { return p >= 0 && p < n }}
}

// topicNames lists the cluster's topics, in no order.
func (b *API) topicNames() []string {
	if c := b.cluster; c != nil && c.Cache != nil {
		return c.Cache.Snapshot().TopicNames()
	}
	return b.rm.TopicNames()
}

// partitionExists reports whether topic has partition p in the cluster.
func (b *API) partitionExists(topic string, p int32) bool {
	t, ok := b.topicNamed(topic)
	return ok && t.has(p)
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
