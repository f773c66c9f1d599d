package api

// OffsetFetch v0–v10 goes to the group coordinators (coordinator/group holds
// the version rules); partitions with pending transactional offsets are then
// marked UNSTABLE_OFFSET_COMMIT when the client asked for stable offsets
// (v7+). v10 (KIP-848) names topics by id: the broker resolves the ids to
// names and hands the coordinators the request as v9 (the same request with
// names), answers UNKNOWN_TOPIC_ID for the partitions of an id the cluster
// does not know (topic_lookup.go), and names every topic of the answer by id
// again. Committed offsets of a topic that no longer exists have no id to be
// named by, so a v10 "all topics" fetch leaves them out.

import (
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleOffsetFetch(ctx *network.RequestContext, req *kmsg.OffsetFetchRequest) kmsg.Response {
	if req.Version >= 10 {
		return b.offsetFetchByID(ctx, req)
	}
	resp := b.handleGroupRequest(ctx, req)
	r, ok := resp.(*kmsg.OffsetFetchResponse)
	if !ok || !req.RequireStable {
		return resp
	}
	b.co.MarkUnstableOffsets(req, r)
	return r
}

// offsetFetchByID answers OffsetFetch v10+ through the v9 path.
func (b *API) offsetFetchByID(ctx *network.RequestContext, req *kmsg.OffsetFetchRequest) kmsg.Response {
	named := *req
	named.Version = 9
	named.Groups = make([]kmsg.OffsetFetchRequestGroup, len(req.Groups))
	// unknown are the topics whose ids this broker does not know, by group.
	unknown := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	for i, g := range req.Groups {
		ng := g
		if g.Topics != nil {
			ng.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for _, rt := range g.Topics {
			t, ok := b.topicWithID(rt.TopicID)
			if !ok {
				unknown[g.Group] = append(unknown[g.Group], rt)
				continue
			}
			nt := rt
			nt.Topic = t.Name
			ng.Topics = append(ng.Topics, nt)
		}
		named.Groups[i] = ng
	}
	resp := b.handleGroupRequest(ctx, &named)
	r, ok := resp.(*kmsg.OffsetFetchResponse)
	if !ok {
		return resp
	}
	if req.RequireStable {
		b.co.MarkUnstableOffsets(&named, r)
	}
	r.Version = req.Version
	for i := range r.Groups {
		g := &r.Groups[i]
		kept := g.Topics[:0]
		for _, st := range g.Topics {
			t, ok := b.topicNamed(st.Topic)
			if !ok {
				continue // deleted: no id to name it by
			}
			st.TopicID = t.ID
			kept = append(kept, st)
		}
		g.Topics = kept
		if g.ErrorCode != 0 {
			continue
		}
		for _, rt := range unknown[g.Group] {
			st := kmsg.NewOffsetFetchResponseGroupTopic()
			st.TopicID = rt.TopicID
			for _, p := range rt.Partitions {
				sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				empty := ""
				sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata = p, -1, -1, &empty
				sp.ErrorCode = kerr.UnknownTopicID.Code
				st.Partitions = append(st.Partitions, sp)
			}
			g.Topics = append(g.Topics, st)
		}
	}
	return r
}
