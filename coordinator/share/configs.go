package share

import (
	"fmt"
	"sort"
	"strconv"
)

// The group configs (ConfigResource type GROUP, KIP-848/KIP-932) a share
// group honours. Kafka's consumer.* and streams.* group configs are not
// accepted: nothing here would use them.
const (
	ConfigAutoOffsetReset    = "share.auto.offset.reset"
	ConfigRecordLockDuration = "share.record.lock.duration.ms"
	ConfigDeliveryCountLimit = "share.delivery.count.limit"
	ConfigIsolationLevel     = "share.isolation.level"
	ConfigSessionTimeout     = "share.session.timeout.ms"
	ConfigHeartbeatInterval  = "share.heartbeat.interval.ms"
)

// GroupConfigNames lists the group configs, sorted.
func GroupConfigNames() []string {
	n := []string{ConfigAutoOffsetReset, ConfigRecordLockDuration, ConfigDeliveryCountLimit,
		ConfigIsolationLevel, ConfigSessionTimeout, ConfigHeartbeatInterval}
	sort.Strings(n)
	return n
}

// IsGroupConfig reports whether name is a group config this package knows.
func IsGroupConfig(name string) bool {
	for _, n := range GroupConfigNames() {
		if n == name {
			return true
		}
	}
	return false
}

// defaultGroupConfig is the broker-level value a group config falls back to.
func (c *Coordinator) defaultGroupConfig(name string) string {
	switch name {
	case ConfigAutoOffsetReset:
		return "latest"
	case ConfigRecordLockDuration:
		return strconv.Itoa(int(c.cfg.RecordLockDurationMs))
	case ConfigDeliveryCountLimit:
		return strconv.Itoa(int(c.cfg.DeliveryCountLimit))
	case ConfigIsolationLevel:
		return "read_uncommitted"
	case ConfigSessionTimeout:
		return strconv.Itoa(int(c.cfg.SessionTimeoutMs))
	case ConfigHeartbeatInterval:
		return strconv.Itoa(int(c.cfg.HeartbeatIntervalMs))
	}
	return ""
}

// ValidateGroupConfig checks one group config value, with Kafka's message
// for INVALID_CONFIG when it is wrong.
func (c *Coordinator) ValidateGroupConfig(name, value string) error {
	intIn := func(lo, hi int64) error {
		v, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", value, name)
		}
		if v < lo || v > hi {
			return fmt.Errorf("Invalid value %s for configuration %s: Value must be in [%d, %d]", value, name, lo, hi)
		}
		return nil
	}
	switch name {
	case ConfigAutoOffsetReset:
		if value != "latest" && value != "earliest" {
			return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: latest, earliest", value, name)
		}
		return nil
	case ConfigIsolationLevel:
		if value != "read_uncommitted" && value != "read_committed" {
			return fmt.Errorf("Invalid value %s for configuration %s: String must be one of: read_committed, read_uncommitted", value, name)
		}
		return nil
	case ConfigRecordLockDuration:
		return intIn(int64(c.cfg.MinRecordLockDurationMs), int64(c.cfg.MaxRecordLockDurationMs))
	case ConfigDeliveryCountLimit:
		return intIn(2, 10)
	case ConfigSessionTimeout, ConfigHeartbeatInterval:
		return intIn(1, 1<<31-1)
	}
	return fmt.Errorf("Unknown group config name: %s", name)
}

// SetGroupConfigs replaces a group's overrides; the caller validated each
// value. The group need not exist: configs may precede it.
func (c *Coordinator) SetGroupConfigs(group string, overrides map[string]string) {
	if len(overrides) == 0 {
		delete(c.configs, group)
		return
	}
	cp := make(map[string]string, len(overrides))
	for k, v := range overrides {
		cp[k] = v
	}
	c.configs[group] = cp
}

// GroupConfigOverrides returns a copy of a group's overrides.
func (c *Coordinator) GroupConfigOverrides(group string) map[string]string {
	cp := map[string]string{}
	for k, v := range c.configs[group] {
		cp[k] = v
	}
	return cp
}

// ConfiguredGroups returns the ids of the groups with overrides, sorted
// (ListConfigResources lists them as GROUP resources).
func (c *Coordinator) ConfiguredGroups() []string {
	ids := make([]string, 0, len(c.configs))
	for id := range c.configs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// GroupConfig returns the effective value of a group config.
func (c *Coordinator) GroupConfig(group, name string) string {
	if v, ok := c.configs[group][name]; ok {
		return v
	}
	return c.defaultGroupConfig(name)
}

func (c *Coordinator) groupInt(group, name string, def int32) int32 {
	v, err := strconv.ParseInt(c.GroupConfig(group, name), 10, 32)
	if err != nil || v <= 0 {
		return def
	}
	return int32(v)
}

// LockDurationMs is the group's acquisition lock duration.
func (c *Coordinator) LockDurationMs(group string) int32 {
	return c.groupInt(group, ConfigRecordLockDuration, c.cfg.RecordLockDurationMs)
}

// ReadCommitted reports whether the group reads only committed records.
func (c *Coordinator) ReadCommitted(group string) bool {
	return c.GroupConfig(group, ConfigIsolationLevel) == "read_committed"
}

func (c *Coordinator) deliveryLimit(group string) int32 {
	return c.groupInt(group, ConfigDeliveryCountLimit, c.cfg.DeliveryCountLimit)
}

func (c *Coordinator) sessionTimeoutMs(group string) int32 {
	return c.groupInt(group, ConfigSessionTimeout, c.cfg.SessionTimeoutMs)
}

func (c *Coordinator) heartbeatIntervalMs(group string) int32 {
	return c.groupInt(group, ConfigHeartbeatInterval, c.cfg.HeartbeatIntervalMs)
}
