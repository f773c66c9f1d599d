package config

// Dynamic broker configs, as Kafka's DynamicBrokerConfig (ZooKeeper mode):
// IncrementalAlterConfigs and AlterConfigs on a BROKER resource set
// overrides for one broker (resource name = its id) or for every broker
// (the cluster-wide default, resource name ""). The effective configuration
// is, key by key, the per-broker override, else the cluster default, else
// server.properties, else Kafka's default; the synonym chains
// (log.retention.ms over .minutes over .hours) are resolved after that
// merge, as Kafka does, so a static log.retention.ms still wins over a
// dynamic log.retention.hours.
//
// Which names may change is Kafka's list (DynamicBrokerConfig.AllDynamicConfigs)
// cut to what kbroker has: see dynamicNames. Anything else is refused with
// Kafka's "Cannot update these configs dynamically: [...]".

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DynamicKind says what a dynamic change of a broker config does in kbroker.
type DynamicKind int8

const (
	// DynamicApplied configs take effect at once (log defaults of topics
	// without their own override, message.max.bytes, log.level, the TLS
	// files of a listener).
	DynamicApplied DynamicKind = iota + 1
	// DynamicAccepted configs are dynamic in Kafka but size things kbroker
	// does not have (thread pools, the cleaner's buffers): they are stored
	// and reported, and change nothing.
	DynamicAccepted
	// DynamicPerBroker configs are applied but only per broker, never as
	// the cluster default (a listener's TLS files, as Kafka's listener
	// configs).
	DynamicPerBroker
)

// dynamicNames are the broker configs that may change without a restart.
var dynamicNames = map[string]DynamicKind{
	// Log defaults (Kafka's DynamicLogConfig: the broker synonyms of topic configs).
	"log.segment.bytes": DynamicApplied, "log.roll.ms": DynamicApplied, "log.roll.hours": DynamicApplied,
	"log.roll.jitter.ms": DynamicApplied, "log.roll.jitter.hours": DynamicApplied,
	"log.index.interval.bytes": DynamicApplied, "log.index.size.max.bytes": DynamicApplied,
	"log.flush.interval.messages": DynamicApplied, "log.flush.interval.ms": DynamicApplied,
	"log.retention.bytes": DynamicApplied, "log.retention.ms": DynamicApplied,
	"log.retention.minutes": DynamicApplied, "log.retention.hours": DynamicApplied,
	"log.cleanup.policy": DynamicApplied, "min.insync.replicas": DynamicApplied,
	"compression.type": DynamicApplied, "message.max.bytes": DynamicApplied,
	"log.cleaner.delete.retention.ms": DynamicApplied, "log.cleaner.min.compaction.lag.ms": DynamicApplied,
	"log.cleaner.max.compaction.lag.ms": DynamicApplied, "log.cleaner.min.cleanable.ratio": DynamicApplied,
	"log.message.timestamp.type": DynamicApplied, "log.message.timestamp.before.max.ms": DynamicApplied,
	"log.message.timestamp.after.max.ms": DynamicApplied, "log.segment.delete.delay.ms": DynamicApplied,
	"log.preallocate": DynamicAccepted, "unclean.leader.election.enable": DynamicAccepted,
	// The log cleaner (Kafka's LogCleaner.ReconfigurableConfigs): kbroker
	// cleans in one goroutine without dedupe buffers or I/O throttling.
	"log.cleaner.threads": DynamicAccepted, "log.cleaner.dedupe.buffer.size": DynamicAccepted,
	"log.cleaner.io.buffer.size": DynamicAccepted, "log.cleaner.io.buffer.load.factor": DynamicAccepted,
	"log.cleaner.io.max.bytes.per.second": DynamicAccepted, "log.cleaner.backoff.ms": DynamicAccepted,
	// Thread pools (Kafka's DynamicThreadPool): kbroker has a goroutine per
	// connection and per task, no pools to resize; the static
	// num.recovery.threads.per.data.dir sizes start-up and shutdown only.
	"num.io.threads": DynamicAccepted, "num.network.threads": DynamicAccepted,
	"num.replica.fetchers": DynamicAccepted, "num.recovery.threads.per.data.dir": DynamicAccepted,
	"background.threads": DynamicAccepted,
	// kbroker's own.
	"log.level": DynamicApplied,
}

// dynamicListenerSSL are the listener-prefixed ssl.* configs that may
// change (listener.name.<l>.<key>): a listener's key and trust store files.
var dynamicListenerSSL = map[string]bool{"ssl.keystore.location": true, "ssl.truststore.location": true}

// DynamicBrokerConfigKind returns how name may change dynamically; ok is
// false for a config that needs a restart (or that kbroker does not know).
func DynamicBrokerConfigKind(name string) (kind DynamicKind, ok bool) {
	if k, ok := dynamicNames[name]; ok {
		return k, true
	}
	if _, rest, ok := listenerKey(name); ok && dynamicListenerSSL[rest] {
		return DynamicPerBroker, true
	}
	return 0, false
}

// CheckDynamicBrokerConfigs returns Kafka's refusal of a dynamic change of
// names (DynamicBrokerConfig.validateConfigs): configs that need a restart,
// ssl.* without a listener prefix, and per-broker configs set as the
// cluster default. nil when every name may change.
func CheckDynamicBrokerConfigs(names []string, perBroker bool) error {
	var static, unprefixed, brokerOnly []string
	for _, n := range names {
		kind, ok := DynamicBrokerConfigKind(n)
		switch {
		case !ok && strings.HasPrefix(n, sslPrefix):
			unprefixed = append(unprefixed, n)
		case !ok:
			static = append(static, n)
		case kind == DynamicPerBroker && !perBroker:
			brokerOnly = append(brokerOnly, n)
		}
	}
	// Kafka 4 prints the names as a Java set, "[a, b]" (sorted here: a
	// HashSet's order is no contract).
	list := func(s []string) string { sort.Strings(s); return "[" + strings.Join(s, ", ") + "]" }
	switch {
	case len(static) > 0:
		return fmt.Errorf("Cannot update these configs dynamically: %s", list(static))
	case len(unprefixed) > 0:
		return fmt.Errorf("These security configs can be dynamically updated only per-listener using the listener prefix: %s", list(unprefixed))
	case len(brokerOnly) > 0:
		return fmt.Errorf("Cannot update these configs at default cluster level, broker id must be specified: %s", list(brokerOnly))
	}
	return nil
}

// DefaultBrokerEntity is the name under which the cluster-wide default
// broker configs are stored: Kafka's ZooKeeper entity
// /config/brokers/<default>.
const DefaultBrokerEntity = "<default>"

// Dynamic holds a broker's static configuration and its dynamic overrides,
// and the effective configuration that results. Readers call Current, which
// takes no lock; changes go through Set, serialised by the caller (the
// handler that persists them).
type Dynamic struct {
	static Config
	mu     struct {
		sync.Mutex
		perBroker, clusterDefault map[string]string
	}
	cur atomic.Pointer[Config]
}

// NewDynamic starts with no dynamic override: Current is static.
func NewDynamic(static Config) *Dynamic {
	d := &Dynamic{static: static}
	c := static
	d.cur.Store(&c)
	return d
}

// Current is the effective configuration.
func (d *Dynamic) Current() Config { return *d.cur.Load() }

// Static is the configuration of server.properties and --override.
func (d *Dynamic) Static() Config { return d.static }

// Overrides returns copies of the dynamic overrides: this broker's and the
// cluster default.
func (d *Dynamic) Overrides() (perBroker, clusterDefault map[string]string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.mu.perBroker), maps.Clone(d.mu.clusterDefault)
}

// Set replaces the dynamic overrides and returns the new effective
// configuration; on an error (a value that does not parse) nothing changes.
func (d *Dynamic) Set(perBroker, clusterDefault map[string]string) (Config, error) {
	c, err := d.Resolve(perBroker, clusterDefault)
	if err != nil {
		return Config{}, err
	}
	d.mu.Lock()
	d.mu.perBroker, d.mu.clusterDefault = maps.Clone(perBroker), maps.Clone(clusterDefault)
	d.cur.Store(&c)
	d.mu.Unlock()
	return c, nil
}

// retentionChains are the props read together, coarser first: whatever the
// source of each, the finer one wins (Kafka's KafkaConfig precedence).
var retentionChains = []string{"log.roll.hours", "log.roll.ms", "log.retention.hours", "log.retention.minutes", "log.retention.ms"}

// Resolve returns the effective configuration with the given overrides,
// without keeping it (to validate a change before it is persisted). A value
// that does not parse is an error in Kafka's words, naming the key.
func (d *Dynamic) Resolve(perBroker, clusterDefault map[string]string) (Config, error) {
	c := d.static
	merged := maps.Clone(clusterDefault)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, perBroker)
	apply := map[string]string{}
	for k, v := range merged {
		if _, ok := props[k]; ok {
			apply[k] = v
		}
	}
	for _, k := range retentionChains {
		if _, dyn := apply[k]; !dyn {
			if v, ok := d.static.Props[k]; ok {
				apply[k] = v
			}
		}
	}
	keys := slices.Collect(maps.Keys(apply))
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := slices.Index(order, keys[i]), slices.Index(order, keys[j])
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		if err := props[k].apply(&c, apply[k]); err != nil {
			return Config{}, fmt.Errorf("Invalid value %s for configuration %s: %v", apply[k], k, err)
		}
	}
	c.Props = maps.Clone(d.static.Props)
	if c.Props == nil {
		c.Props = map[string]string{}
	}
	for k, v := range merged {
		if _, ok := props[k]; ok {
			c.Props[k] = v
		}
	}
	// A listener's TLS files: a copy of its TLS configuration with the
	// dynamic locations (a keystore file replaces an inline key).
	c.Listeners = slices.Clone(d.static.Listeners)
	for i, l := range c.Listeners {
		if l.TLS == nil {
			continue
		}
		prefix := listenerKeyPrefix + strings.ToLower(l.Name) + "."
		ks, kok := merged[prefix+"ssl.keystore.location"]
		ts, tok := merged[prefix+"ssl.truststore.location"]
		if !kok && !tok {
			continue
		}
		tc := *l.TLS
		if kok {
			tc.KeystoreLocation, tc.KeystoreCertificateChain, tc.KeystoreKey = strings.TrimSpace(ks), "", ""
		}
		if tok {
			tc.TruststoreLocation, tc.TruststoreCertificates = strings.TrimSpace(ts), ""
		}
		c.Listeners[i].TLS = &tc
	}
	for k := range merged {
		name, rest, ok := listenerKey(k)
		if !ok || !dynamicListenerSSL[rest] {
			continue
		}
		if !slices.ContainsFunc(c.Listeners, func(l Listener) bool { return l.Name == name && l.TLS != nil }) {
			return Config{}, fmt.Errorf("Invalid value %s for configuration %s: listener %s is not an SSL or SASL_SSL listener of this broker", merged[k], k, name)
		}
	}
	return c, nil
}

// Synonym is one source of a broker config's value, as DescribeConfigs
// reports synonyms.
type Synonym struct {
	Name, Value string
	Source      kmsg.ConfigSource
}

// synonymChains are the broker configs Kafka reads together
// (DynamicBrokerConfig.brokerConfigSynonyms), finest first.
var synonymChains = map[string][]string{
	"log.retention.ms":      {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	"log.roll.ms":           {"log.roll.ms", "log.roll.hours"},
	"log.roll.jitter.ms":    {"log.roll.jitter.ms", "log.roll.jitter.hours"},
	"log.flush.interval.ms": {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
}

// chainDefaults are Kafka's defaults of chain members kbroker has no
// property for.
var chainDefaults = map[string]string{"log.roll.jitter.hours": "0", "log.flush.scheduler.interval.ms": "9223372036854775807"}

// Synonyms lists the sources of broker config name as Kafka's
// ConfigHelper.configSynonyms does: for each level (this broker's dynamic
// override, the cluster default, server.properties, Kafka's default), the
// members of name's synonym chain set there; of that list only what starts
// at name itself. The first is where the effective value comes from; none
// means DEFAULT_CONFIG with no value of its own (log.retention.ms).
func (d *Dynamic) Synonyms(name string) []Synonym {
	chain, ok := synonymChains[name]
	if !ok {
		chain = []string{name}
	}
	perBroker, clusterDefault := d.Overrides()
	defaults := func(k string) (string, bool) {
		if v, ok := chainDefaults[k]; ok {
			return v, true
		}
		p, ok := props[k]
		return p.def, ok && p.def != ""
	}
	levels := []struct {
		src kmsg.ConfigSource
		get func(k string) (string, bool)
	}{
		{kmsg.ConfigSourceDynamicBrokerConfig, func(k string) (string, bool) { v, ok := perBroker[k]; return v, ok }},
		{kmsg.ConfigSourceDynamicDefaultBrokerConfig, func(k string) (string, bool) { v, ok := clusterDefault[k]; return v, ok }},
		{kmsg.ConfigSourceStaticBrokerConfig, func(k string) (string, bool) { v, ok := d.static.Props[k]; return v, ok }},
		{kmsg.ConfigSourceDefaultConfig, defaults},
	}
	var out []Synonym
	for _, l := range levels {
		for _, k := range chain {
			if v, ok := l.get(k); ok {
				out = append(out, Synonym{Name: k, Value: v, Source: l.src})
			}
		}
	}
	for i, s := range out {
		if s.Name == name {
			return out[i:]
		}
	}
	return nil
}
