package replica

import (
	"fmt"
	"maps"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterTopicConfigs computes a topic's new overrides from its current ones
// with update, validates them and, unless validateOnly, persists and applies
// them. It returns a Kafka error and message, nil on success.
func (m *Manager) AlterTopicConfigs(name string, validateOnly bool,
	update func(current map[string]string) (map[string]string, *kerr.Error, string)) (*kerr.Error, string) {
	if err := ValidTopicName(name); err != nil {
		return kerr.InvalidTopicException, err.Error()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.mu.topics[name]
	if !ok {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("Topic %s does not exist", name)
	}
	next, kerrv, msg := NextTopicConfigs(t.Meta.Configs, update)
	if kerrv != nil {
		return kerrv, msg
	}
	if validateOnly {
		return nil, ""
	}
	if err := m.store.UpdateTopicConfigs(name, next); err != nil {
		m.log.Error("persisting topic configs failed", "topic", name, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	m.applyTopicConfigsLocked(t, next)
	return nil, ""
}

// NextTopicConfigs computes a topic's new overrides from a copy of its
// current ones with update, and validates them.
func NextTopicConfigs(current map[string]string,
	update func(current map[string]string) (map[string]string, *kerr.Error, string)) (map[string]string, *kerr.Error, string) {
	copied := make(map[string]string, len(current))
	maps.Copy(copied, current)
	next, kerrv, msg := update(copied)
	if kerrv != nil {
		return nil, kerrv, msg
	}
	if err := config.ValidateTopicConfigs(next); err != nil {
		return nil, kerr.InvalidConfig, err.Error()
	}
	return next, nil, ""
}

// ApplyTopicConfigs makes a hosted topic's overrides configs, as stored
// elsewhere: in cluster mode another broker altered them in ZooKeeper and
// announced it in /config/changes. A topic not hosted here is ignored.
func (m *Manager) ApplyTopicConfigs(name string, configs map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.mu.topics[name]; ok && !maps.Equal(t.Meta.Configs, configs) {
		m.applyTopicConfigsLocked(t, configs)
	}
}

// applyTopicConfigsLocked installs a topic's new overrides: its settings,
// its logs' configs and its metadata. m.mu must be held.
func (m *Manager) applyTopicConfigsLocked(t *Topic, next map[string]string) {
	name := t.Meta.Name
	meta := t.Meta
	meta.Configs = next
	nt := &Topic{Meta: meta, Partitions: t.Partitions, conf: t.conf}
	t.conf.p.Store(resolveSettings(m.topicDefaults(), next))
	lc := m.logConfig(next)
	for _, p := range t.Partitions {
		if !p.Hosted() {
			continue
		}
		if err := p.Log.SetConfig(lc); err != nil {
			m.log.Error("applying topic configs to log failed", "topic", name, "partition", p.Index, "err", err)
		}
	}
	m.mu.topics[name] = nt
	m.mu.byID[meta.ID] = nt
	m.log.Info("altered topic configs", "topic", name, "configs", next)
}

// CreatePartitions grows a topic to rt.Count partitions (checked against
// the single broker), unless validateOnly. It returns a Kafka error and
// message, nil on success.
func (m *Manager) CreatePartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) (*kerr.Error, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.mu.topics[rt.Topic]
	if !ok {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	cur := int32(len(t.Partitions))
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
			if len(a.Replicas) != 1 || a.Replicas[0] != m.cfg.NodeID {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("Assignment of new partition %d names brokers %v; the only broker is %d.", cur+int32(i), a.Replicas, m.cfg.NodeID)
			}
		}
	}
	if validateOnly {
		return nil, ""
	}
	// All or nothing, as topic creation: the new partitions' logs first,
	// then the metadata; on any failure the logs made here are removed and
	// the topic keeps its count.
	meta := t.Meta
	meta.Partitions = rt.Count
	nt := &Topic{Meta: meta, conf: t.conf, Partitions: append(make([]*Partition, 0, rt.Count), t.Partitions...)}
	var created []*Partition
	for i := cur; i < rt.Count; i++ {
		p, isNew, err := m.openPartition(nt, i)
		if err == nil {
			nt.Partitions = append(nt.Partitions, p)
			if isNew {
				created = append(created, p)
			}
			continue
		}
		m.log.Error("adding partitions failed; none was added", "topic", meta.Name, "partition", i, "err", err)
		for _, p := range nt.Partitions[cur:] {
			p.close()
		}
		m.removeLogs(created)
		kerrv, msg := creationError(err)
		return kerrv, fmt.Sprintf("partitions of '%s' were not added: %s", rt.Topic, msg)
	}
	if err := m.store.AddPartitions(rt.Topic, rt.Count); err != nil {
		m.log.Error("adding partitions failed: recording them in the metadata failed; their logs are removed", "topic", rt.Topic, "err", err)
		m.removeLogs(nt.Partitions[cur:])
		kerrv, msg := creationError(err)
		return kerrv, fmt.Sprintf("partitions of '%s' were not added: %s", rt.Topic, msg)
	}
	m.mu.topics[meta.Name] = nt
	m.mu.byID[meta.ID] = nt
	m.log.Info("added partitions", "topic", meta.Name, "partitions", rt.Count)
	return nil, ""
}
