package api

// ShareGroupHeartbeat v0–v1 (KIP-932; v1 is the stable version of Kafka
// 4.2, no wire change): members join with epoch 0 and a client-generated
// member id, heartbeat at their epoch, and leave with epoch -1. The
// assignment is computed by the coordinator (coordinator/share, Kafka's
// SimpleAssignor). A share group id is not checked against classic or
// KIP-848 groups of the same id (Kafka answers GROUP_ID_NOT_FOUND there).

import (
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleShareGroupHeartbeat(ctx *network.RequestContext, req *kmsg.ShareGroupHeartbeatRequest) kmsg.Response {
	var resp *kmsg.ShareGroupHeartbeatResponse
	client := share.Client{ID: ctx.Header.ClientID, Host: "/" + hostOf(ctx.RemoteAddr)}
	err := b.co.Shares().Call(func(c *share.Coordinator, now time.Time) {
		resp = c.Heartbeat(now, client, req)
	})
	if err != nil {
		ctx.CloseConn = true
		return nil
	}
	return resp
}
