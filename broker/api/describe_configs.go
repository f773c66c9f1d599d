package api

// DescribeConfigs v0–v4 (read-only here). v1 config sources and synonyms;
// v3 config types and documentation; v4 flexible. Topic resources report
// every topic config with its effective value; broker resources report the
// broker properties kbroker honours; group resources the group configs
// (share_group_configs.go). Every config carries Kafka's type, and its one
// line of documentation when IncludeDocumentation is set: for topic configs
// from config.TopicConfigs, for broker properties from the props table
// (config.BrokerConfigDoc), for group configs from groupconfig.Defs.

import (
	"sort"
	"strconv"
	"sync"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDescribeConfigs(_ *network.RequestContext, req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType = rr.ResourceType
		sr.ResourceName = rr.ResourceName
		want := func(name string) bool {
			if rr.ConfigNames == nil {
				return true
			}
			for _, n := range rr.ConfigNames {
				if n == name {
					return true
				}
			}
			return false
		}
		var kerrv *kerr.Error
		switch rr.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			kerrv = b.describeTopicConfigs(req, rr.ResourceName, want, &sr)
		case kmsg.ConfigResourceTypeGroupConfig:
			kerrv = b.describeGroupConfigs(req, rr.ResourceName, want, &sr) // share_group_configs.go
		case kmsg.ConfigResourceTypeBroker:
			if rr.ResourceName != "" && rr.ResourceName != strconv.Itoa(int(b.cfg.NodeID)) {
				kerrv = kerr.InvalidRequest
				break
			}
			b.describeBrokerConfigs(req, want, &sr)
		default:
			kerrv = kerr.InvalidRequest
		}
		if kerrv != nil {
			sr.ErrorCode = kerrv.Code
			msg := kerrv.Message
			sr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (b *API) describeTopicConfigs(req *kmsg.DescribeConfigsRequest, name string, want func(string) bool, sr *kmsg.DescribeConfigsResponseResource) *kerr.Error {
	if err := replica.ValidTopicName(name); err != nil {
		return kerr.InvalidTopicException
	}
	t := b.rm.TopicByName(name)
	if t == nil {
		return kerr.UnknownTopicOrPartition
	}
	rc := config.ResolveTopicConfig(b.cfg, t.Meta.Configs)
	for _, d := range config.TopicConfigs {
		if !want(d.Name) {
			continue
		}
		v := rc.Values[d.Name]
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = d.Name
		c.Value = &v
		c.Source = kmsg.ConfigSource(config.ConfigSource(rc, d))
		if c.Source == kmsg.ConfigSourceDefaultConfig {
			if _, set := b.cfg.BrokerConfigValue(d.BrokerProp); set {
				c.Source = kmsg.ConfigSourceStaticBrokerConfig
			}
		}
		c.IsDefault = c.Source == kmsg.ConfigSourceDefaultConfig
		c.ConfigType = d.Type
		if req.IncludeDocumentation {
			doc := d.Doc
			c.Documentation = &doc
		}
		if req.IncludeSynonyms {
			if ov, ok := rc.Overrides[d.Name]; ok {
				ov := ov
				c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: d.Name, Value: &ov, Source: kmsg.ConfigSourceDynamicTopicConfig})
			}
			if chain, ok := brokerSynonymChains[d.BrokerProp]; ok {
				c.ConfigSynonyms = append(c.ConfigSynonyms, b.chainSynonyms(d.BrokerProp, chain)...)
			} else {
				if bv, set := b.cfg.BrokerConfigValue(d.BrokerProp); set {
					c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: d.BrokerProp, Value: &bv, Source: kmsg.ConfigSourceStaticBrokerConfig})
				}
				dv := d.Default(defaultConfig())
				c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: d.BrokerProp, Value: &dv, Source: kmsg.ConfigSourceDefaultConfig})
			}
		}
		sr.Configs = append(sr.Configs, c)
	}
	return nil
}

func (b *API) describeBrokerConfigs(req *kmsg.DescribeConfigsRequest, want func(string) bool, sr *kmsg.DescribeConfigsResponseResource) {
	keys := config.PropertyNames()
	sort.Strings(keys)
	for _, k := range keys {
		if !want(k) {
			continue
		}
		v, set := b.cfg.BrokerConfigValue(k)
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = k
		c.Value = &v
		c.ReadOnly = true
		c.Source = kmsg.ConfigSourceDefaultConfig
		if set {
			c.Source = kmsg.ConfigSourceStaticBrokerConfig
		}
		c.IsDefault = !set
		typ, doc, _ := config.BrokerConfigDoc(k)
		c.ConfigType = typ
		if req.IncludeDocumentation {
			c.Documentation = &doc
		}
		if req.IncludeSynonyms {
			vv := v
			c.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{{Name: k, Value: &vv, Source: c.Source}}
		}
		sr.Configs = append(sr.Configs, c)
	}
}

// defaultConfig is the configuration with every property at Kafka's default.
var defaultConfig = sync.OnceValue(func() config.Config {
	c, _, _ := config.ParseConfig(nil)
	return c
})

// brokerSynonymChains are the broker properties Kafka reads together with
// others (DynamicBrokerConfig.brokerConfigSynonyms), each with its default
// ("" for none: Kafka's ConfigDef has no default for the millisecond forms,
// the coarser property supplies it).
var brokerSynonymChains = map[string][]struct{ name, def string }{
	"log.retention.ms":      {{"log.retention.ms", ""}, {"log.retention.minutes", ""}, {"log.retention.hours", "168"}},
	"log.roll.ms":           {{"log.roll.ms", ""}, {"log.roll.hours", "168"}},
	"log.roll.jitter.ms":    {{"log.roll.jitter.ms", ""}, {"log.roll.jitter.hours", "0"}},
	"log.flush.interval.ms": {{"log.flush.interval.ms", ""}, {"log.flush.scheduler.interval.ms", "9223372036854775807"}},
}

// chainSynonyms lists a topic config's broker synonyms as Kafka's
// ConfigHelper.configSynonyms does: the statically set members of the chain,
// then those with a default, and of that list only what starts at prop
// itself. So retention.ms has no broker synonym at all unless
// log.retention.ms is set in server.properties (log.retention.ms has no
// default of its own; log.retention.hours=168 is dropped as coming first).
func (b *API) chainSynonyms(prop string, chain []struct{ name, def string }) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	for _, m := range chain {
		if v, set := b.cfg.BrokerConfigValue(m.name); set {
			out = append(out, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: m.name, Value: &v, Source: kmsg.ConfigSourceStaticBrokerConfig})
		}
	}
	for _, m := range chain {
		if m.def != "" {
			v := m.def
			out = append(out, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: m.name, Value: &v, Source: kmsg.ConfigSourceDefaultConfig})
		}
	}
	for i, syn := range out {
		if syn.Name == prop {
			return out[i:]
		}
	}
	return nil
}
