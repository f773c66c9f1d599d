package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a Coordinator with a fake clock and records every reply
// by token, failing the test if a token is answered twice.
type harness struct {
	t       *testing.T
	c       *Coordinator
	now     time.Time
	replies map[any]kmsg.Response
	records []Record
	ids     int
	// holdAppends keeps records unacknowledged: the test calls ack (or
	// fail) itself. Otherwise every call's records are acknowledged at
	// once, as on a single node.
	holdAppends bool
	held        [][]Record
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	h := &harness{t: t, now: time.UnixMilli(1_700_000_000_000), replies: make(map[any]kmsg.Response)}
	cfg.NewMemberID = func(clientID string) string {
		h.ids++
		return fmt.Sprintf("%s-%d", clientID, h.ids)
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

func (h *harness) collect(rs []Reply, recs []Record) {
	h.t.Helper()
	for _, r := range rs {
		if _, dup := h.replies[r.Token]; dup {
			h.t.Fatalf("token %v answered twice", r.Token)
		}
		h.replies[r.Token] = r.Resp
	}
	h.records = append(h.records, recs...)
	if len(recs) == 0 {
		return
	}
	if h.holdAppends {
		h.held = append(h.held, recs)
		return
	}
	h.collect(h.c.Appended(h.now, recs, nil), nil)
}

// ack completes the i-th held append (in call order) with err.
func (h *harness) ack(i int, err error) {
	h.t.Helper()
	recs := h.held[i]
	h.held[i] = nil
	if recs == nil {
		h.t.Fatalf("append %d completed twice", i)
	}
	h.collect(h.c.Appended(h.now, recs, err), nil)
}

// advance moves the clock by d and ticks.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.now = h.now.Add(d)
	h.collect(h.c.Tick(h.now))
}

// tickToNextDeadline moves the clock to NextDeadline and ticks.
func (h *harness) tickToNextDeadline() {
	h.t.Helper()
	d := h.c.NextDeadline()
	if d.IsZero() {
		h.t.Fatal("no deadline")
	}
	h.now = d
	h.collect(h.c.Tick(h.now))
}

// tickUntil ticks deadline by deadline until token is answered.
func (h *harness) tickUntil(token any) {
	h.t.Helper()
	for i := 0; i < 100 && !h.answered(token); i++ {
		h.tickToNextDeadline()
	}
}

func (h *harness) handle(token any, req kmsg.Request) {
	h.t.Helper()
	rs, recs, err := h.c.Handle(h.now, token, Client{ID: "client", Host: "/127.0.0.1"}, req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.collect(rs, recs)
}

func (h *harness) answered(token any) bool {
	_, ok := h.replies[token]
	return ok
}

func (h *harness) joinResp(token any) *kmsg.JoinGroupResponse {
	h.t.Helper()
	r, ok := h.replies[token]
	if !ok {
		h.t.Fatalf("join %v not answered", token)
	}
	return r.(*kmsg.JoinGroupResponse)
}

func (h *harness) syncResp(token any) *kmsg.SyncGroupResponse {
	h.t.Helper()
	r, ok := h.replies[token]
	if !ok {
		h.t.Fatalf("sync %v not answered", token)
	}
	return r.(*kmsg.SyncGroupResponse)
}

// subscription encodes consumer protocol metadata for topics.
func subscription(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 0
	m.Topics = topics
	return m.AppendTo(nil)
}

type joinOpts struct {
	version    int16
	member     string
	instance   string
	protoType  string
	protocols  []string
	topics     []string
	session    int32
	rebalance  int32
	groupID    string
	customMeta []byte
}

func (h *harness) join(token any, o joinOpts) {
	h.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = o.version
	if req.Version == 0 {
		req.Version = 9
	}
	req.Group = o.groupID
	if req.Group == "" {
		req.Group = "g"
	}
	req.SessionTimeoutMillis = o.session
	if req.SessionTimeoutMillis == 0 {
		req.SessionTimeoutMillis = 10000
	}
	req.RebalanceTimeoutMillis = o.rebalance
	if req.RebalanceTimeoutMillis == 0 {
		req.RebalanceTimeoutMillis = 20000
	}
	req.MemberID = o.member
	if o.instance != "" {
		inst := o.instance
		req.InstanceID = &inst
	}
	req.ProtocolType = o.protoType
	if req.ProtocolType == "" {
		req.ProtocolType = "consumer"
	}
	protos := o.protocols
	if protos == nil {
		protos = []string{"range"}
	}
	topics := o.topics
	if topics == nil {
		topics = []string{"t"}
	}
	for _, p := range protos {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name = p
		jp.Metadata = subscription(topics...)
		if o.customMeta != nil {
			jp.Metadata = o.customMeta
		}
		req.Protocols = append(req.Protocols, jp)
	}
	h.handle(token, req)
}

// joinWithID performs the v4+ two-step join and returns the member id; the
// second join is parked under token.
func (h *harness) joinWithID(token any, o joinOpts) string {
	h.t.Helper()
	first := fmt.Sprintf("%v/first", token)
	h.join(first, o)
	r := h.joinResp(first)
	if r.ErrorCode != kerr.MemberIDRequired.Code {
		h.t.Fatalf("first join: error %d, want MEMBER_ID_REQUIRED", r.ErrorCode)
	}
	o.member = r.MemberID
	h.join(token, o)
	return r.MemberID
}

func (h *harness) sync(token any, group, member string, gen int32, assign map[string][]byte) {
	h.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, member, gen
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	h.handle(token, req)
}

func (h *harness) heartbeat(group, member string, gen int32, instance string) int16 {
	h.t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = group, member, gen
	if instance != "" {
		req.InstanceID = &instance
	}
	tok := new(int)
	h.handle(tok, req)
	return h.replies[tok].(*kmsg.HeartbeatResponse).ErrorCode
}

func (h *harness) describe(groups ...string) *kmsg.DescribeGroupsResponse {
	h.t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = groups
	tok := new(int)
	h.handle(tok, req)
	return h.replies[tok].(*kmsg.DescribeGroupsResponse)
}

func (h *harness) state(group string) string {
	h.t.Helper()
	return h.describe(group).Groups[0].State
}

// stableGroup forms group "g" with n dynamic members through a full
// join/sync and returns their ids (index 0 is the leader) and generation.
func (h *harness) stableGroup(n int) ([]string, int32) {
	h.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = h.joinWithID(fmt.Sprintf("setup-join-%d", i), joinOpts{})
	}
	h.tickUntil("setup-join-0")
	lead := h.joinResp("setup-join-0")
	if lead.ErrorCode != 0 || lead.LeaderID != ids[0] {
		h.t.Fatalf("setup: join error %d leader %q", lead.ErrorCode, lead.LeaderID)
	}
	assign := make(map[string][]byte)
	for i, id := range ids {
		assign[id] = []byte{byte(i)}
	}
	for i := 1; i < n; i++ {
		h.sync(fmt.Sprintf("setup-sync-%d", i), "g", ids[i], lead.Generation, nil)
	}
	h.sync("setup-sync-0", "g", ids[0], lead.Generation, assign)
	for i := range ids {
		if r := h.syncResp(fmt.Sprintf("setup-sync-%d", i)); r.ErrorCode != 0 {
			h.t.Fatalf("setup: sync %d error %d", i, r.ErrorCode)
		}
	}
	return ids, lead.Generation
}
