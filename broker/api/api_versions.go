package api

// ApiVersions v0–v5. v3 added client software name/version and flexible
// encoding (the response header stays v0, KIP-511); v4 is identical to v3;
// v5 (KIP-1242) carries the cluster and node id the client believes it
// reached: REBOOTSTRAP_REQUIRED when either is not this broker's, so a
// client routed to the wrong broker notices, INVALID_REQUEST when only one
// is set. An unsupported request version gets the v0 body with
// UNSUPPORTED_VERSION so the client retries at a version we know.

import (
	"sort"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiKeys are the advertised APIs: in cluster mode also the inter-broker
// ones, as a ZooKeeper-mode Kafka broker advertises them on every listener.
func (b *API) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	var out []kmsg.ApiVersionsResponseApiKey
	for _, k := range protocol.SupportedKeys() {
		if !b.advertised(k) {
			continue // share groups on a cluster (share_cluster.go)
		}
		vr, _ := protocol.Supported(k)
		out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: vr.Min, MaxVersion: vr.Max})
	}
	if b.cluster != nil {
		for _, k := range protocol.InterBrokerKeys() {
			vr, _ := protocol.InterBroker(k)
			out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: vr.Min, MaxVersion: vr.Max})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	}
	return out
}

func (b *API) handleApiVersions(_ *network.RequestContext, req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = b.apiKeys()
	if req.Version >= 3 {
		// Supported and finalized features (update_features.go): by
		// default transaction.version 2 (KIP-890 part 2: clients may rely on
		// Produce v12+ and TxnOffsetCommit v5+ adding partitions to the
		// transaction, and on EndTxn v5+ bumping the epoch) and
		// group.version 1 (KIP-848).
		b.fillFeatures(resp)
	}
	if req.Version >= 3 && (req.ClientSoftwareName == "" || req.ClientSoftwareVersion == "") {
		// Kafka validates these strings from v3 and answers INVALID_REQUEST.
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	if req.Version >= 5 && resp.ErrorCode == 0 {
		switch {
		case (req.ClusterID == nil) != (req.NodeID < 0):
			resp.ErrorCode = kerr.InvalidRequest.Code
		case req.ClusterID != nil && (*req.ClusterID != b.store.ClusterID() || req.NodeID != b.cfg.NodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
		}
	}
	if resp.ErrorCode != 0 {
		// Kafka's error answer carries the code alone: no keys, no
		// features.
		fail := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		fail.ErrorCode = resp.ErrorCode
		return fail
	}
	return resp
}

// apiVersionsUnsupported answers an ApiVersions request of a version we do not know.
func (b *API) apiVersionsUnsupported() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = b.apiKeys()
	return resp
}
