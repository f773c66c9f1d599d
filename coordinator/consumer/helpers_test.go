package consumer

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a Coordinator with a fake clock and a mutable topic list,
// keeps every record it returned, and checks the coordinator's invariants
// after every input.
type harness struct {
	t       *testing.T
	c       *Coordinator
	now     time.Time
	topics  []TopicInfo
	records []Record
	ids     int
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, now: time.UnixMilli(1_700_000_000_000)}
	cfg := DefaultConfig()
	cfg.NewMemberID = func() string {
		h.ids++
		return fmt.Sprintf("gen-%d", h.ids)
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg, TopicsFunc(func() []TopicInfo { return h.topics }))
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

// settle polls the members in turn, checking that no partition has two
// owners, until the group is Stable (a few rounds at most).
func (h *harness) settle(sims ...*sim) {
	h.t.Helper()
	for i := 0; i < 4 && h.state() != "Stable"; i++ {
		for _, s := range sims {
			h.poll(s)
		}
		h.assertDisjoint(sims...)
	}
	if s := h.state(); s != "Stable" {
		h.t.Fatalf("the group did not settle: state %s", s)
	}
}

// replayed returns a coordinator rebuilt by replaying every record h's
// coordinator wrote, as a new coordinator loads its partition.
func (h *harness) replayed() *Coordinator {
	h.t.Helper()
	c, err := New(DefaultConfig(), TopicsFunc(func() []TopicInfo { return h.topics }))
	if err != nil {
		h.t.Fatal(err)
	}
	for i, r := range h.records {
		if err := c.Replay(r.Key, r.Value); err != nil {
			h.t.Fatalf("record %d: %v", i, err)
		}
	}
	return c
}

// topicID derives a stable id from a topic name.
func topicID(name string) (id uuid) {
	copy(id[:], "id:"+name)
	return id
}

// setTopic creates or grows a topic.
func (h *harness) setTopic(name string, partitions int32) {
	for i := range h.topics {
		if h.topics[i].Name == name {
			h.topics[i].Partitions = partitions
			return
		}
	}
	h.topics = append(h.topics, TopicInfo{Name: name, ID: topicID(name), Partitions: partitions})
}

func (h *harness) metadataChanged() {
	h.t.Helper()
	h.records = append(h.records, h.c.MetadataChanged(h.now)...)
	h.check()
}

func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.now = h.now.Add(d)
	h.records = append(h.records, h.c.Tick(h.now)...)
	h.check()
}

// send passes a heartbeat through Handle.
func (h *harness) send(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	rs, recs, err := h.c.Handle(h.now, "tok", Client{ID: "cli", Host: "/127.0.0.1"}, req)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Token != "tok" {
		h.t.Fatalf("replies %+v", rs)
	}
	resp := rs[0].Resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	if resp.ErrorCode != 0 && len(recs) != 0 {
		h.t.Fatalf("refused heartbeat (error %d) returned %d records", resp.ErrorCode, len(recs))
	}
	h.records = append(h.records, recs...)
	h.check()
	return resp
}

// joinReq is a v1 join of member id to group "g" subscribing to topics.
func joinReq(id string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group = "g"
	req.MemberID = id
	req.MemberEpoch = 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = topics
	if req.SubscribedTopicNames == nil {
		req.SubscribedTopicNames = []string{}
	}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// beatReq is a v1 keep-alive heartbeat reporting owned partitions (nil:
// not reported).
func beatReq(id string, epoch int32, owned assignment) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group = "g"
	req.MemberID = id
	req.MemberEpoch = epoch
	if owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, t := range owned.topics() {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID = t
			rt.Partitions = slices.Clone(owned[t])
			req.Topics = append(req.Topics, rt)
		}
	}
	return req
}

// respAssignment converts a response assignment; nil if absent.
func respAssignment(r *kmsg.ConsumerGroupHeartbeatResponse) assignment {
	if r.Assignment == nil {
		return nil
	}
	return newAssignment(func(put func(uuid, int32)) {
		for _, t := range r.Assignment.Topics {
			for _, p := range t.Partitions {
				put(t.TopicID, p)
			}
		}
	})
}

// sim is a simulated consumer that follows the protocol as the Java client
// does: it adopts every assignment it receives (dropping what is no longer
// in it), reports what it owns in every heartbeat, and rejoins from
// scratch when fenced.
type sim struct {
	id       string
	instance *string
	topics   []string
	regex    *string
	assignor *string
	epoch    int32
	owned    assignment
	joined   bool
}

func (h *harness) poll(s *sim) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	var req *kmsg.ConsumerGroupHeartbeatRequest
	if !s.joined {
		req = joinReq(s.id, s.topics...)
		req.SubscribedTopicRegex = s.regex
		if s.regex != nil && s.topics == nil {
			req.SubscribedTopicNames = nil
		}
		req.ServerAssignor = s.assignor
		s.epoch = 0
		s.owned = assignment{}
	} else {
		owned := s.owned
		if owned == nil {
			owned = assignment{}
		}
		req = beatReq(s.id, s.epoch, owned)
	}
	req.InstanceID = s.instance
	resp := h.send(req)
	if resp.ErrorCode != 0 {
		s.joined = false
		s.owned = assignment{}
		return resp
	}
	s.joined = true
	s.id = *resp.MemberID
	s.epoch = resp.MemberEpoch
	if a := respAssignment(resp); a != nil {
		s.owned = a
	}
	return resp
}

// assertDisjoint checks that no two simulated consumers own a partition at
// the same time.
func (h *harness) assertDisjoint(sims ...*sim) {
	h.t.Helper()
	seen := make(map[tp]string)
	for _, s := range sims {
		for t, ps := range s.owned {
			for _, p := range ps {
				if o, dup := seen[tp{t, p}]; dup {
					h.t.Fatalf("partition %v/%d owned by %s and %s", t, p, o, s.id)
				}
				seen[tp{t, p}] = s.id
			}
		}
	}
}

// check verifies the group invariants documented on the state.
func (h *harness) check() {
	h.t.Helper()
	if err := checkInvariants(h.c, true); err != nil {
		h.t.Fatal(err)
	}
}

// checkInvariants checks the documented invariants; epochs also checks
// assignmentEpoch <= epoch, which holds for logs this package writes but
// not for arbitrary records.
func checkInvariants(c *Coordinator, epochs bool) error {
	for id, g := range c.groups {
		if epochs && g.assignmentEpoch > g.epoch {
			return fmt.Errorf("group %s: assignment epoch %d > group epoch %d", id, g.assignmentEpoch, g.epoch)
		}
		owners := make(map[tp]string)
		for _, m := range g.members {
			nOwned := 0
			for _, a := range []assignment{m.cur.assigned, m.cur.pending} {
				for t, ps := range a {
					for _, p := range ps {
						nOwned++
						if e, ok := m.since[partitionKey{t, p}]; !ok || e > m.cur.epoch {
							return fmt.Errorf("group %s member %s: %v/%d has assignment epoch %d (present %v), member epoch %d", id, m.id, t, p, e, ok, m.cur.epoch)
						}
					}
				}
			}
			if len(m.since) != nOwned {
				return fmt.Errorf("group %s member %s: %d assignment epochs for %d partitions", id, m.id, len(m.since), nOwned)
			}
			if m.cur.state != MemberUnrevokedPartitions && m.cur.state != MemberUnknown && len(m.cur.pending) > 0 {
				return fmt.Errorf("group %s member %s: pending revocation in state %v", id, m.id, m.cur.state)
			}
			for _, a := range []assignment{m.cur.assigned, m.cur.pending} {
				for t, ps := range a {
					for _, p := range ps {
						if o, dup := owners[tp{t, p}]; dup {
							return fmt.Errorf("group %s: partition %v/%d owned by %s and %s", id, t, p, o, m.id)
						}
						owners[tp{t, p}] = m.id
					}
				}
			}
			if m.sub.instanceID != nil && g.static[*m.sub.instanceID] != m.id {
				return fmt.Errorf("group %s: static map misses member %s", id, m.id)
			}
		}
		n := 0
		for t, ps := range g.owners {
			for p, o := range ps {
				n++
				if owners[tp{t, p}] != o {
					return fmt.Errorf("group %s: owners says %v/%d is %s, members say %q", id, t, p, o, owners[tp{t, p}])
				}
			}
		}
		if n != len(owners) {
			return fmt.Errorf("group %s: owners has %d partitions, members own %d", id, n, len(owners))
		}
	}
	return nil
}

// dump renders the persistent state of all groups canonically, for
// comparing a coordinator with one rebuilt by Replay.
func dump(c *Coordinator) string {
	var b strings.Builder
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	asg := func(a assignment) string {
		var parts []string
		for _, t := range a.topics() {
			parts = append(parts, fmt.Sprintf("%s:%v", strings.TrimRight(string(t[3:]), "\x00"), a[t]))
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	for _, id := range sortedKeys(c.groups) {
		g := c.groups[id]
		fmt.Fprintf(&b, "group %s epoch=%d assignmentEpoch=%d state=%v\n", id, g.epoch, g.assignmentEpoch, g.state())
		var metas []string
		for name, t := range g.subMeta {
			metas = append(metas, fmt.Sprintf("%s/%d", name, t.partitions))
		}
		sort.Strings(metas)
		fmt.Fprintf(&b, "  meta %v\n", metas)
		for _, m := range g.sortedMembers() {
			s := m.sub
			fmt.Fprintf(&b, "  member %s inst=%s rack=%s client=%s/%s topics=%v regex=%s assignor=%s rto=%d\n",
				m.id, str(s.instanceID), str(s.rackID), s.clientID, s.clientHost, s.topicNames, str(s.regex), str(s.serverAssignor), s.rebalanceTimeoutMs)
			fmt.Fprintf(&b, "    epoch=%d prev=%d state=%v assigned=%s pending=%s\n",
				m.cur.epoch, m.cur.prevEpoch, m.cur.state, asg(m.cur.assigned), asg(m.cur.pending))
			var since []string
			for k, e := range m.since {
				since = append(since, fmt.Sprintf("%s/%d@%d", strings.TrimRight(string(k.topic[3:]), "\x00"), k.partition, e))
			}
			sort.Strings(since)
			fmt.Fprintf(&b, "    since=%v\n", since)
		}
		for _, mid := range sortedKeys(g.target) {
			fmt.Fprintf(&b, "  target %s %s\n", mid, asg(g.target[mid]))
		}
	}
	return b.String()
}

// asgOf builds an assignment from "topic:p,p topic:p" text.
func asgOf(spec string) assignment {
	out := assignment{}
	for _, f := range strings.Fields(spec) {
		name, ps, _ := strings.Cut(f, ":")
		for _, p := range strings.Split(ps, ",") {
			if p == "" {
				continue
			}
			var n int32
			fmt.Sscan(p, &n)
			out.add(topicID(name), n)
		}
	}
	return out
}

func (h *harness) describe(groups ...string) *kmsg.ConsumerGroupDescribeResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = groups
	rs, _, err := h.c.Handle(h.now, "d", Client{}, req)
	if err != nil {
		h.t.Fatal(err)
	}
	return rs[0].Resp.(*kmsg.ConsumerGroupDescribeResponse)
}

func (h *harness) state() string {
	h.t.Helper()
	return h.describe("g").Groups[0].State
}

func (h *harness) member(id string) *member {
	h.t.Helper()
	g := h.c.groups["g"]
	if g == nil || g.members[id] == nil {
		h.t.Fatalf("no member %s", id)
	}
	return g.members[id]
}

func wantCode(t *testing.T, r *kmsg.ConsumerGroupHeartbeatResponse, code int16) {
	t.Helper()
	if r.ErrorCode != code {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		t.Fatalf("error code %d (%s), want %d", r.ErrorCode, msg, code)
	}
}

func wantAssigned(t *testing.T, got assignment, spec string) {
	t.Helper()
	if want := asgOf(spec); !got.equal(want) {
		t.Fatalf("assignment %v, want %v (%s)", got, want, spec)
	}
}
