package broker

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/broker/metrics"
)

// controllerStatsTimeout bounds a scrape's wait for the controller's loop.
const controllerStatsTimeout = 2 * time.Second

// controllerStats feeds the kafka_controller_kafkacontroller_* metrics. In a
// cluster only the active controller counts (from a snapshot of its
// partition states); a single node is its own controller, every partition
// it serves online.
func (b *Broker) controllerStats() metrics.ControllerStats {
	if b.cluster == nil {
		names := b.rm.TopicNames()
		n := 0
		for _, name := range names {
			if t := b.rm.TopicByName(name); t != nil {
				n += len(t.Partitions)
			}
		}
		return metrics.ControllerStats{Active: true, GlobalPartitions: n, GlobalTopics: len(names)}
	}
	ctrl := b.cluster.ctrl.Load()
	if ctrl == nil || !ctrl.Active() {
		return metrics.ControllerStats{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerStatsTimeout)
	defer cancel()
	states, err := ctrl.Snapshot(ctx)
	if err != nil { // resigned meanwhile, or its loop is busy
		return metrics.ControllerStats{Active: ctrl.Active()}
	}
	s := metrics.ControllerStats{Active: true, GlobalPartitions: len(states)}
	topics := map[string]bool{}
	for tp, st := range states {
		topics[tp.Topic] = true
		if st.Leader < 0 {
			s.OfflinePartitions++
		}
	}
	s.GlobalTopics = len(topics)
	return s
}
