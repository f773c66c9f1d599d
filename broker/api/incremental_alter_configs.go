package api

// IncrementalAlterConfigs v0–v1 (KIP-339): changes named configs of a
// resource one operation at a time: SET (0) a value, DELETE (1) the override
// (back to the default), APPEND (2) items to a list config, SUBTRACT (3)
// items from one; APPEND and SUBTRACT start from the effective value,
// default included. v1 is flexible. ValidateOnly checks without applying.
//
// Errors as Kafka: a config named twice, an unknown operation, a null value
// for SET/APPEND/SUBTRACT, or APPEND/SUBTRACT on a non-list config are
// INVALID_REQUEST; unknown names and invalid values INVALID_CONFIG naming the
// key. Topic and broker resources are handled as in AlterConfigs.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleIncrementalAlterConfigs(_ *network.RequestContext, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	dups := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		kerrv, msg := b.incrementalAlter(rr, req.ValidateOnly, dups[i])
		if kerrv != nil {
			sr.ErrorCode = kerrv.Code
			if msg == "" {
				msg = kerrv.Message
			}
			sr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

func (b *API) incrementalAlter(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly, dup bool) (*kerr.Error, string) {
	if dup {
		return kerr.InvalidRequest, fmt.Sprintf("Error due to duplicate resource in request: %s", rr.ResourceName)
	}
	seen := map[string]bool{}
	for _, c := range rr.Configs {
		if seen[c.Name] {
			return kerr.InvalidRequest, fmt.Sprintf("Error due to duplicate config keys: %s", c.Name)
		}
		seen[c.Name] = true
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if c.Value == nil {
				return kerr.InvalidRequest, fmt.Sprintf("Null value not supported for : %s", c.Name)
			}
		case kmsg.IncrementalAlterConfigOpDelete:
		default:
			return kerr.InvalidRequest, fmt.Sprintf("Unknown alter config operation %d for %s", c.Op, c.Name)
		}
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		return b.alterTopicConfigs(rr.ResourceName, validateOnly, func(cur map[string]string) (map[string]string, *kerr.Error, string) {
			return b.applyIncremental(cur, rr.Configs)
		})
	case kmsg.ConfigResourceTypeBroker: // broker_configs.go
		return b.alterBrokerConfigs(rr.ResourceName, validateOnly, incrementalBroker(rr.Configs))
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.alterGroupConfigs(rr, validateOnly) // share_group_configs.go
	}
	return kerr.InvalidRequest, fmt.Sprintf("IncrementalAlterConfigs is not supported for resource type %v", rr.ResourceType)
}

// applyIncremental applies the operations to a topic's overrides.
func (b *API) applyIncremental(cur map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, *kerr.Error, string) {
	var eff config.ResolvedConfig
	for _, c := range ops {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			cur[c.Name] = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(cur, c.Name)
		default:
			d, ok := config.TopicConfigDefByName(c.Name)
			if !ok {
				return nil, kerr.InvalidConfig, fmt.Sprintf("unknown topic config name: %s", c.Name)
			}
			if d.Type != kmsg.ConfigTypeList {
				verb := "append"
				if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
					verb = "subtract"
				}
				return nil, kerr.InvalidRequest, fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, c.Name)
			}
			if eff.Values == nil {
				eff = config.ResolveTopicConfig(b.defaults(), cur)
			}
			items := config.SplitList(cur[c.Name])
			if _, set := cur[c.Name]; !set {
				items = config.SplitList(eff.Values[c.Name])
			}
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
