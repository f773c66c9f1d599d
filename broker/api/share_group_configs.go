package api

// GROUP config resources (ConfigResource type 32; KIP-848 and KIP-932) for
// IncrementalAlterConfigs and DescribeConfigs: the group configs of
// coordinator/groupconfig — consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms, which the KIP-848 coordinator gives the
// group's members, and the share.* configs of share groups. A group need not
// exist to be configured. Only SET and DELETE apply (no group config is a
// list). The resulting set is checked as Kafka's GroupConfig.validate does
// (known names, types, the broker's group.consumer.* and group.share.*
// bounds, session timeout above heartbeat interval), with its
// INVALID_CONFIG messages. Overrides are kept in the metadata store
// (controller.Store.UpdateGroupConfigs), so they survive a restart as in
// Kafka, where they are cluster metadata.

import (
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/coordinator/groupconfig"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errGroupOp carries a request error found while applying the operations.
type errGroupOp struct {
	kerr *kerr.Error
	msg  string
}

func (e *errGroupOp) Error() string { return e.msg }

// alterGroupConfigs applies IncrementalAlterConfigs operations to a group.
func (b *API) alterGroupConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (*kerr.Error, string) {
	if rr.ResourceName == "" {
		return kerr.InvalidRequest, "Group name must not be empty"
	}
	err := b.co.GroupConfigs().Alter(rr.ResourceName, validateOnly, func(cur map[string]string) error {
		for _, op := range rr.Configs {
			if _, ok := groupconfig.Lookup(op.Name); !ok {
				return &groupconfig.InvalidError{Msg: fmt.Sprintf("Unknown group config name: %s", op.Name)}
			}
			switch op.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				cur[op.Name] = *op.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, op.Name)
			default:
				verb := "append"
				if op.Op == kmsg.IncrementalAlterConfigOpSubtract {
					verb = "subtract"
				}
				return &errGroupOp{kerr.InvalidRequest, fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, op.Name)}
			}
		}
		return nil
	})
	var inv *groupconfig.InvalidError
	var opErr *errGroupOp
	switch {
	case err == nil:
		return nil, ""
	case errors.As(err, &inv):
		return kerr.InvalidConfig, inv.Msg
	case errors.As(err, &opErr):
		return opErr.kerr, opErr.msg
	}
	b.log.Error("storing group configs", "group", rr.ResourceName, "err", err)
	return kerr.UnknownServerError, "Failed to store the group configs."
}

// describeGroupConfigs reports every group config of a group with its
// effective value: the group's override (GROUP_CONFIG) or the broker's
// default (DEFAULT_CONFIG), with its type and, when asked, documentation.
func (b *API) describeGroupConfigs(req *kmsg.DescribeConfigsRequest, name string, want func(string) bool, sr *kmsg.DescribeConfigsResponseResource) *kerr.Error {
	if name == "" {
		return kerr.InvalidRequest
	}
	store := b.co.GroupConfigs()
	overrides := store.Overrides(name)
	for _, d := range groupconfig.Defs() {
		if !want(d.Name) {
			continue
		}
		v, ok := overrides[d.Name]
		if !ok {
			v = store.Broker().Default(d.Name)
		}
		cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
		cfg.Name = d.Name
		cfg.Value = &v
		cfg.ConfigType = kmsg.ConfigType(d.Type)
		if ok {
			cfg.Source = kmsg.ConfigSourceGroupConfig
		} else {
			cfg.Source = kmsg.ConfigSourceDefaultConfig
			cfg.IsDefault = true
		}
		if req.IncludeDocumentation {
			doc := d.Doc
			cfg.Documentation = &doc
		}
		if req.IncludeSynonyms {
			cfg.ConfigSynonyms = b.groupConfigSynonyms(d.Name, v, ok, store.Broker().Default(d.Name))
		}
		sr.Configs = append(sr.Configs, cfg)
	}
	return nil
}

// groupConfigSynonyms lists a group config's synonyms as Kafka does: the
// group's override (GROUP_CONFIG), then the broker property it defaults to
// (group.<name>, static or default). A config without such a property
// lists its own default.
func (b *API) groupConfigSynonyms(name, value string, overridden bool, def string) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	var out []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
	if overridden {
		v := value
		out = append(out, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: name, Value: &v, Source: kmsg.ConfigSourceGroupConfig})
	}
	prop := "group." + name
	if _, _, known := config.BrokerConfigDoc(prop); known {
		src := kmsg.ConfigSourceDefaultConfig
		if _, set := b.cfg.BrokerConfigValue(prop); set {
			src = kmsg.ConfigSourceStaticBrokerConfig
		}
		out = append(out, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: prop, Value: &def, Source: src})
	} else if !overridden {
		out = append(out, kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{Name: name, Value: &def, Source: kmsg.ConfigSourceDefaultConfig})
	}
	return out
}
