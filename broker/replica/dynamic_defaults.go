package replica

import "github.com/kbroker/kbroker/broker/config"

// topicDefaults is the broker configuration topic configs default to: the
// static one until SetTopicDefaults (a dynamic broker config) replaces it.
func (m *Manager) topicDefaults() config.Config {
	if c := m.defaults.Load(); c != nil {
		return *c
	}
	return m.cfg
}

// SetTopicDefaults makes c the broker defaults of topic configs (a dynamic
// change of log.retention.ms, message.max.bytes, log.cleaner.*, ...): every
// topic without its own override of a changed config takes the new value at
// once — its resolved settings (produce limits, retention, compaction) and
// its logs' segment and flush configuration — as Kafka's
// DynamicLogConfig.reconfigure updates every log's config.
func (m *Manager) SetTopicDefaults(c config.Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.defaults.Store(&c)
	for name, t := range m.mu.topics {
		t.conf.p.Store(resolveSettings(c, t.Meta.Configs))
		lc := m.logConfig(t.Meta.Configs)
		for _, p := range t.Partitions {
			if p == nil || p.Log == nil {
				continue
			}
			if err := p.Log.SetConfig(lc); err != nil {
				m.log.Error("applying broker config defaults to log failed", "topic", name, "partition", p.Index, "err", err)
			}
		}
	}
}
