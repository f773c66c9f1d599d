package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Topic is a topic this broker serves. Invariant: len(Partitions) == Meta.Partitions.
type Topic struct {
	Meta       controller.Topic
	Partitions []*Partition
	// conf holds the resolved configs (topic_settings.go); shared by the
	// topic values that replace this one when its metadata changes.
	conf *topicConf
}

// maxTopicNameLen is Kafka's limit (249, so that "<name>-<partition>" fits a file name).
const maxTopicNameLen = 249

// ValidTopicName returns nil or the reason the name is illegal, as Kafka's Topic.validate.
func ValidTopicName(name string) error {
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

// IsInternal reports Kafka's internal topics, hidden unless asked for.
func IsInternal(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}

// logConfigFor is the storage config of one partition: broker defaults, then topic overrides.
func (m *Manager) logConfigFor(topicName string, _ int32) storage.Config {
	var overrides map[string]string
	if m.store != nil {
		if t, ok := m.store.Topic(topicName); ok {
			overrides = t.Configs
		}
	}
	return m.logConfig(overrides)
}

func (m *Manager) logConfig(overrides map[string]string) storage.Config {
	tc := config.ResolveTopicConfig(m.topicDefaults(), overrides)
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
		FileDeleteDelayMs:     max(tc.Int64("file.delete.delay.ms"), 1), // Kafka's 0 is 1 here
		Now:                   m.now,
		Logger:                m.log,
	}
}

// loadTopics opens a partition for every topic in the metadata store,
// creating missing logs, and marks stray the logs of topics it does not know.
func (m *Manager) loadTopics() error {
	known := map[storage.TopicPartition]bool{}
	for _, meta := range m.store.Topics() {
		t, err := m.openTopic(meta)
		if err != nil {
			return err
		}
		for _, p := range t.Partitions {
			known[storage.TopicPartition{Topic: meta.Name, Partition: p.Index}] = true
		}
		m.mu.topics[meta.Name] = t
		m.mu.byID[meta.ID] = t
	}
	for _, d := range m.dirs {
		for tp := range d.Logs() {
			if known[tp] {
				continue
			}
			// The metadata does not know this log: it may have been lost,
			// replaced or pointed elsewhere. Data is never deleted on a guess.
			name, err := d.MarkStray(tp)
			if err != nil {
				return fmt.Errorf("setting aside the log of unknown partition %s: %w", tp, err)
			}
			m.log.Warn("no topic in the metadata owns this log: kept, not served, renamed stray",
				"topic", tp.Topic, "partition", tp.Partition, "dir", filepath.Join(d.Path(), name))
		}
		if strays := d.StrayLogs(); len(strays) > 0 {
			m.log.Warn("log dir holds stray logs (kept, not served); inspect them, then delete them or restore their topic",
				"log_dir", d.Path(), "stray_dirs", strays)
		}
	}
	return nil
}

// openTopic finds or creates the logs of every partition of meta and opens
// its partitions. It is all or nothing: if one partition cannot be opened
// or its log created, the partitions opened so far are closed, the logs
// this call created are removed again (renamed "-delete"), and the error
// names the partition.
func (m *Manager) openTopic(meta controller.Topic) (*Topic, error) {
	t := &Topic{Meta: meta, conf: newTopicConf(m.topicDefaults(), meta.Configs)}
	var created []*Partition
	for i := int32(0); i < meta.Partitions; i++ {
		p, isNew, err := m.openPartition(t, i)
		if err != nil {
			for _, p := range t.Partitions {
				p.close()
			}
			m.removeLogs(created)
			return nil, err
		}
		t.Partitions = append(t.Partitions, p)
		if isNew {
			created = append(created, p)
		}
	}
	return t, nil
}

// openPartition opens partition i of t over its log, creating the log in
// the least loaded dir if no dir has it (isNew). A log created here is
// removed again if the partition cannot be opened over it. In a cluster a
// missing log is not created: the partition is absent until a LeaderAndIsr
// gives this broker a replica of it (replicaPartition), as in Kafka, whose
// brokers hold logs of their own replicas only.
func (m *Manager) openPartition(t *Topic, i int32) (p *Partition, isNew bool, err error) {
	tp := storage.TopicPartition{Topic: t.Meta.Name, Partition: i}
	log, dir := m.findLog(tp)
	if log == nil && (m.cfg.Cluster.Enabled() || m.Replicated()) {
		return newAbsentPartition(t, i, m.partitionEnv()), false, nil
	}
	if log == nil {
		dir = m.leastLoadedDir()
		if log, err = dir.Create(tp, m.logConfig(t.Meta.Configs)); err != nil {
			return nil, false, fmt.Errorf("creating log for %s: %w", tp, err)
		}
		isNew = true
	}
	if p, err = newPartition(t, i, log, dir, m.partitionEnv()); err != nil {
		if isNew {
			m.removeLog(dir, tp)
		}
		return nil, false, fmt.Errorf("opening %s: %w", tp, err)
	}
	return p, isNew, nil
}

// findLog returns the log of tp and its dir, or nils when no dir has it.
func (m *Manager) findLog(tp storage.TopicPartition) (*storage.Log, *storage.Dir) {
	for _, d := range m.dirs {
		if l := d.Log(tp); l != nil {
			return l, d
		}
	}
	return nil, nil
}

// removeLogs closes partitions that were created for a topic or partition
// count that could not be completed, and removes their logs.
func (m *Manager) removeLogs(ps []*Partition) {
	for _, p := range ps {
		p.close()
		if !p.Hosted() {
			continue
		}
		m.removeLog(p.Dir, storage.TopicPartition{Topic: p.Topic.Meta.Name, Partition: p.Index})
	}
}

// removeLog removes a log created by a creation that failed. Should that
// fail too, the directory is left for the next start to find and keep as
// "-stray": nothing is lost and the broker still starts.
func (m *Manager) removeLog(d *storage.Dir, tp storage.TopicPartition) {
	if err := d.Remove(tp); err != nil && !errors.Is(err, os.ErrNotExist) {
		m.log.Error("removing the log of a failed creation; it will be kept as stray at the next start", "partition", tp.String(), "err", err)
	}
}

// leastLoadedDir is the log dir with the fewest partitions, where new ones go.
func (m *Manager) leastLoadedDir() *storage.Dir {
	best := m.dirs[0]
	for _, d := range m.dirs[1:] {
		if len(d.Logs()) < len(best.Logs()) {
			best = d
		}
	}
	return best
}

// TopicByName returns the topic or nil.
func (m *Manager) TopicByName(name string) *Topic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.topics[name]
}

// TopicByID returns the topic or nil.
func (m *Manager) TopicByID(id [16]byte) *Topic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.mu.byID[id]
}

// PartitionOf returns the partition or nil.
func (m *Manager) PartitionOf(name string, idx int32) *Partition {
	t := m.TopicByName(name)
	if t == nil || idx < 0 || idx >= int32(len(t.Partitions)) {
		return nil
	}
	return t.Partitions[idx]
}

// CreateTopic validates and creates a topic. It returns a Kafka error and a
// message for the client; validateOnly checks without creating.
func (m *Manager) CreateTopic(name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (*Topic, *kerr.Error, string) {
	if err := ValidTopicName(name); err != nil {
		return nil, kerr.InvalidTopicException, err.Error()
	}
	if partitions == -1 {
		partitions = m.cfg.NumPartitions
	}
	if rf == -1 {
		rf = m.cfg.DefaultReplicationFactor
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.mu.topics[name]; ok {
		return nil, kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", name)
	}
	if validateOnly {
		return nil, nil, ""
	}
	t, err := m.addTopicLocked(controller.Topic{Name: name, ID: controller.NewTopicID(), Partitions: partitions, ReplicationFactor: rf, Configs: configs})
	if err != nil {
		kerrv, msg := creationError(err)
		return nil, kerrv, fmt.Sprintf("topic '%s' was not created: %s", name, msg)
	}
	return t, nil, ""
}

// addTopicLocked creates the logs and partitions of a validated topic, then
// records it in the metadata store. It is all or nothing: on any failure
// the logs created are removed again and the store is not changed. The
// store is written last, so that it never names a partition without a log
// (a crash in between leaves empty logs that the next start keeps as
// "-stray"). m.mu must be held.
func (m *Manager) addTopicLocked(meta controller.Topic) (*Topic, error) {
	t, err := m.openTopic(meta)
	if err != nil {
		m.log.Error("create topic failed; nothing of it was kept", "topic", meta.Name, "err", err)
		return nil, err
	}
	if err := m.store.CreateTopic(meta); err != nil {
		m.log.Error("create topic failed: recording it in the metadata failed; its logs are removed", "topic", meta.Name, "err", err)
		m.removeLogs(t.Partitions)
		return nil, err
	}
	m.mu.topics[meta.Name] = t
	m.mu.byID[meta.ID] = t
	m.log.Info("created topic", "topic", meta.Name, "partitions", meta.Partitions, "id", fmtUUID(meta.ID))
	return t, nil
}

// InternalTopic returns the internal topic name, creating it with the given
// partitions and configs if it does not exist yet.
func (m *Manager) InternalTopic(name string, partitions int32, configs map[string]string) (*Topic, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.mu.topics[name]; ok {
		return t, nil
	}
	return m.addTopicLocked(controller.Topic{Name: name, ID: controller.NewTopicID(), Partitions: partitions, ReplicationFactor: 1, Configs: configs})
}

// DeleteTopic removes a topic from the metadata store and its data from disk.
func (m *Manager) DeleteTopic(name string) *kerr.Error {
	m.mu.Lock()
	t, ok := m.mu.topics[name]
	if !ok {
		m.mu.Unlock()
		return kerr.UnknownTopicOrPartition
	}
	if err := m.store.DeleteTopic(name); err != nil {
		m.mu.Unlock()
		m.log.Error("delete topic failed", "topic", name, "err", err)
		return kerr.KafkaStorageError
	}
	delete(m.mu.topics, name)
	delete(m.mu.byID, t.Meta.ID)
	m.mu.Unlock()
	for _, p := range t.Partitions {
		p.close()
		if !p.Hosted() {
			continue
		}
		tp := storage.TopicPartition{Topic: name, Partition: p.Index}
		if err := p.Dir.Remove(tp); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.log.Error("removing partition data", "topic", name, "partition", p.Index, "err", err)
		}
	}
	m.log.Info("deleted topic", "topic", name)
	return nil
}

// writeHighWatermarks checkpoints every partition's HW into its log dir.
func (m *Manager) writeHighWatermarks() error {
	per := map[*storage.Dir]map[storage.TopicPartition]int64{}
	m.mu.RLock()
	for _, t := range m.mu.topics {
		for _, p := range t.Partitions {
			if !p.Hosted() {
				continue
			}
			if per[p.Dir] == nil {
				per[p.Dir] = map[storage.TopicPartition]int64{}
			}
			per[p.Dir][storage.TopicPartition{Topic: t.Meta.Name, Partition: p.Index}] = p.HighWatermark()
		}
	}
	m.mu.RUnlock()
	var errs []error
	for d, hw := range per {
		errs = append(errs, d.WriteHighWatermarks(hw))
	}
	return errors.Join(errs...)
}

// creationError maps why a topic or partitions could not be created to the
// Kafka error and the message its creator gets. Running out of file
// descriptors is not a disk failure: it is UNKNOWN_SERVER_ERROR (not
// retriable, so the client shows the message) naming the limit to raise.
// A failed disk (offline dir, full disk, I/O error) is KAFKA_STORAGE_ERROR,
// as Kafka answers for a storage exception.
func creationError(err error) (*kerr.Error, string) {
	switch {
	case errors.Is(err, storage.ErrTooManyOpenFiles):
		return kerr.UnknownServerError, err.Error()
	case errors.Is(err, storage.ErrLogDirOffline), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT),
		errors.Is(err, syscall.EIO), errors.Is(err, syscall.EROFS):
		return kerr.KafkaStorageError, err.Error()
	default:
		return kerr.UnknownServerError, err.Error()
	}
}

func fmtUUID(id [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
}

// TopicNames returns the name of every topic, in no order.
func (m *Manager) TopicNames() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := make([]string, 0, len(m.mu.topics))
	for n := range m.mu.topics {
		names = append(names, n)
	}
	return names
}

// Topics returns every topic, in no order.
func (m *Manager) Topics() []*Topic {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Topic, 0, len(m.mu.topics))
	for _, t := range m.mu.topics {
		out = append(out, t)
	}
	return out
}
