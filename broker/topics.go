package broker

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topic is a topic this broker serves. Invariant: len(partitions) == meta.Partitions.
type topic struct {
	meta       controller.Topic
	partitions []*partition
	// conf holds the resolved configs (topic_settings.go); shared by the
	// topic values that replace this one when its metadata changes.
	conf *topicConf
}

// maxTopicNameLen is Kafka's limit (249, so that "<name>-<partition>" fits a file name).
const maxTopicNameLen = 249

// validTopicName returns nil or the reason the name is illegal, as Kafka's Topic.validate.
func validTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > maxTopicNameLen:
		return fmt.Errorf("topic name is longer than %d characters", maxTopicNameLen)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q contains %q; legal characters are ASCII alphanumerics, '.', '_' and '-'", name, c)
		}
	}
	return nil
}

// isInternal reports Kafka's internal topics, hidden unless asked for.
func isInternal(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state"
}

// logConfigFor is the storage config of one partition: broker defaults, then topic overrides.
func (b *Manager) logConfigFor(topicName string, _ int32) storage.Config {
	var overrides map[string]string
	if b.store != nil {
		if t, ok := b.store.Topic(topicName); ok {
			overrides = t.Configs
		}
	}
	return b.logConfig(overrides)
}

func (b *Manager) logConfig(overrides map[string]string) storage.Config {
	tc := config.ResolveTopicConfig(b.cfg, overrides)
	segmentMs := tc.Int64("segment.ms")
	if strings.Contains(tc.Values["cleanup.policy"], "compact") {
		// A compacted topic rolls early enough for max.compaction.lag.ms to be met (Kafka's maxSegmentMs).
		segmentMs = min(segmentMs, tc.Int64("max.compaction.lag.ms"))
	}
	return storage.Config{
		SegmentBytes:          tc.Int64("segment.bytes"),
		SegmentMs:             segmentMs,
		IndexIntervalBytes:    int32(tc.Int64("index.interval.bytes")),
		FlushIntervalMessages: tc.Int64("flush.messages"),
		FlushIntervalMs:       tc.Int64("flush.ms"),
		Now:                   b.now,
		Logger:                b.log,
	}
}

// loadTopics opens a partition for every topic in the metadata store,
// creating missing logs, and removes logs of topics that no longer exist.
func (b *Manager) loadTopics() error {
	known := map[storage.TopicPartition]bool{}
	for _, meta := range b.store.Topics() {
		t, err := b.openTopic(meta)
		if err != nil {
			return err
		}
		for _, p := range t.partitions {
			known[storage.TopicPartition{Topic: meta.Name, Partition: p.index}] = true
		}
		b.mu.topics[meta.Name] = t
		b.mu.byID[meta.ID] = t
	}
	for _, d := range b.dirs {
		for tp := range d.Logs() {
			if !known[tp] {
				b.log.Warn("removing log of a deleted topic", "topic", tp.Topic, "partition", tp.Partition)
				if err := d.Remove(tp); err != nil {
					return fmt.Errorf("removing stray log %s-%d: %w", tp.Topic, tp.Partition, err)
				}
			}
		}
	}
	return nil
}

// openTopic finds or creates the logs of every partition of meta.
func (b *Manager) openTopic(meta controller.Topic) (*topic, error) {
	t := &topic{meta: meta, conf: newTopicConf(b.cfg, meta.Configs)}
	for i := int32(0); i < meta.Partitions; i++ {
		tp := storage.TopicPartition{Topic: meta.Name, Partition: i}
		var (
			log *storage.Log
			dir *storage.Dir
		)
		for _, d := range b.dirs {
			if l := d.Log(tp); l != nil {
				log, dir = l, d
				break
			}
		}
		if log == nil {
			dir = b.leastLoadedDir()
			var err error
			if log, err = dir.Create(tp, b.logConfig(meta.Configs)); err != nil {
				for _, p := range t.partitions {
					p.close()
				}
				return nil, fmt.Errorf("creating log for %s-%d: %w", meta.Name, i, err)
			}
		}
		p, err := newPartition(t, i, log, dir, b.partitionEnv())
		if err != nil {
			return nil, err
		}
		t.partitions = append(t.partitions, p)
	}
	return t, nil
}

// leastLoadedDir is the log dir with the fewest partitions, where new ones go.
func (b *Manager) leastLoadedDir() *storage.Dir {
	best := b.dirs[0]
	for _, d := range b.dirs[1:] {
		if len(d.Logs()) < len(best.Logs()) {
			best = d
		}
	}
	return best
}

// topicByName returns the topic or nil.
func (b *Manager) topicByName(name string) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.mu.topics[name]
}

// topicByID returns the topic or nil.
func (b *Manager) topicByID(id [16]byte) *topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.mu.byID[id]
}

// partitionOf returns the partition or nil.
func (b *Manager) partitionOf(name string, idx int32) *partition {
	t := b.topicByName(name)
	if t == nil || idx < 0 || idx >= int32(len(t.partitions)) {
		return nil
	}
	return t.partitions[idx]
}

// createTopic validates and creates a topic. It returns a Kafka error and a
// message for the client; validateOnly checks without creating.
func (b *Manager) createTopic(name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (*topic, *kerr.Error, string) {
	if err := validTopicName(name); err != nil {
		return nil, kerr.InvalidTopicException, err.Error()
	}
	if partitions == -1 {
		partitions = b.cfg.NumPartitions
	}
	if rf == -1 {
		rf = b.cfg.DefaultReplicationFactor
	}
	if partitions <= 0 {
		return nil, kerr.InvalidPartitions, "number of partitions must be larger than 0"
	}
	if rf <= 0 {
		return nil, kerr.InvalidReplicationFactor, "replication factor must be larger than 0"
	}
	if rf > 1 {
		return nil, kerr.InvalidReplicationFactor, fmt.Sprintf("replication factor %d is larger than the 1 available broker", rf)
	}
	if err := config.ValidateTopicConfigs(configs); err != nil {
		return nil, kerr.InvalidConfig, err.Error()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.mu.topics[name]; ok {
		return nil, kerr.TopicAlreadyExists, fmt.Sprintf("topic '%s' already exists", name)
	}
	if validateOnly {
		return nil, nil, ""
	}
	t, err := b.addTopicLocked(controller.Topic{Name: name, ID: controller.NewTopicID(), Partitions: partitions, ReplicationFactor: rf, Configs: configs})
	if err != nil {
		return nil, kerr.KafkaStorageError, err.Error()
	}
	return t, nil, ""
}

// addTopicLocked records a validated topic in the metadata store and opens
// its partitions. b.mu must be held.
func (b *Manager) addTopicLocked(meta controller.Topic) (*topic, error) {
	if err := b.store.CreateTopic(meta); err != nil {
		b.log.Error("create topic failed", "topic", meta.Name, "err", err)
		return nil, err
	}
	t, err := b.openTopic(meta)
	if err != nil {
		b.log.Error("create topic failed", "topic", meta.Name, "err", err)
		_ = b.store.DeleteTopic(meta.Name)
		return nil, err
	}
	b.mu.topics[meta.Name] = t
	b.mu.byID[meta.ID] = t
	b.log.Info("created topic", "topic", meta.Name, "partitions", meta.Partitions, "id", fmtUUID(meta.ID))
	return t, nil
}

// internalTopic returns the internal topic name, creating it with the given
// partitions and configs if it does not exist yet.
func (b *Manager) internalTopic(name string, partitions int32, configs map[string]string) (*topic, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.mu.topics[name]; ok {
		return t, nil
	}
	return b.addTopicLocked(controller.Topic{Name: name, ID: controller.NewTopicID(), Partitions: partitions, ReplicationFactor: 1, Configs: configs})
}

// deleteTopic removes a topic from the metadata store and its data from disk.
func (b *Manager) deleteTopic(name string) *kerr.Error {
	b.mu.Lock()
	t, ok := b.mu.topics[name]
	if !ok {
		b.mu.Unlock()
		return kerr.UnknownTopicOrPartition
	}
	if err := b.store.DeleteTopic(name); err != nil {
		b.mu.Unlock()
		b.log.Error("delete topic failed", "topic", name, "err", err)
		return kerr.KafkaStorageError
	}
	delete(b.mu.topics, name)
	delete(b.mu.byID, t.meta.ID)
	b.mu.Unlock()
	for _, p := range t.partitions {
		p.close()
		tp := storage.TopicPartition{Topic: name, Partition: p.index}
		if err := p.dir.Remove(tp); err != nil && !errors.Is(err, os.ErrNotExist) {
			b.log.Error("removing partition data", "topic", name, "partition", p.index, "err", err)
		}
	}
	b.log.Info("deleted topic", "topic", name)
	return nil
}

// writeHighWatermarks checkpoints every partition's HW into its log dir.
func (b *Manager) writeHighWatermarks() error {
	per := map[*storage.Dir]map[storage.TopicPartition]int64{}
	b.mu.RLock()
	for _, t := range b.mu.topics {
		for _, p := range t.partitions {
			if per[p.dir] == nil {
				per[p.dir] = map[storage.TopicPartition]int64{}
			}
			per[p.dir][storage.TopicPartition{Topic: t.meta.Name, Partition: p.index}] = p.highWatermark()
		}
	}
	b.mu.RUnlock()
	var errs []error
	for d, hw := range per {
		errs = append(errs, d.WriteHighWatermarks(hw))
	}
	return errors.Join(errs...)
}

func fmtUUID(id [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
}

// topicNames returns the name of every topic, in no order.
func (b *Manager) topicNames() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	names := make([]string, 0, len(b.mu.topics))
	for n := range b.mu.topics {
		names = append(names, n)
	}
	return names
}

// topics returns every topic, in no order.
func (b *Manager) topics() []*topic {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]*topic, 0, len(b.mu.topics))
	for _, t := range b.mu.topics {
		out = append(out, t)
	}
	return out
}
