package api

import (
	"slices"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareKeys are the share-group APIs (KIP-932). They are served on a single
// node only. Share-partition state is persisted in __share_group_state
// (coordinator/share/state.go), but by the broker that holds the whole
// share coordinator, which writes that topic's partitions itself: a
// cluster would need Kafka's split, which kbroker does not have yet —
// membership at the group coordinator, ShareFetch/ShareAcknowledge at each
// partition's leader, and the leaders reading and writing share-partition
// state at the leader of its __share_group_state partition with the
// inter-broker Read/Write/Initialize/DeleteShareGroupState RPCs, reloading
// it when a data partition's leadership moves. Until then, like Kafka in
// ZooKeeper mode, which has no share groups, a cluster does not advertise
// them, and a client that sends one anyway is disconnected, as for any API
// a broker does not advertise.
var shareKeys = []int16{
	int16(kmsg.ShareGroupHeartbeat), int16(kmsg.ShareGroupDescribe),
	int16(kmsg.ShareFetch), int16(kmsg.ShareAcknowledge),
	int16(kmsg.DescribeShareGroupOffsets), int16(kmsg.AlterShareGroupOffsets),
	int16(kmsg.DeleteShareGroupOffsets),
}

// advertised reports whether this broker offers API key: in cluster mode
// every key but the share-group ones.
func (b *API) advertised(key int16) bool {
	return b.cluster == nil || !slices.Contains(shareKeys, key)
}

// notAdvertised closes the connection of a request for an API this broker
// does not advertise (a share-group API on a cluster).
func (b *API) notAdvertised(ctx *network.RequestContext, key int16) kmsg.Response {
	b.log.Warn("closing connection: share groups are single-node only; this cluster does not advertise the API",
		"api", kmsg.NameForKey(key), "client", ctx.RemoteAddr)
	ctx.CloseConn = true
	return nil
}
