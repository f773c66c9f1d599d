package api

// Dynamic broker configs: AlterConfigs and IncrementalAlterConfigs on a
// BROKER resource (name = this broker's id for its own overrides, "" for
// the cluster-wide default), and DescribeConfigs of one. The order is
// Kafka's (ZkAdminManager.alterConfigs): the new set is computed, checked
// (config.CheckDynamicBrokerConfigs: only dynamic configs, ssl.* only with
// a listener prefix and only per broker), resolved (every value parses),
// checked by the broker (a listener's new TLS files load), then persisted
// in the metadata store (FileStore, or ZooKeeper /config/brokers/<entity>
// with a /config/changes notification) and applied without a restart.
// Every refusal is INVALID_REQUEST with Kafka's message, as Kafka 3.9 in
// ZooKeeper mode answers (it wraps ConfigException in InvalidRequestException).

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BrokerConfigs is what the handlers need to change the broker's dynamic
// configs; the broker implements Check and Apply (broker/dynamic.go).
type BrokerConfigs struct {
	Dynamic *config.Dynamic
	// Check validates an effective configuration before it is persisted
	// (a listener's new TLS files must load).
	Check func(next config.Config) error
	// Apply makes an effective configuration, already stored in Dynamic,
	// take effect.
	Apply func(next config.Config)
}

// brokerConfigState is the API's part: the broker's hooks and the lock that
// serialises changes (compute, persist, apply).
type brokerConfigState struct {
	mu  sync.Mutex
	cfg *BrokerConfigs
}

// SetBrokerConfigs enables dynamic broker configs; without it any change
// of a broker config is refused as needing a restart. Call it before the
// broker serves requests.
func (b *API) SetBrokerConfigs(c *BrokerConfigs) {
	b.brokerCfg = &brokerConfigState{cfg: c}
}

func (b *API) brokerConfigs() *brokerConfigState { return b.brokerCfg }

// defaults is the configuration topic configs default to: the effective
// one, dynamic broker configs included.
func (b *API) defaults() config.Config {
	if s := b.brokerConfigs(); s != nil {
		return s.cfg.Dynamic.Current()
	}
	return b.cfg
}

// brokerEntity maps a BROKER resource name to the stored entity: this
// broker's id, or "<default>" for "". Kafka's clients send a named
// broker's resource to that broker, so another id is an error.
func (b *API) brokerEntity(name string) (entity string, perBroker bool, kerrv *kerr.Error, msg string) {
	switch name {
	case "":
		return config.DefaultBrokerEntity, false, nil, ""
	case strconv.Itoa(int(b.cfg.NodeID)):
		return name, true, nil, ""
	}
	return "", false, kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", b.cfg.NodeID, name)
}

// alterBrokerConfigs changes the dynamic configs of the resource name with
// update (from the current overrides of that entity to the new ones).
func (b *API) alterBrokerConfigs(name string, validateOnly bool, update func(cur map[string]string, eff config.Config) (map[string]string, *kerr.Error, string)) (*kerr.Error, string) {
	entity, perBroker, kerrv, msg := b.brokerEntity(name)
	if kerrv != nil {
		return kerrv, msg
	}
	st := b.brokerConfigs()
	if st == nil {
		next, kerrv, msg := update(map[string]string{}, b.cfg)
		if kerrv != nil {
			return kerrv, msg
		}
		if len(next) == 0 {
			return nil, ""
		}
		return kerr.InvalidRequest, fmt.Sprintf("Cannot update these configs dynamically: [%s]", strings.Join(slices.Sorted(maps.Keys(next)), ", "))
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	d := st.cfg.Dynamic
	own, def := d.Overrides()
	cur := def
	if perBroker {
		cur = own
	}
	if cur == nil {
		cur = map[string]string{}
	}
	next, kerrv, msg := update(maps.Clone(cur), d.Current())
	if kerrv != nil {
		return kerrv, msg
	}
	if err := config.CheckDynamicBrokerConfigs(slices.Collect(maps.Keys(next)), perBroker); err != nil {
		return kerr.InvalidRequest, err.Error()
	}
	if perBroker {
		own = next
	} else {
		def = next
	}
	eff, err := d.Resolve(own, def)
	if err == nil && st.cfg.Check != nil {
		err = st.cfg.Check(eff)
	}
	if err != nil {
		return kerr.InvalidRequest, err.Error()
	}
	if validateOnly {
		return nil, ""
	}
	if err := b.store.UpdateBrokerConfigs(entity, next); err != nil {
		b.log.Error("persisting dynamic broker configs failed", "broker_entity", entity, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	if eff, err = d.Set(own, def); err != nil { // resolved above: cannot fail
		return kerr.InvalidRequest, err.Error()
	}
	if st.cfg.Apply != nil {
		st.cfg.Apply(eff)
	}
	b.log.Info("altered dynamic broker configs", "broker_entity", entity, "configs", next)
	return nil, ""
}

// incrementalBroker applies IncrementalAlterConfigs operations to a broker
// entity's overrides; APPEND and SUBTRACT start from the effective value.
func incrementalBroker(ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) func(map[string]string, config.Config) (map[string]string, *kerr.Error, string) {
	return func(cur map[string]string, eff config.Config) (map[string]string, *kerr.Error, string) {
		for _, c := range ops {
			switch c.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				cur[c.Name] = *c.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, c.Name)
			default:
				typ, _, ok := config.BrokerConfigDoc(c.Name)
				if !ok || typ != kmsg.ConfigTypeList {
					verb := "append"
					if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
						verb = "subtract"
					}
					return nil, kerr.InvalidRequest, fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, c.Name)
				}
				base, set := cur[c.Name]
				if !set {
					base, _ = eff.BrokerConfigValue(c.Name)
				}
				items := config.SplitList(base)
				for _, v := range config.SplitList(*c.Value) {
					has := slices.Contains(items, v)
					switch {
					case c.Op == kmsg.IncrementalAlterConfigOpAppend && !has:
						items = append(items, v)
					case c.Op == kmsg.IncrementalAlterConfigOpSubtract && has:
						items = slices.DeleteFunc(items, func(s string) bool { return s == v })
					}
				}
				cur[c.Name] = strings.Join(items, ",")
			}
		}
		return cur, nil, ""
	}
}

// describeBrokerConfigs answers DescribeConfigs for a BROKER resource: for
// this broker's id every property with its effective value and where it
// comes from (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
// STATIC_BROKER_CONFIG, DEFAULT_CONFIG; read-only unless dynamic), and for
// "" only the cluster-wide dynamic defaults, as Kafka's ConfigHelper does.
func (b *API) describeBrokerConfigs(req *kmsg.DescribeConfigsRequest, name string, want func(string) bool, sr *kmsg.DescribeConfigsResponseResource) *kerr.Error {
	if _, _, kerrv, _ := b.brokerEntity(name); kerrv != nil {
		return kerrv
	}
	d := config.NewDynamic(b.cfg)
	if st := b.brokerConfigs(); st != nil {
		d = st.cfg.Dynamic
	}
	own, def := d.Overrides()
	entry := func(k, v string, src kmsg.ConfigSource, syns []config.Synonym) kmsg.DescribeConfigsResponseResourceConfig {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source = k, &v, src
		_, dynamic := config.DynamicBrokerConfigKind(k)
		c.ReadOnly = !dynamic
		c.IsDefault = src == kmsg.ConfigSourceDefaultConfig
		typ, doc, _ := config.BrokerConfigDoc(k)
		c.ConfigType = typ
		if typ == 0 {
			c.ConfigType = kmsg.ConfigTypeString
		}
		if req.IncludeDocumentation {
			c.Documentation = &doc
		}
		if req.IncludeSynonyms {
			for _, s := range syns {
				s := s
				c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: s.Name, Value: &s.Value, Source: s.Source})
			}
		}
		return c
	}
	if name == "" {
		for _, k := range slices.Sorted(maps.Keys(def)) {
			if want(k) {
				sr.Configs = append(sr.Configs, entry(k, def[k], kmsg.ConfigSourceDynamicDefaultBrokerConfig,
					[]config.Synonym{{Name: k, Value: def[k], Source: kmsg.ConfigSourceDynamicDefaultBrokerConfig}}))
			}
		}
		return nil
	}
	keys := config.PropertyNames()
	for k := range own { // a listener's TLS files are not in the props table
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !want(k) {
			continue
		}
		syns := d.Synonyms(k)
		v, src := "", kmsg.ConfigSourceDefaultConfig
		if len(syns) > 0 {
			v, src = syns[0].Value, syns[0].Source
		} else {
			v, _ = d.Current().BrokerConfigValue(k)
		}
		sr.Configs = append(sr.Configs, entry(k, v, src, syns))
	}
	return nil
}

// RefreshBrokerConfigs reloads this broker's and the cluster-wide dynamic
// configs from the metadata store and applies them if they changed: in a
// cluster, another broker may have changed the default (a /config/changes
// notification tells, broker/dynamic_cluster.go). A stored set that does
// not resolve is logged and left unapplied.
func (b *API) RefreshBrokerConfigs() {
	st := b.brokerConfigs()
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	own := b.store.BrokerConfigs(strconv.Itoa(int(b.cfg.NodeID)))
	def := b.store.BrokerConfigs(config.DefaultBrokerEntity)
	curOwn, curDef := st.cfg.Dynamic.Overrides()
	if maps.Equal(own, curOwn) && maps.Equal(def, curDef) {
		return
	}
	eff, err := st.cfg.Dynamic.Set(own, def)
	if err != nil {
		b.log.Error("ignoring changed dynamic broker configs", "broker", b.cfg.NodeID, "err", err)
		return
	}
	if st.cfg.Apply != nil {
		st.cfg.Apply(eff)
	}
	b.log.Info("dynamic broker configs changed", "broker", b.cfg.NodeID, "configs", own, "cluster_default", def)
}
