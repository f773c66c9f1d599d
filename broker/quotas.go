package broker

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/quota"
)

// startQuotas makes the client quota manager (quota.window.num ×
// quota.window.size.seconds) and loads it with the quotas of the metadata
// store; the API keeps it current through AlterClientQuotas.
func (b *Broker) startQuotas() error {
	b.quotas = quota.NewManager(quota.Config{
		Samples:  b.cfg.QuotaWindowNum,
		WindowMs: int64(b.cfg.QuotaWindowSizeSeconds) * 1000,
	})
	return b.api.SetQuotas(b.quotas)
}

// quotaHandler wraps next with the client quotas (broker/quota).
func (b *Broker) quotaHandler(next network.Handler) network.Handler {
	return b.quotas.Handler(next, quota.HandlerConfig{
		Now: b.now,
		Partitions: func(topic string) int32 {
			t, ok := b.store.Topic(topic)
			if !ok {
				return 0
			}
			return t.Partitions
		},
	})
}
