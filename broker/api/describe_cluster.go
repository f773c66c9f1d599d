package api

// DescribeCluster v0–v2. v1 added EndpointType (1 = brokers); v2
// IncludeFencedBrokers and IsFenced (KIP-1073): this broker is never fenced,
// so the answer is the same either way.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleDescribeCluster(ctx *network.RequestContext, req *kmsg.DescribeClusterRequest) kmsg.Response {
	if b.cluster != nil {
		return b.handleDescribeClusterCluster(ctx, req) // metadata_cluster.go
	}
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp
	}
	resp.EndpointType = 1
	resp.ClusterID = b.store.ClusterID()
	resp.ControllerID = b.cfg.NodeID
	resp.ClusterAuthorizedOperations = authorizedOps(req.IncludeClusterAuthorizedOperations, clusterOps)
	for _, be := range b.endpointsFor(ctx) {
		resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: be.NodeID, Host: be.Host, Port: be.Port})
	}
	return resp
}
