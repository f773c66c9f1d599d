package api

// Share groups in a cluster (KIP-932), with Kafka's split: membership
// (ShareGroupHeartbeat, ShareGroupDescribe) at the group's coordinator,
// the leader of its __consumer_offsets partition (others answer
// NOT_COORDINATOR); ShareFetch and ShareAcknowledge at each partition's
// leader (others answer NOT_LEADER_OR_FOLLOWER with the current leader);
// the persisted share-partition state at the share coordinators, the
// leaders of __share_group_state, reached with the inter-broker
// Read/Write/Initialize/Delete/ReadSummary ShareGroupState RPCs
// (share_state.go, coordhost/share_cluster.go). Those RPCs are served and
// advertised only in cluster mode.

import (
	"slices"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareStateKeys are the share coordinator's inter-broker RPCs.
var shareStateKeys = []int16{
	int16(kmsg.InitializeShareGroupState), int16(kmsg.ReadShareGroupState), int16(kmsg.WriteShareGroupState),
	int16(kmsg.DeleteShareGroupState), int16(kmsg.ReadShareGroupStateSummary),
}

// advertised reports whether this broker offers API key: a single node
// every key but the share coordinator's RPCs.
func (b *API) advertised(key int16) bool {
	return b.cluster != nil || !slices.Contains(shareStateKeys, key)
}

// notAdvertised closes the connection of a request for an API this broker
// does not advertise (a share coordinator RPC on a single node).
func (b *API) notAdvertised(ctx *network.RequestContext, key int16) kmsg.Response {
	b.log.Warn("closing connection: the API is served between the brokers of a cluster only",
		"api", kmsg.NameForKey(key), "client", ctx.RemoteAddr)
	ctx.CloseConn = true
	return nil
}

// shareLeaderHint answers a share-partition this broker does not lead
// NOT_LEADER_OR_FOLLOWER and returns the current leader and its endpoint
// from the metadata cache (ok false on a single node or when the cache
// names no other live leader).
func (b *API) shareLeaderHint(ctx *network.RequestContext, tp share.TopicPartition) (leader, epoch int32, host string, port int32, rack *string, ok bool) {
	if b.cluster == nil {
		return -1, -1, "", 0, nil, false
	}
	s := b.cluster.Cache.Snapshot()
	t := s.TopicByID(tp.TopicID)
	if t == nil {
		return -1, -1, "", 0, nil, false
	}
	st, e, ok := b.redirect(s, b.listenerOf(ctx), t.Name, tp.Partition, kerr.NotLeaderForPartition.Code)
	if !ok {
		return -1, -1, "", 0, nil, false
	}
	return st.Leader, st.LeaderEpoch, e.Host, e.Port, s.Brokers[st.Leader].Rack, true
}

// shareFetchLeaderHints fills CurrentLeader and NodeEndpoints of the
// partitions answered NOT_LEADER_OR_FOLLOWER.
func (b *API) shareFetchLeaderHints(ctx *network.RequestContext, resp *kmsg.ShareFetchResponse) {
	seen := map[int32]bool{}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			id, epoch, host, port, rack, ok := b.shareLeaderHint(ctx, share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition})
			if !ok {
				continue
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = id, epoch
			if !seen[id] {
				seen[id] = true
				resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareFetchResponseNodeEndpoint{NodeID: id, Host: host, Port: port, Rack: rack})
			}
		}
	}
}

// shareAckLeaderHints is shareFetchLeaderHints for ShareAcknowledge.
func (b *API) shareAckLeaderHints(ctx *network.RequestContext, resp *kmsg.ShareAcknowledgeResponse) {
	seen := map[int32]bool{}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != kerr.NotLeaderForPartition.Code {
				continue
			}
			id, epoch, host, port, rack, ok := b.shareLeaderHint(ctx, share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition})
			if !ok {
				continue
			}
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = id, epoch
			if !seen[id] {
				seen[id] = true
				resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareAcknowledgeResponseNodeEndpoint{NodeID: id, Host: host, Port: port, Rack: rack})
			}
		}
	}
}
