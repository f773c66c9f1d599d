package broker

import (
	"fmt"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterTopicConfigs computes a topic's new overrides from its current ones
// with update, validates them and, unless validateOnly, persists and applies
// them. It returns a Kafka error and message, nil on success.
func (b *Manager) alterTopicConfigs(name string, validateOnly bool,
	update func(current map[string]string) (map[string]string, *kerr.Error, string)) (*kerr.Error, string) {
	if err := validTopicName(name); err != nil {
		return kerr.InvalidTopicException, err.Error()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.mu.topics[name]
	if !ok {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("Topic %s does not exist", name)
	}
	current := make(map[string]string, len(t.meta.Configs))
	for k, v := range t.meta.Configs {
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
		b.log.Error("persisting topic configs failed", "topic", name, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	meta := t.meta
	meta.Configs = next
	nt := &topic{meta: meta, partitions: t.partitions, conf: t.conf}
	t.conf.p.Store(resolveSettings(b.cfg, next))
	lc := b.logConfig(next)
	for _, p := range t.partitions {
		if err := p.log.SetConfig(lc); err != nil {
			b.log.Error("applying topic configs to log failed", "topic", name, "partition", p.index, "err", err)
		}
	}
	b.mu.topics[name] = nt
	b.mu.byID[meta.ID] = nt
	b.log.Info("altered topic configs", "topic", name, "configs", next)
	return nil, ""
}

func (b *Manager) createPartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) (*kerr.Error, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.mu.topics[rt.Topic]
	if !ok {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	cur := int32(len(t.partitions))
	switch {
	case rt.Count < cur:
		return kerr.InvalidPartitions, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", cur, rt.Count)
	case rt.Count == cur:
		return kerr.InvalidPartitions, fmt.Sprintf("Topic already has %d partitions.", cur)
	}
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != rt.Count-cur {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", rt.Count-cur, len(rt.Assignment))
		}
		for i, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != b.cfg.NodeID {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("Assignment of new partition %d names brokers %v; the only broker is %d.", cur+int32(i), a.Replicas, b.cfg.NodeID)
			}
		}
	}
	if validateOnly {
		return nil, ""
	}
	if err := b.store.AddPartitions(rt.Topic, rt.Count); err != nil {
		b.log.Error("adding partitions failed", "topic", rt.Topic, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	meta := t.meta
	meta.Partitions = rt.Count
	nt := &topic{meta: meta, conf: t.conf, partitions: append(make([]*partition, 0, rt.Count), t.partitions...)}
	for i := cur; i < rt.Count; i++ {
		tp := storage.TopicPartition{Topic: meta.Name, Partition: i}
		dir := b.leastLoadedDir()
		log := dir.Log(tp)
		var err error
		if log == nil {
			log, err = dir.Create(tp, b.logConfig(meta.Configs))
		}
		var p *partition
		if err == nil {
			p, err = newPartition(nt, i, log, dir, b.partitionEnv())
		}
		if err != nil {
			// The store already has the new count: the missing logs are
			// created when the broker next opens its topics.
			b.log.Error("creating partition failed", "topic", meta.Name, "partition", i, "err", err)
			return kerr.KafkaStorageError, err.Error()
		}
		nt.partitions = append(nt.partitions, p)
	}
	b.mu.topics[meta.Name] = nt
	b.mu.byID[meta.ID] = nt
	b.log.Info("added partitions", "topic", meta.Name, "partitions", rt.Count)
	return nil, ""
}
