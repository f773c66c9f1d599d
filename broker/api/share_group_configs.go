package api

// GROUP config resources (ConfigResource type 32, KIP-848/KIP-932) for
// IncrementalAlterConfigs and DescribeConfigs: the share.* group configs
// coordinator/share honours (share.auto.offset.reset,
// share.record.lock.duration.ms, share.delivery.count.limit,
// share.isolation.level, share.session.timeout.ms,
// share.heartbeat.interval.ms). A group need not exist to be configured.
// Only SET and DELETE apply (no group config is a list); unknown names
// and bad values are INVALID_CONFIG. Overrides live in memory with the
// share coordinator: a restart forgets them (Kafka keeps them in the
// cluster metadata).

import (
	"fmt"
	"time"

	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterGroupConfigs applies IncrementalAlterConfigs operations to a group.
func (b *API) alterGroupConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (*kerr.Error, string) {
	if rr.ResourceName == "" {
		return kerr.InvalidRequest, "Group name must not be empty"
	}
	var kerrv *kerr.Error
	var msg string
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) {
		cur := c.GroupConfigOverrides(rr.ResourceName)
		for _, op := range rr.Configs {
			if !share.IsGroupConfig(op.Name) {
				kerrv, msg = kerr.InvalidConfig, fmt.Sprintf("Unknown group config name: %s", op.Name)
				return
			}
			switch op.Op {
			case kmsg.IncrementalAlterConfigOpSet:
				if err := c.ValidateGroupConfig(op.Name, *op.Value); err != nil {
					kerrv, msg = kerr.InvalidConfig, err.Error()
					return
				}
				cur[op.Name] = *op.Value
			case kmsg.IncrementalAlterConfigOpDelete:
				delete(cur, op.Name)
			default:
				kerrv, msg = kerr.InvalidRequest, fmt.Sprintf("Config value append is not allowed for config key: %s", op.Name)
				return
			}
		}
		if !validateOnly {
			c.SetGroupConfigs(rr.ResourceName, cur)
		}
	})
	if err != nil {
		return kerr.CoordinatorNotAvailable, ""
	}
	return kerrv, msg
}

// describeGroupConfigs reports every group config of a group with its
// effective value: the group's override (GROUP_CONFIG) or the
// broker default.
func (b *API) describeGroupConfigs(req *kmsg.DescribeConfigsRequest, name string, want func(string) bool, sr *kmsg.DescribeConfigsResponseResource) *kerr.Error {
	if name == "" {
		return kerr.InvalidRequest
	}
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) {
		overrides := c.GroupConfigOverrides(name)
		for _, n := range share.GroupConfigNames() {
			if !want(n) {
				continue
			}
			v := c.GroupConfig(name, n)
			cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
			cfg.Name = n
			cfg.Value = &v
			cfg.ConfigType = kmsg.ConfigTypeString
			if n != share.ConfigAutoOffsetReset && n != share.ConfigIsolationLevel {
				cfg.ConfigType = kmsg.ConfigTypeInt
			}
			if _, ok := overrides[n]; ok {
				cfg.Source = kmsg.ConfigSourceGroupConfig
			} else {
				cfg.Source = kmsg.ConfigSourceDefaultConfig
				cfg.IsDefault = true
			}
			if req.IncludeSynonyms {
				vv := v
				cfg.ConfigSynonyms = []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym{{Name: n, Value: &vv, Source: cfg.Source}}
			}
			sr.Configs = append(sr.Configs, cfg)
		}
	})
	if err != nil {
		return kerr.CoordinatorNotAvailable
	}
	return nil
}
