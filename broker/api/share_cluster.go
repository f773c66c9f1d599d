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

// shareHint is one partition of a ShareFetch or ShareAcknowledge answer:
// its error code and where its current leader goes.
type shareHint struct {
	tp                 share.TopicPartition
	code               int16
	leaderID, leaderEp *int32
}

// shareEndpoint is a leader named by a hint, once per leader.
type shareEndpoint struct {
	id   int32
	host string
	port int32
	rack *string
}

// shareLeaderHints fills the current leader, from the metadata cache, of
// every partition answered NOT_LEADER_OR_FOLLOWER whose leader is another
// live broker, and returns those leaders' endpoints, each once (none on a
// single node).
func (b *API) shareLeaderHints(ctx *network.RequestContext, hints []shareHint) []shareEndpoint {
	if b.cluster == nil {
		return nil
	}
	s := b.cluster.Cache.Snapshot()
	listener := b.listenerOf(ctx)
	var out []shareEndpoint
	seen := map[int32]bool{}
	for _, h := range hints {
		if h.code != kerr.NotLeaderForPartition.Code {
			continue
		}
		t := s.TopicByID(h.tp.TopicID)
		if t == nil {
			continue
		}
		st, e, ok := b.redirect(s, listener, t.Name, h.tp.Partition, h.code)
		if !ok {
			continue
		}
		*h.leaderID, *h.leaderEp = st.Leader, st.LeaderEpoch
		if !seen[st.Leader] {
			seen[st.Leader] = true
			out = append(out, shareEndpoint{st.Leader, e.Host, e.Port, s.Brokers[st.Leader].Rack})
		}
	}
	return out
}

// shareFetchLeaderHints fills CurrentLeader and NodeEndpoints of the
// partitions answered NOT_LEADER_OR_FOLLOWER.
func (b *API) shareFetchLeaderHints(ctx *network.RequestContext, resp *kmsg.ShareFetchResponse) {
	var hints []shareHint
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			hints = append(hints, shareHint{share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}, rp.ErrorCode, &rp.CurrentLeader.LeaderID, &rp.CurrentLeader.LeaderEpoch})
		}
	}
	for _, e := range b.shareLeaderHints(ctx, hints) {
		resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareFetchResponseNodeEndpoint{NodeID: e.id, Host: e.host, Port: e.port, Rack: e.rack})
	}
}

// shareAckLeaderHints is shareFetchLeaderHints for ShareAcknowledge.
func (b *API) shareAckLeaderHints(ctx *network.RequestContext, resp *kmsg.ShareAcknowledgeResponse) {
	var hints []shareHint
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			hints = append(hints, shareHint{share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition}, rp.ErrorCode, &rp.CurrentLeader.LeaderID, &rp.CurrentLeader.LeaderEpoch})
		}
	}
	for _, e := range b.shareLeaderHints(ctx, hints) {
		resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareAcknowledgeResponseNodeEndpoint{NodeID: e.id, Host: e.host, Port: e.port, Rack: e.rack})
	}
}
