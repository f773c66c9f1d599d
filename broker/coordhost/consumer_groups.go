package coordhost

// Routing between the classic and the KIP-848 coordinator. A group id is
// one kind at a time, as in Kafka without online migration:
//   - ConsumerGroupHeartbeat/Describe (keys 68/69) go to consumer.Coordinator,
//     which refuses a classic group with members (GROUP_ID_NOT_FOUND).
//   - JoinGroup for a consumer group with members: INCONSISTENT_GROUP_PROTOCOL;
//     an empty consumer group is deleted first, as Kafka converts it.
//   - SyncGroup, Heartbeat, LeaveGroup for a consumer group: UNKNOWN_MEMBER_ID.
//   - Offsets always live in the classic coordinator. Commits and fetches for a
//     consumer group are checked against member epochs by consumer.Coordinator
//     and then stored as simple (generation -1) commits.
//   - ListGroups, DescribeGroups and DeleteGroups merge both.

import (
	"slices"
	"strings"
	"time"

	"github.com/kbroker/kbroker/coordinator/consumer"
	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *Host) consumerGroupConfig() consumer.Config {
	cfg := consumer.DefaultConfig()
	cfg.HeartbeatIntervalMs = h.cfg.GroupConsumerHeartbeatIntervalMs
	cfg.SessionTimeoutMs = h.cfg.GroupConsumerSessionTimeoutMs
	cfg.Assignors = consumer.ParseAssignors(h.cfg.GroupConsumerAssignors)
	cfg.GroupTimeouts = func(group string) (int32, int32) {
		v := h.groupCfgs.Values(group)
		return v.ConsumerSessionTimeoutMs, v.ConsumerHeartbeatIntervalMs
	}
	return cfg
}

// topicInfos is the topic snapshot KIP-848 assignment works from (internal
// topics excluded by the coordinator): in cluster mode every topic of the
// metadata cache, which this broker need host no replica of; on a single
// node the replica manager's.
func (h *Host) topicInfos() []consumer.TopicInfo {
	if h.cluster != nil {
		return h.cluster.Topics()
	}
	ts := h.rm.Topics()
	out := make([]consumer.TopicInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, consumer.TopicInfo{Name: t.Meta.Name, ID: t.Meta.ID, Partitions: int32(len(t.Partitions))})
	}
	return out
}

// TopicsChanged tells the KIP-848 coordinator that topics were created,
// deleted or grew, so regex subscriptions and assignments follow.
func (h *Host) TopicsChanged() {
	g := &h.groups
	g.mu.Lock()
	loaded := g.mu.cc != nil && !g.mu.closed
	g.mu.Unlock()
	if !loaded {
		return
	}
	err := g.call([]string{}, func(cs coords, now time.Time) ([]group.Reply, []group.Record) {
		return nil, fromConsumer(cs.consumer.MetadataChanged(now))
	})
	if err != nil {
		h.log.Warn("group metadata update skipped", "err", err)
	}
}

func fromConsumer(recs []consumer.Record) []group.Record {
	out := make([]group.Record, len(recs))
	for i, r := range recs {
		out[i] = group.Record{Group: r.Group, Key: r.Key, Value: r.Value}
	}
	return out
}

func fromConsumerReplies(rs []consumer.Reply) []group.Reply {
	out := make([]group.Reply, len(rs))
	for i, r := range rs {
		out[i] = group.Reply{Token: r.Token, Resp: r.Resp}
	}
	return out
}

// routeGroupRequest sends one group request to the coordinator that owns it.
func routeGroupRequest(cs coords, now time.Time, tok Token, client group.Client, req kmsg.Request) ([]group.Reply, []group.Record, error) {
	now0 := now
	reply := func(resp kmsg.Response) ([]group.Reply, []group.Record, error) {
		return []group.Reply{{Token: tok, Resp: resp}}, nil, nil
	}
	switch r := req.(type) {
	case *kmsg.ConsumerGroupHeartbeatRequest, *kmsg.ConsumerGroupDescribeRequest:
		rs, recs, err := cs.consumer.Handle(now0, tok, consumer.Client{ID: client.ID, Host: client.Host}, req)
		return fromConsumerReplies(rs), fromConsumer(recs), err
	case *kmsg.JoinGroupRequest:
		if cs.consumer.HasMembers(r.Group) {
			resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
			resp.Generation = -1
			return reply(resp)
		}
		var pre []group.Record
		if cs.consumer.IsConsumerGroup(r.Group) {
			_, tomb := cs.consumer.DeleteGroup(r.Group)
			pre = fromConsumer(tomb)
		}
		rs, recs, err := cs.classic.Handle(now0, tok, client, req)
		return rs, append(pre, recs...), err
	case *kmsg.SyncGroupRequest:
		if cs.consumer.IsConsumerGroup(r.Group) {
			resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode = kerr.UnknownMemberID.Code
			return reply(resp)
		}
	case *kmsg.HeartbeatRequest:
		if cs.consumer.IsConsumerGroup(r.Group) {
			resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = kerr.UnknownMemberID.Code
			return reply(resp)
		}
	case *kmsg.LeaveGroupRequest:
		if cs.consumer.IsConsumerGroup(r.Group) {
			resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = kerr.UnknownMemberID.Code
			return reply(resp)
		}
	case *kmsg.OffsetCommitRequest:
		if cs.consumer.IsConsumerGroup(r.Group) {
			var parts []consumer.CommitPartition
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					parts = append(parts, consumer.CommitPartition{Topic: t.Topic, TopicID: t.TopicID, Partition: p.Partition})
				}
			}
			if code := cs.consumer.ValidateCommit(r.Group, r.MemberID, r.Generation, parts); code != 0 {
				resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
				for _, t := range r.Topics {
					rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
					for _, p := range t.Partitions {
						rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
					}
					resp.Topics = append(resp.Topics, rt)
				}
				return reply(resp)
			}
			simple := *r
			simple.Generation, simple.MemberID, simple.InstanceID = -1, "", nil
			req = &simple
		}
	case *kmsg.OffsetFetchRequest:
		return offsetFetch(cs, now0, tok, client, r)
	case *kmsg.DescribeGroupsRequest:
		rs, recs, err := cs.classic.Handle(now0, tok, client, req)
		for _, rp := range rs {
			if resp, ok := rp.Resp.(*kmsg.DescribeGroupsResponse); ok {
				describeConsumerGroups(cs.consumer, resp)
			}
		}
		return rs, recs, err
	case *kmsg.ListGroupsRequest:
		rs, recs, err := cs.classic.Handle(now0, tok, client, req)
		for _, rp := range rs {
			if resp, ok := rp.Resp.(*kmsg.ListGroupsResponse); ok {
				listConsumerGroups(cs.consumer, r, resp)
			}
		}
		return rs, recs, err
	case *kmsg.DeleteGroupsRequest:
		var pre []group.Record
		consumerCodes := map[string]int16{}
		for _, id := range r.Groups {
			if cs.consumer.IsConsumerGroup(id) {
				code, tomb := cs.consumer.DeleteGroup(id)
				consumerCodes[id] = code
				pre = append(pre, fromConsumer(tomb)...)
			}
		}
		rs, recs, err := cs.classic.Handle(now0, tok, client, req)
		for _, rp := range rs {
			if resp, ok := rp.Resp.(*kmsg.DeleteGroupsResponse); ok {
				for i := range resp.Groups {
					if code, ok := consumerCodes[resp.Groups[i].Group]; ok {
						// The consumer group's own answer counts; the classic side only held its offsets.
						resp.Groups[i].ErrorCode = code
					}
				}
			}
		}
		return rs, append(pre, recs...), err
	}
	return cs.classic.Handle(now0, tok, client, req)
}

// offsetFetch checks member epochs of consumer groups (v9), then lets the
// classic coordinator answer from the stored offsets.
func offsetFetch(cs coords, now time.Time, tok Token, client group.Client, r *kmsg.OffsetFetchRequest) ([]group.Reply, []group.Record, error) {
	if r.Version < 8 {
		return cs.classic.Handle(now, tok, client, r)
	}
	failed := map[string]int16{}
	stripped := *r
	stripped.Groups = make([]kmsg.OffsetFetchRequestGroup, len(r.Groups))
	for i, g := range r.Groups {
		stripped.Groups[i] = g
		if cs.consumer.IsConsumerGroup(g.Group) {
			if code := cs.consumer.ValidateOffsetFetch(g.Group, g.MemberID, g.MemberEpoch); code != 0 {
				failed[g.Group] = code
			}
			stripped.Groups[i].MemberID, stripped.Groups[i].MemberEpoch = nil, -1
		}
	}
	rs, recs, err := cs.classic.Handle(now, tok, client, &stripped)
	for _, rp := range rs {
		if resp, ok := rp.Resp.(*kmsg.OffsetFetchResponse); ok {
			for i := range resp.Groups {
				if code, ok := failed[resp.Groups[i].Group]; ok {
					resp.Groups[i].ErrorCode = code
					resp.Groups[i].Topics = nil
				}
			}
		}
	}
	return rs, recs, err
}

// describeConsumerGroups fills in DescribeGroups answers for KIP-848 groups,
// which the classic coordinator reports as unknown (Dead, and from v6
// GROUP_ID_NOT_FOUND, which is cleared here). Kafka itself answers such a
// group as "not a classic group"; kbroker describes it so that tools
// limited to DescribeGroups still see it.
func describeConsumerGroups(cc *consumer.Coordinator, resp *kmsg.DescribeGroupsResponse) {
	states := map[string]string{}
	for _, l := range cc.ListGroups() {
		states[l.Group] = l.State
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if st, ok := states[g.Group]; ok && (g.State == "Dead" || g.State == "") {
			g.ErrorCode = 0
			g.ErrorMessage = nil
			g.State = kafkaClassicState(st)
			g.ProtocolType = "consumer"
		}
	}
}

// kafkaClassicState maps a KIP-848 group state to the names DescribeGroups uses.
func kafkaClassicState(s string) string {
	switch strings.ToLower(s) {
	case "empty":
		return "Empty"
	case "stable":
		return "Stable"
	case "dead":
		return "Dead"
	}
	return "PreparingRebalance"
}

// MatchesFilter reports whether v passes a ListGroups filter: an empty
// filter passes everything; names compare case-insensitively, as Kafka's.
func MatchesFilter(filter []string, v string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, v) {
			return true
		}
	}
	return false
}

// listConsumerGroups adds KIP-848 groups to a ListGroups answer, honouring
// the state (v4+) and type (v5+) filters. A KIP-848 group's committed
// offsets live in the classic coordinator, which lists them as an Empty
// classic group: that entry is dropped, the group is listed once, as a
// consumer group (as Kafka lists it).
func listConsumerGroups(cc *consumer.Coordinator, req *kmsg.ListGroupsRequest, resp *kmsg.ListGroupsResponse) {
	resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return cc.IsConsumerGroup(g.Group) })
	for _, l := range cc.ListGroups() {
		if req.Version >= 4 && !MatchesFilter(req.StatesFilter, l.State) {
			continue
		}
		if req.Version >= 5 && !MatchesFilter(req.TypesFilter, "consumer") {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = l.Group
		lg.ProtocolType = "consumer"
		lg.GroupState = l.State
		lg.GroupType = "consumer"
		resp.Groups = append(resp.Groups, lg)
	}
}
