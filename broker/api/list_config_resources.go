package api

// ListConfigResources v0–v1 (KIP-714 ListClientMetricsResources, renamed and
// widened by KIP-1142). v0 lists CLIENT_METRICS resources only; v1 takes a
// list of resource types (empty: every type the version supports) and
// names each resource's type. A type the version does not support fails
// the whole request with UNSUPPORTED_VERSION, as Kafka answers.
//
// kbroker has no client-metrics subscriptions, so that type lists nothing;
// GROUP lists the groups that have config overrides; BROKER and
// BROKER_LOGGER list this node; TOPIC lists every topic, internal ones too.

import (
	"slices"
	"strconv"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listConfigResourceTypes are the types each version supports, in the
// order Kafka lists their resources.
var listConfigResourceTypes = map[int16][]kmsg.ConfigResourceType{
	0: {kmsg.ConfigResourceTypeClientMetrics},
	1: {kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics,
		kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeTopic},
}

func (b *API) handleListConfigResources(_ *network.RequestContext, req *kmsg.ListConfigResourcesRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	supported := listConfigResourceTypes[min(req.Version, 1)]
	wanted := map[kmsg.ConfigResourceType]bool{}
	for _, t := range req.ResourceTypes {
		rt := kmsg.ConfigResourceType(t)
		if !slices.Contains(supported, rt) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp
		}
		wanted[rt] = true
	}
	add := func(name string, t kmsg.ConfigResourceType) {
		r := kmsg.NewListConfigResourcesResponseConfigResource()
		r.Name, r.Type = name, int8(t)
		resp.ConfigResources = append(resp.ConfigResources, r)
	}
	resp.ConfigResources = []kmsg.ListConfigResourcesResponseConfigResource{}
	for _, t := range supported {
		if len(wanted) > 0 && !wanted[t] {
			continue
		}
		switch t {
		case kmsg.ConfigResourceTypeGroupConfig:
			for _, g := range b.co.GroupConfigs().Groups() {
				add(g, t)
			}
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger:
			add(strconv.Itoa(int(b.cfg.NodeID)), t)
		case kmsg.ConfigResourceTypeTopic:
			names := b.topicNames()
			slices.Sort(names)
			for _, name := range names {
				add(name, t)
			}
		}
	}
	return resp
}
