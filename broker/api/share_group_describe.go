package api

// ShareGroupDescribe v0–v1 (KIP-932; v1 is Kafka 4.2's stable version, no
// wire change): state, epochs, the "simple" assignor and every member with
// its subscription and assignment. Unknown groups get GROUP_ID_NOT_FOUND.
// Authorized operations are not computed (INT32_MIN, "not requested").

import (
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleShareGroupDescribe(ctx *network.RequestContext, req *kmsg.ShareGroupDescribeRequest) kmsg.Response {
	var resp *kmsg.ShareGroupDescribeResponse
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) { resp = c.Describe(req) })
	if err != nil {
		ctx.CloseConn = true
		return nil
	}
	return resp
}
