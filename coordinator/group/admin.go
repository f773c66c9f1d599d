package group

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups handles DescribeGroups v0-v6 (v3 adds authorized
// operations, left at Kafka's "not requested" value for the broker to
// fill; v4 adds group.instance.id; v6, KIP-1043, reports an unknown group
// as GROUP_ID_NOT_FOUND). An unknown group is described as Dead, with no
// error before v6. Member metadata and assignments are shown only for a
// Stable group.
func (c *Coordinator) DescribeGroups(now time.Time, token any, req *kmsg.DescribeGroupsRequest) ([]Reply, []Record) {
	c.begin(now)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		dg.State = Dead.String()
		g := c.groups[id]
		if (g == nil || g.state == Dead) && req.Version >= 6 {
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			dg.ErrorMessage = &msg
		}
		if g != nil && g.state != Dead {
			dg.State = g.state.String()
			dg.ProtocolType = g.protocolType
			if g.state == Stable {
				dg.Protocol = g.protocol
			}
			for _, m := range g.sortedMembers() {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID = m.id
				dm.InstanceID = m.instanceID
				dm.ClientID = m.clientID
				dm.ClientHost = m.clientHost
				dm.ProtocolMetadata = []byte{}
				dm.MemberAssignment = []byte{}
				if g.state == Stable {
					if md := m.metadataFor(g.protocol); md != nil {
						dm.ProtocolMetadata = md
					}
					if m.assignment != nil {
						dm.MemberAssignment = m.assignment
					}
				}
				dg.Members = append(dg.Members, dm)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return []Reply{{Token: token, Resp: resp}}, nil
}

// ListGroups handles ListGroups v0-v5. v4 filters by state and v5 by group
// type, both case-insensitively; every group here is of type "classic".
func (c *Coordinator) ListGroups(now time.Time, token any, req *kmsg.ListGroupsRequest) ([]Reply, []Record) {
	c.begin(now)
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	match := func(filter []string, value string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, value) {
				return true
			}
		}
		return false
	}
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		if g.state == Dead {
			continue
		}
		if req.Version >= 4 && !match(req.StatesFilter, g.state.String()) {
			continue
		}
		if req.Version >= 5 && !match(req.TypesFilter, "classic") {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = id
		lg.ProtocolType = g.protocolType
		lg.GroupState = g.state.String()
		lg.GroupType = "classic"
		resp.Groups = append(resp.Groups, lg)
	}
	return []Reply{{Token: token, Resp: resp}}, nil
}

// DeleteGroups handles DeleteGroups v0-v3 (v3's error messages are set by
// the broker, which merges the other group kinds' answers). Only Empty
// groups are deleted (others: NON_EMPTY_GROUP; unknown:
// GROUP_ID_NOT_FOUND); deletion yields
// a tombstone for each committed offset and for the group metadata.
func (c *Coordinator) DeleteGroups(now time.Time, token any, req *kmsg.DeleteGroupsRequest) ([]Reply, []Record) {
	c.begin(now)
	var o out
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		g := c.groups[id]
		switch {
		case g == nil || g.state == Dead:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
		case g.state != Empty:
			dg.ErrorCode = kerr.NonEmptyGroup.Code
		default:
			c.deleteGroup(&o, g, now)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	o.reply(token, resp)
	return o.replies, o.records
}

// deleteGroup removes an Empty group and all its offsets.
func (c *Coordinator) deleteGroup(o *out, g *group, now time.Time) {
	for _, t := range sortedKeys(g.offsets) {
		for _, p := range sortedPartitions(g.offsets[t]) {
			o.records = append(o.records, offsetTombstone(g.id, t, p))
		}
	}
	o.records = append(o.records, groupTombstone(g.id))
	// Pending member ids die with the group; their owners get
	// UNKNOWN_MEMBER_ID when they come back.
	g.transition(Dead, now)
	delete(c.groups, g.id)
}

// HasMembers reports whether the classic group id exists with members, so
// the broker can keep a group id to one protocol (KIP-848 groups answer
// GROUP_ID_NOT_FOUND to a heartbeat for a classic group with members).
func (c *Coordinator) HasMembers(id string) bool {
	g := c.groups[id]
	return g != nil && len(g.members) > 0
}
