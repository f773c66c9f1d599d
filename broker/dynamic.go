package broker

// Dynamic broker configs (broker/api/broker_configs.go answers the
// requests; config.Dynamic resolves them). The broker loads the persisted
// overrides before it opens its topics and listeners, and applies a change
// to the rooms that read it: the topic defaults of replica.Manager (and so
// every log without its own override), the logger's level, and the TLS
// files of a listener.

import (
	"fmt"
	"strconv"

	"github.com/kbroker/kbroker/broker/api"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network"
)

// loadDynamicConfigs reads this broker's and the cluster-wide dynamic
// configs from the metadata store into b.dyn. A stored value that no longer
// parses (kbroker downgraded, say) is logged and the overrides ignored, as
// Kafka logs and skips invalid dynamic configs at start-up.
func (b *Broker) loadDynamicConfigs() {
	b.dyn = config.NewDynamic(b.cfg)
	own := b.store.BrokerConfigs(strconv.Itoa(int(b.cfg.NodeID)))
	def := b.store.BrokerConfigs(config.DefaultBrokerEntity)
	if len(own) == 0 && len(def) == 0 {
		return
	}
	c, err := b.dyn.Set(own, def)
	if err != nil {
		b.log.Error("ignoring the stored dynamic broker configs", "broker", b.cfg.NodeID, "err", err)
		return
	}
	b.applyDynamic(b.cfg, c)
	b.log.Info("dynamic broker configs loaded", "broker", b.cfg.NodeID, "configs", own, "cluster_default", def)
}

// brokerConfigHooks are what the API calls on a change.
func (b *Broker) brokerConfigHooks() *api.BrokerConfigs {
	return &api.BrokerConfigs{
		Dynamic: b.dyn,
		Check:   b.checkDynamic,
		Apply: func(next config.Config) {
			b.dynMu.Lock()
			defer b.dynMu.Unlock()
			b.applyDynamic(b.applied, next)
		},
	}
}

// checkDynamic refuses a configuration whose changed TLS files do not load.
func (b *Broker) checkDynamic(next config.Config) error {
	cur := b.dyn.Current()
	for i, l := range next.Listeners {
		if l.TLS != nil && tlsFilesChanged(cur.Listeners[i].TLS, l.TLS) {
			if err := network.CheckTLS(l); err != nil {
				return fmt.Errorf("Invalid value for listener %s TLS files: %w", l.Name, err)
			}
		}
	}
	return nil
}

// applyDynamic makes next take effect, prev being what is in effect now.
func (b *Broker) applyDynamic(prev, next config.Config) {
	b.rm.SetTopicDefaults(next)
	if lv := b.cfg.Logging.LevelVar; lv != nil {
		lv.Set(next.Logging.Level)
	}
	if b.net != nil {
		for i, l := range next.Listeners {
			if l.TLS != nil && tlsFilesChanged(prev.Listeners[i].TLS, l.TLS) {
				if err := b.net.ReconfigureTLS(l); err != nil {
					b.log.Error("dynamic TLS change not applied", "listener", l.Name, "err", err)
				}
			}
		}
	}
	b.applied = next
}

func tlsFilesChanged(a, b *config.TLSConfig) bool {
	if a == nil || b == nil {
		return a != b
	}
	return a.KeystoreLocation != b.KeystoreLocation || a.TruststoreLocation != b.TruststoreLocation ||
		a.KeystoreCertificateChain != b.KeystoreCertificateChain || a.TruststoreCertificates != b.TruststoreCertificates
}
