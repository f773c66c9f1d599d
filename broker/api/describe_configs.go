package api

// DescribeConfigs v0–v4 (read-only here). v1 config sources and synonyms;
// v3 config types and documentation; v4 flexible. Topic resources report
// every topic config with its effective value; broker resources report the
// broker properties kbroker honours with their sources, dynamic broker
// configs included (broker_configs.go); group resources the group configs
// (share_group_configs.go). Every config carries Kafka's type, and its one
// line of documentation when IncludeDocumentation is set: for topic configs
// from config.TopicConfigs, for broker properties from the props table
// (config.BrokerConfigDoc), for group configs from groupconfig.Defs.

import (
	"slices"

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
			kerrv = b.describeBrokerConfigs(req, rr.ResourceName, want, &sr) // broker_configs.go
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
	overrides, ok := b.topicOverrides(name) // topic_configs_cluster.go
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	rc := config.ResolveTopicConfig(b.defaults(), overrides)
	dyn := config.NewDynamic(b.cfg)
	if st := b.brokerConfigs(); st != nil {
		dyn = st.cfg.Dynamic
	}
	defs := config.TopicConfigs
	for _, d := range config.ConfluentTopicConfigs {
		if _, set := overrides[d.Name]; set {
			defs = append(slices.Clip(defs), d)
		}
	}
	for _, d := range defs {
		if !want(d.Name) {
			continue
		}
		v := rc.Values[d.Name]
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = d.Name
		c.Value = &v
		c.Source = kmsg.ConfigSource(config.ConfigSource(rc, d))
		// Without a topic override the value comes from the first broker
		// synonym: a dynamic broker config, the dynamic cluster default, or
		// server.properties (Kafka's ConfigHelper.createTopicConfigEntry).
		syns := dyn.Synonyms(d.BrokerProp)
		if c.Source == kmsg.ConfigSourceDefaultConfig && len(syns) > 0 {
			c.Source = syns[0].Source
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
			for _, s := range syns {
				s := s
				c.ConfigSynonyms = append(c.ConfigSynonyms, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: s.Name, Value: &s.Value, Source: s.Source})
			}
		}
		sr.Configs = append(sr.Configs, c)
	}
	return nil
}
