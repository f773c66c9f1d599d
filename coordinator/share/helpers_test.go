package share

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/coordinator/groupconfig"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	t0     = time.Unix(1_700_000_000, 0)
	topicA = TopicInfo{Name: "a", ID: [16]byte{1}, Partitions: 3}
	topicB = TopicInfo{Name: "b", ID: [16]byte{2}, Partitions: 1}
	tpA0   = TopicPartition{TopicID: topicA.ID, Partition: 0}
)

// harness is a coordinator with a fake clock and a fixed topic set.
type harness struct {
	t      *testing.T
	c      *Coordinator
	now    time.Time
	topics []TopicInfo
	// groupCfgs are the group config overrides GroupConfigs reads.
	groupCfgs   map[string]map[string]string
	groupBroker groupconfig.Broker
}

// setGroupConfigs replaces a group's overrides after checking them as the
// broker does.
func (h *harness) setGroupConfigs(group string, overrides map[string]string) {
	h.t.Helper()
	if err := h.groupBroker.Validate(overrides); err != nil {
		h.t.Fatal(err)
	}
	h.groupCfgs[group] = overrides
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	h := &harness{t: t, now: t0, topics: []TopicInfo{topicA, topicB}, groupCfgs: map[string]map[string]string{}}
	b := groupconfig.DefaultBroker()
	b.ShareSessionTimeoutMs, b.ShareHeartbeatIntervalMs = cfg.SessionTimeoutMs, cfg.HeartbeatIntervalMs
	b.ShareRecordLockDurationMs, b.ShareDeliveryCountLimit = cfg.RecordLockDurationMs, cfg.DeliveryCountLimit
	h.groupBroker = b
	cfg.GroupConfigs = func(group string) groupconfig.Values { return b.Effective(h.groupCfgs[group]) }
	c, err := New(cfg, func() []TopicInfo { return h.topics })
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

// advance moves the clock and ticks when a deadline passed, as the broker's timer does.
func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	if next := h.c.NextDeadline(); !next.IsZero() && !h.now.Before(next) {
		h.c.Tick(h.now)
	}
}

func (h *harness) heartbeat(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	return h.c.Heartbeat(h.now, Client{ID: "cl", Host: "/127.0.0.1"}, req)
}

// batches makes one-record-per-offset style batch headers of size n each covering from..to.
func batches(from, to int64, n int64) []Batch {
	var out []Batch
	for o := from; o <= to; o += n {
		out = append(out, Batch{First: o, Last: min(o+n-1, to)})
	}
	return out
}

// acquire reads like the broker: FetchOffset, then Acquire over batches up to hw.
func (h *harness) acquire(group, member string, tp TopicPartition, hw int64, max int) []Range {
	h.t.Helper()
	off, ok := h.c.FetchOffset(group, tp, 0, hw)
	if !ok {
		return nil
	}
	return h.c.Acquire(h.now, group, member, tp, batches(off, hw-1, 1), max)
}

func (h *harness) ack(group, member string, tp TopicPartition, first, last int64, types ...int8) int16 {
	return h.c.Acknowledge(h.now, group, member, tp, []AckBatch{{First: first, Last: last, Types: types}}, false)
}

func (h *harness) states(group string, tp TopicPartition, from, to int64) []State {
	st, _ := h.c.RecordStates(group, tp, from, to)
	return st
}
