package api

// Topic configs in cluster mode, as Kafka 3.9's ZooKeeper-mode brokers
// keep them: any broker answers DescribeConfigs for a topic the metadata
// cache knows, with the overrides read from ZooKeeper (/config/topics/<t>),
// and takes AlterConfigs and IncrementalAlterConfigs for a topic ZooKeeper
// holds, whether or not it hosts a replica. The change is written with a
// /config/changes notification (zkstore), which every broker hosting the
// topic applies (broker/dynamic_cluster.go); this broker applies it at once.

import (
	"fmt"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicOverrides returns a topic's config overrides: from the metadata
// store in cluster mode (the topic must be in the metadata cache), from the
// replica manager on a single node.
func (b *API) topicOverrides(name string) (map[string]string, bool) {
	if b.cluster == nil {
		t := b.rm.TopicByName(name)
		if t == nil {
			return nil, false
		}
		return t.Meta.Configs, true
	}
	if _, ok := b.topicNamed(name); !ok {
		return nil, false
	}
	t, ok := b.store.Topic(name)
	return t.Configs, ok
}

// alterTopicConfigs computes a topic's new overrides with update,
// validates them and, unless validateOnly, stores and applies them.
func (b *API) alterTopicConfigs(name string, validateOnly bool,
	update func(current map[string]string) (map[string]string, *kerr.Error, string)) (*kerr.Error, string) {
	if b.cluster == nil {
		return b.rm.AlterTopicConfigs(name, validateOnly, update)
	}
	if err := replica.ValidTopicName(name); err != nil {
		return kerr.InvalidTopicException, err.Error()
	}
	t, ok := b.store.Topic(name)
	if !ok {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("Topic %s does not exist", name)
	}
	current := make(map[string]string, len(t.Configs))
	for k, v := range t.Configs {
		current[k] = v
	}
	next, kerrv, msg := update(current)
	if kerrv != nil {
		return kerrv, msg
	}
	if err := config.ValidateTopicConfigs(next); err != nil {
		return kerr.InvalidConfig, err.Error()
	}
	if validateOnly {
		return nil, ""
	}
	if err := b.store.UpdateTopicConfigs(name, next); err != nil {
		b.log.Error("storing topic configs failed", "topic", name, "err", err)
		return storeErr(err)
	}
	b.rm.ApplyTopicConfigs(name, next)
	return nil, ""
}
