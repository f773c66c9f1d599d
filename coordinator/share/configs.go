package share

import "github.com/kbroker/kbroker/coordinator/groupconfig"

// A share group's effective share.* group configs (KIP-932). The overrides
// live in one table for all group kinds, groupconfig.Store; the coordinator
// reads them through Config.GroupConfigs, so a change applies from the next
// heartbeat, fetch or acknowledgement of the group.

// groupValues are the group's effective configs: Config.GroupConfigs when
// set, else the coordinator's own broker-level settings.
func (c *Coordinator) groupValues(group string) groupconfig.Values {
	if c.cfg.GroupConfigs != nil {
		return c.cfg.GroupConfigs(group)
	}
	return groupconfig.Values{
		ShareSessionTimeoutMs:     c.cfg.SessionTimeoutMs,
		ShareHeartbeatIntervalMs:  c.cfg.HeartbeatIntervalMs,
		ShareRecordLockDurationMs: c.cfg.RecordLockDurationMs,
		ShareDeliveryCountLimit:   c.cfg.DeliveryCountLimit,
		ShareAutoOffsetReset:      "latest",
		ShareIsolationLevel:       "read_uncommitted",
	}
}

// positive is v, or def when v is not positive (an override that failed
// to parse reads as the default already; this guards a zero Values).
func positive(v, def int32) int32 {
	if v <= 0 {
		return def
	}
	return v
}

// LockDurationMs is the group's acquisition lock duration.
func (c *Coordinator) LockDurationMs(group string) int32 {
	return positive(c.groupValues(group).ShareRecordLockDurationMs, c.cfg.RecordLockDurationMs)
}

// ReadCommitted reports whether the group reads only committed records.
func (c *Coordinator) ReadCommitted(group string) bool {
	return c.groupValues(group).ShareIsolationLevel == "read_committed"
}

// startsEarliest reports whether a new share-partition of the group starts
// at the log start (share.auto.offset.reset=earliest) rather than the HW.
func (c *Coordinator) startsEarliest(group string) bool {
	return c.groupValues(group).ShareAutoOffsetReset == "earliest"
}

func (c *Coordinator) deliveryLimit(group string) int32 {
	return positive(c.groupValues(group).ShareDeliveryCountLimit, c.cfg.DeliveryCountLimit)
}

func (c *Coordinator) sessionTimeoutMs(group string) int32 {
	return positive(c.groupValues(group).ShareSessionTimeoutMs, c.cfg.SessionTimeoutMs)
}

func (c *Coordinator) heartbeatIntervalMs(group string) int32 {
	return positive(c.groupValues(group).ShareHeartbeatIntervalMs, c.cfg.HeartbeatIntervalMs)
}
