package broker

import (
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// watchQuotaChanges keeps a cluster-mode broker's client quotas current:
// every broker writes its quota changes to /config/users and
// /config/clients and announces them in /config/changes (zkstore), so each
// reloads the quotas when a notification appears there, as Kafka's
// ZkConfigManager does. The goroutine is owned by the broker: it returns
// when the broker closes (b.closing) and closeZK waits for it.
func (b *Broker) watchQuotaChanges() {
	c := b.cluster
	c.quotaWatch = make(chan struct{})
	go func() {
		defer close(c.quotaWatch)
		retry := time.NewTimer(0)
		defer retry.Stop()
		<-retry.C
		for {
			_, _, ev, err := c.zk.ChildrenW(zkdata.ConfigChangesPath)
			if err != nil {
				retry.Reset(time.Second)
				select {
				case <-b.closing:
					return
				case <-retry.C:
					continue
				}
			}
			// Reload after every new watch, which is set first: a change
			// landing before it is read here, one landing after fires it.
			if err := b.api.ReloadQuotas(); err != nil {
				b.log.Warn("reloading client quotas", "err", err)
			}
			select {
			case <-b.closing:
				return
			case e := <-ev:
				if e.Type == zk.EventNotWatching {
					// Session gone: set the watch again after a pause.
					retry.Reset(time.Second)
					select {
					case <-b.closing:
						return
					case <-retry.C:
					}
				}
			}
		}
	}()
}
