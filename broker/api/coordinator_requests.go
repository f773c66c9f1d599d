package api

import (
	"net"
	"time"

	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleGroupRequest hands a group API request to the coordinator and waits
// for its answer (a JoinGroup may wait for the whole rebalance).
func (b *API) handleGroupRequest(ctx *network.RequestContext, req kmsg.Request) kmsg.Response {
	if hb, ok := req.(*kmsg.ConsumerGroupHeartbeatRequest); ok && !b.consumerProtocolEnabled() {
		return consumerProtocolDisabled(hb) // update_features.go
	}
	tok := make(coordhost.Token, 1)
	err := b.co.GroupRequest(coordinatorClient(ctx), req, tok)
	return b.awaitReply(ctx, req, tok, err)
}

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// handleTxnRequest hands a transaction API request to the coordinator.
func (b *API) handleTxnRequest(ctx *network.RequestContext, req kmsg.Request) kmsg.Response {
	tok := make(coordhost.Token, 1)
	err := b.co.TxnRequest(coordinatorClient(ctx), req, tok)
	return b.awaitReply(ctx, req, tok, err)
}

// handleListGroupsWithShare answers ListGroups from the group coordinators
// and adds the share groups (type and protocol type "share"), honouring
// the state (v4+) and type (v5+) filters.
func (b *API) handleListGroupsWithShare(ctx *network.RequestContext, req *kmsg.ListGroupsRequest) kmsg.Response {
	out := b.handleGroupRequest(ctx, req)
	resp, ok := out.(*kmsg.ListGroupsResponse)
	if !ok || resp.ErrorCode != 0 {
		return out
	}
	if req.Version >= 5 && !coordhost.MatchesFilter(req.TypesFilter, "share") {
		return resp
	}
	var listed []share.GroupListing
	if err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) { listed = c.ListGroups() }); err != nil {
		return resp
	}
	for _, l := range listed {
		if req.Version >= 4 && !coordhost.MatchesFilter(req.StatesFilter, l.State) {
			continue
		}
		if b.cluster != nil && !b.coordinatesGroup(l.Group) {
			continue // a leader's share sessions, not a group coordinated here
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = l.Group
		lg.ProtocolType = "share"
		lg.GroupState = l.State
		lg.GroupType = "share"
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// handleDeleteGroupsWithShare deletes share groups itself and hands the
// other ids to the group coordinators, answering in request order.
func (b *API) handleDeleteGroupsWithShare(ctx *network.RequestContext, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := b.deleteGroupsWithShare(ctx, req)
	if r, ok := resp.(*kmsg.DeleteGroupsResponse); ok && req.Version >= 3 {
		// v3 (KIP-1043) names each group's error; set here, once every
		// group kind has given its code.
		for i := range r.Groups {
			g := &r.Groups[i]
			g.ErrorMessage = deleteGroupMessage(g.Group, g.ErrorCode)
		}
	}
	return resp
}

// deleteGroupMessage is Kafka's message for a DeleteGroups error (its
// exceptions' texts), nil for none.
func deleteGroupMessage(id string, code int16) *string {
	var msg string
	switch code {
	case 0:
		return nil
	case kerr.GroupIDNotFound.Code:
		msg = "Group " + id + " not found."
	case kerr.NonEmptyGroup.Code:
		msg = "Group " + id + " is not empty."
	default:
		msg = kerr.ErrorForCode(code).Error()
	}
	return &msg
}

func (b *API) deleteGroupsWithShare(ctx *network.RequestContext, req *kmsg.DeleteGroupsRequest) kmsg.Response {
	codes := map[string]int16{}
	err := b.co.Shares().Call(func(c *share.Coordinator, _ time.Time) {
		for _, id := range req.Groups {
			if c.IsShareGroup(id) && (b.cluster == nil || b.coordinatesGroup(id)) {
				codes[id] = c.DeleteGroup(id)
			}
		}
	})
	if b.cluster != nil && err == nil {
		for id, code := range codes {
			if code == 0 {
				b.deleteShareStatesCluster(id) // share_offsets_cluster.go
			}
		}
	}
	if err != nil || len(codes) == 0 {
		return b.handleGroupRequest(ctx, req)
	}
	rest := *req
	rest.Groups = nil
	for _, id := range req.Groups {
		if _, ok := codes[id]; !ok {
			rest.Groups = append(rest.Groups, id)
		}
	}
	others := map[string]kmsg.DeleteGroupsResponseGroup{}
	if len(rest.Groups) > 0 {
		out, ok := b.handleGroupRequest(ctx, &rest).(*kmsg.DeleteGroupsResponse)
		if !ok {
			return nil // the connection is closing
		}
		for _, g := range out.Groups {
			others[g.Group] = g
		}
	}
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		if code, ok := codes[id]; ok {
			g := kmsg.NewDeleteGroupsResponseGroup()
			g.Group, g.ErrorCode = id, code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		resp.Groups = append(resp.Groups, others[id])
	}
	return resp
}

// awaitReply waits for the answer to a request handed to a coordinator. A
// failed hand-over (callErr) or shutdown closes the connection unanswered.
func (b *API) awaitReply(ctx *network.RequestContext, req kmsg.Request, tok coordhost.Token, callErr error) kmsg.Response {
	if callErr != nil {
		b.log.Warn("closing connection: coordinator request failed", clientAttrs(ctx, "err", callErr)...)
		ctx.CloseConn = true
		return nil
	}
	select {
	case resp := <-tok:
		return resp
	case <-b.closing:
		ctx.CloseConn = true
		return nil
	}
}

// coordinatorClient identifies a request's sender to a coordinator: the
// header's client.id and the host as Kafka prints it ("/" + address).
func coordinatorClient(ctx *network.RequestContext) group.Client {
	return group.Client{ID: ctx.Header.ClientID, Host: "/" + hostOf(ctx.RemoteAddr)}
}
