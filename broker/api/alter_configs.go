package api

// AlterConfigs v0–v2: replaces the whole set of dynamic configs of each
// resource with the ones given (configs not named revert to their defaults).
// v1 changed nothing on the wire (it marks the throttling behaviour of
// KIP-219); v2 is flexible. ValidateOnly checks without applying.
//
// Topic resources: names and values are checked as CreateTopics does
// (INVALID_CONFIG naming the key); an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION. Overrides are persisted in the metadata store
// and take effect at once (replica.TopicSettings, storage.Log.SetConfig). Broker
// resources: the dynamic broker configs of broker_configs.go, the whole set
// of the entity replaced. Other resource types are INVALID_REQUEST.

import (
	"fmt"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleAlterConfigs(_ *network.RequestContext, req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	dups := duplicateResources(len(req.Resources), func(i int) (kmsg.ConfigResourceType, string) {
		return req.Resources[i].ResourceType, req.Resources[i].ResourceName
	})
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		kerrv, msg := b.alterConfigs(rr, req.ValidateOnly, dups[i])
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

func (b *API) alterConfigs(rr kmsg.AlterConfigsRequestResource, validateOnly, dup bool) (*kerr.Error, string) {
	if dup {
		return kerr.InvalidRequest, fmt.Sprintf("Error due to duplicate resource in request: %s", rr.ResourceName)
	}
	configs := make(map[string]string, len(rr.Configs))
	for _, c := range rr.Configs {
		if _, ok := configs[c.Name]; ok {
			return kerr.InvalidRequest, fmt.Sprintf("Error due to duplicate config keys: %s", c.Name)
		}
		if c.Value == nil {
			return kerr.InvalidRequest, fmt.Sprintf("Null value not supported for : %s", c.Name)
		}
		configs[c.Name] = *c.Value
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		return b.alterTopicConfigs(rr.ResourceName, validateOnly, func(map[string]string) (map[string]string, *kerr.Error, string) {
			return configs, nil, ""
		})
	case kmsg.ConfigResourceTypeBroker: // broker_configs.go: the new set replaces the entity's
		return b.alterBrokerConfigs(rr.ResourceName, validateOnly, func(map[string]string, config.Config) (map[string]string, *kerr.Error, string) {
			return configs, nil, ""
		})
	}
	return kerr.InvalidRequest, fmt.Sprintf("AlterConfigs is not supported for resource type %v", rr.ResourceType)
}

// duplicateResources marks the resources named more than once in a request;
// Kafka rejects all of them.
func duplicateResources(n int, at func(i int) (kmsg.ConfigResourceType, string)) []bool {
	type key struct {
		t    kmsg.ConfigResourceType
		name string
	}
	count := map[key]int{}
	for i := 0; i < n; i++ {
		t, name := at(i)
		count[key{t, name}]++
	}
	out := make([]bool, n)
	for i := range out {
		t, name := at(i)
		out[i] = count[key{t, name}] > 1
	}
	return out
}
