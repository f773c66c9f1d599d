package broker

import (
	"time"

	"github.com/kbroker/kbroker/controller/zkdata"
)

// startDynamicWatch, in cluster mode, watches /config/changes as Kafka's
// ZkConfigManager does: a notification (any entity; reading two znodes is
// cheap) makes the broker reload its own and the cluster-wide dynamic
// configs and the group configs, so a change made through any broker
// reaches them all. The goroutine is stopped by Close (stopDynamicWatch)
// before the ZooKeeper session ends.
func (b *Broker) startDynamicWatch() {
	if b.cluster == nil {
		return
	}
	b.dynWatch = make(chan struct{})
	go func() {
		defer close(b.dynWatch)
		for {
			_, _, ev, err := b.cluster.zk.ChildrenW(zkdata.ConfigChangesPath)
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
