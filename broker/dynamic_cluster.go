package broker

import (
	"slices"
	"strings"
	"time"

	"github.com/kbroker/kbroker/controller/zkdata"
)

// startDynamicWatch, in cluster mode, watches /config/changes as Kafka's
// ZkConfigManager does: a notification (any entity; reading two znodes is
// cheap) makes the broker reload its own and the cluster-wide dynamic
// configs and the group configs, and apply the new overrides of each topic
// that a new notification names (applyTopicConfigChanges), so a change made
// through any broker reaches them all. The goroutine is stopped by Close
// (stopDynamicWatch) before the ZooKeeper session ends.
func (b *Broker) startDynamicWatch() {
	if b.cluster == nil {
		return
	}
	b.dynWatch = make(chan struct{})
	go func() {
		defer close(b.dynWatch)
		seen := "" // the newest notification whose topic change is applied
		for {
			changes, _, ev, err := b.cluster.zk.ChildrenW(zkdata.ConfigChangesPath)
			if err != nil {
				select {
				case <-b.closing:
					return
				case <-time.After(time.Second):
					continue
				}
			}
			b.api.RefreshBrokerConfigs() // also catches a change made before the watch was set
			b.co.RefreshGroupConfigs()
			seen = b.applyTopicConfigChanges(changes, seen)
			select {
			case <-b.closing:
				return
			case <-ev:
			}
		}
	}()
}

// stopDynamicWatch waits for the watch goroutine, once closing is closed.
func (b *Broker) stopDynamicWatch() {
	if b.dynWatch != nil {
		<-b.dynWatch
	}
}

// applyTopicConfigChanges applies the topic config changes announced by
// the notifications after seen (config_change_<seq> names sort by their
// sequence) to the topics this broker hosts, reading each topic's
// overrides from ZooKeeper, and returns the newest notification. At the
// first call (seen "") it applies nothing: a topic opened at start-up read
// its configs then.
func (b *Broker) applyTopicConfigChanges(changes []string, seen string) string {
	slices.Sort(changes)
	newest := newestChange(changes, seen)
	if seen == "" {
		return newest
	}
	for _, c := range changes {
		if c <= seen {
			continue
		}
		data, _, err := b.cluster.zk.Get(zkdata.ConfigChangesPath + "/" + c)
		if err != nil {
			continue // expired and deleted meanwhile
		}
		entity, err := zkdata.DecodeConfigChange(data)
		if err != nil {
			b.log.Warn("ignoring config change notification", "znode", c, "err", err)
			continue
		}
		topic, ok := strings.CutPrefix(entity, zkdata.ConfigEntityTopics+"/")
		if !ok {
			continue
		}
		if t, ok := b.store.Topic(topic); ok {
			b.rm.ApplyTopicConfigs(topic, t.Configs)
		}
	}
	return newest
}

// newestChange is the newest of the sorted notifications and seen: never
// older than seen, and, with neither, a name that sorts before every
// notification (so that the first one to come is applied).
func newestChange(sorted []string, seen string) string {
	newest := seen
	if newest == "" {
		newest = zkdata.ConfigChangeSeqPrefix
	}
	if len(sorted) > 0 {
		newest = max(newest, sorted[len(sorted)-1])
	}
	return newest
}
