package api

// ShareGroupDescribe v0–v1 (KIP-932; v1 is Kafka 4.2's stable version, no
// wire change): state, epochs, the "simple" assignor and every member with
// its subscription and assignment. Unknown groups get GROUP_ID_NOT_FOUND.
// Authorized operations are not computed (INT32_MIN, "not requested").
// In a cluster a group this broker does not coordinate is NOT_COORDINATOR.

import (
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleShareGroupDescribe(ctx *network.RequestContext, req *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	var resp *kmsg.ShareGroupDescribeResponse
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) { resp = c.Describe(req) })
	if err != nil {
		ctx.CloseConn = true
		return nil
	}
	if b.cluster != nil {
		// A group is described by its coordinator; elsewhere NOT_COORDINATOR.
		for i := range resp.Groups {
			if g := &resp.Groups[i]; !b.coordinatesGroup(g.GroupID) {
				*g = kmsg.NewShareGroupDescribeResponseGroup()
				g.GroupID, g.ErrorCode = req.GroupIDs[i], kerr.NotCoordinator.Code
				g.AuthorizedOperations = -2147483648
			}
		}
	}
	return resp
}
