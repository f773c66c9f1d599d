package coordhost

// The group configs (ConfigResource GROUP): one groupconfig.Store for the
// KIP-848 and the share coordinator, persisted in the metadata store. Both
// coordinators read a group's values through a callback at each use, so a
// change made with IncrementalAlterConfigs applies from the group's next
// heartbeat. The Store's lock is a leaf: the callbacks run under groups.mu
// or ShareHost.mu and take only it.

import (
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/groupconfig"
)

// GroupConfigs returns the group config overrides of every group.
func (h *Host) GroupConfigs() *groupconfig.Store { return h.groupCfgs }

// attachGroupConfigs loads the stored overrides and persists later changes.
func (h *Host) attachGroupConfigs(store controller.Store) {
	h.groupCfgs.Attach(store.GroupConfigs(), store.UpdateGroupConfigs)
}

// RefreshGroupConfigs reloads every group's configs from the metadata
// store (cluster mode: a change made through another broker).
func (h *Host) RefreshGroupConfigs() {
	if h.store != nil {
		h.groupCfgs.Reload(h.store.GroupConfigs())
	}
}

// refreshGroupConfig reloads one group's configs from the metadata store,
// so that what a leader decides from them (the SPSO of a new
// share-partition, from share.auto.offset.reset) follows a change made
// through another broker even before that broker's announcement arrives
// here. On a read error the cached values stay.
func (h *Host) refreshGroupConfig(group string) {
	if h.store == nil {
		return
	}
	cfg, err := h.store.GroupConfig(group)
	if err != nil {
		h.log.Warn("reading group configs failed; using the cached ones", "group", group, "err", err)
		return
	}
	h.groupCfgs.ReloadGroup(group, cfg)
}

// groupConfigBroker maps the broker properties onto the group configs'
// defaults and bounds; an unset (zero) property keeps Kafka's default.
func groupConfigBroker(c config.Config) groupconfig.Broker {
	b := groupconfig.DefaultBroker()
	set := func(dst *int32, v int32) {
		if v > 0 {
			*dst = v
		}
	}
	set(&b.ConsumerSessionTimeoutMs, c.GroupConsumerSessionTimeoutMs)
	set(&b.ConsumerMinSessionTimeoutMs, c.GroupConsumerMinSessionTimeoutMs)
	set(&b.ConsumerMaxSessionTimeoutMs, c.GroupConsumerMaxSessionTimeoutMs)
	set(&b.ConsumerHeartbeatIntervalMs, c.GroupConsumerHeartbeatIntervalMs)
	set(&b.ConsumerMinHeartbeatIntervalMs, c.GroupConsumerMinHeartbeatIntervalMs)
	set(&b.ConsumerMaxHeartbeatIntervalMs, c.GroupConsumerMaxHeartbeatIntervalMs)
	set(&b.ShareSessionTimeoutMs, c.GroupShareSessionTimeoutMs)
	set(&b.ShareMinSessionTimeoutMs, c.GroupShareMinSessionTimeoutMs)
	set(&b.ShareMaxSessionTimeoutMs, c.GroupShareMaxSessionTimeoutMs)
	set(&b.ShareHeartbeatIntervalMs, c.GroupShareHeartbeatIntervalMs)
	set(&b.ShareMinHeartbeatIntervalMs, c.GroupShareMinHeartbeatIntervalMs)
	set(&b.ShareMaxHeartbeatIntervalMs, c.GroupShareMaxHeartbeatIntervalMs)
	set(&b.ShareRecordLockDurationMs, c.GroupShareRecordLockDurationMs)
	set(&b.ShareMinRecordLockDurationMs, c.GroupShareMinRecordLockDurationMs)
	set(&b.ShareMaxRecordLockDurationMs, c.GroupShareMaxRecordLockDurationMs)
	set(&b.ShareDeliveryCountLimit, c.GroupShareDeliveryCountLimit)
	return b
}
