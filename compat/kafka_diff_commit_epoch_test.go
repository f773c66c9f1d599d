package compat

// A KIP-848 member's offset commits with an older member epoch (KIP-1251,
// Kafka 4.3+), sent to Apache Kafka 4.4.0 and to kbroker in the same
// conversation: the error codes must be Kafka's.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitEpochScript is one broker's side of TestKafkaDiffCommitOlderEpoch.
type commitEpochScript struct {
	t      *testing.T
	c      *diffConn
	member string
	epoch  int32
	owned  []kmsg.ConsumerGroupHeartbeatRequestTopic
}

// version is the highest version of key both brokers (kb, kf) speak.
func commonVersion(kb, kf *diffConn, key int16) int16 {
	return min(kb.versions[key][1], kf.versions[key][1])
}

// beat sends a heartbeat with the member's epoch and owned partitions, and
// subscribed topics, until its answer satisfies done (20 s at most), and
// returns the last answer's partitions by topic name.
func (s *commitEpochScript) beat(v int16, topics []string, done func(epoch int32, asg map[string][]int32) bool) map[string][]int32 {
	s.t.Helper()
	names := map[[16]byte]string{}
	for name, id := range s.c.topicIDs {
		names[id] = name
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.SetVersion(v)
		req.Group, req.MemberID, req.MemberEpoch = "diff-kip1251", s.member, s.epoch
		req.RebalanceTimeoutMillis = 30000
		req.SubscribedTopicNames = topics
		req.Topics = s.owned
		resp := s.c.send(s.t, req).(*kmsg.ConsumerGroupHeartbeatResponse)
		if settlingCodes[float64(resp.ErrorCode)] && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond) // __consumer_offsets is being created or loaded
			continue
		}
		if resp.ErrorCode != 0 {
			s.t.Fatalf("%s: heartbeat at epoch %d: error %d", s.c.addr, s.epoch, resp.ErrorCode)
		}
		s.epoch = resp.MemberEpoch
		asg := map[string][]int32{}
		if resp.Assignment != nil {
			s.owned = nil
			for _, tp := range resp.Assignment.Topics {
				asg[names[tp.TopicID]] = slices.Sorted(slices.Values(tp.Partitions))
				s.owned = append(s.owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
			}
			if done(s.epoch, asg) {
				return asg
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: heartbeats did not reach the expected assignment (epoch %d, last assignment %v)", s.c.addr, s.epoch, asg)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// commit sends an OffsetCommit of offset 1 for partitions at epoch and
// returns its partitions' error codes, in request order.
func (s *commitEpochScript) commit(v int16, epoch int32, parts map[string][]int32) []int16 {
	s.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(v)
	req.Group, req.MemberID, req.Generation = "diff-kip1251", s.member, epoch
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range parts {
			if !yield(n) {
				return
			}
		}
	}) {
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic, tp.TopicID = name, s.c.topicIDs[name]
		for _, p := range parts[name] {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 1
			tp.Partitions = append(tp.Partitions, rp)
		}
		req.Topics = append(req.Topics, tp)
	}
	resp := s.c.send(s.t, req).(*kmsg.OffsetCommitResponse)
	var codes []int16
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

// TestKafkaDiffCommitOlderEpoch: a member alone in a group owns both
// partitions of topic a at epoch e1; it subscribes to b too and moves to
// epoch e2 > e1 with b-0 added (nothing to revoke). Then commits at e1 for
// a-0 (kept since e1: Kafka 4.3+ accepts it), at e1 for b-0 (given at
// e2: STALE_MEMBER_EPOCH), at e1 for both (one fails: the whole commit
// fails), at e2+1 (newer than the member: STALE_MEMBER_EPOCH) and at e2.
// Both brokers must answer the same codes.
func TestKafkaDiffCommitOlderEpoch(t *testing.T) {
	kb, kf := startDiffPair(t)
	hbV := commonVersion(kb, kf, kmsg.ConsumerGroupHeartbeat.Int16())
	commitV := commonVersion(kb, kf, kmsg.OffsetCommit.Int16())
	answers := map[string][]string{}
	for _, c := range []*diffConn{kf, kb} {
		for _, spec := range []struct {
			name string
			n    int32
		}{{"diff-kip1251-a", 2}, {"diff-kip1251-b", 1}} {
			req := diffCreateTopic(spec.name, spec.n, false, nil)(c)
			req.SetVersion(commonVersion(kb, kf, req.Key()))
			resp := c.sendSettled(t, req)
			noteState(c, req, resp)
		}
		// FindCoordinator creates __consumer_offsets on Kafka (a heartbeat
		// alone would get NOT_COORDINATOR for ever).
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.SetVersion(commonVersion(kb, kf, fc.Key()))
		fc.CoordinatorKey, fc.CoordinatorKeys = "diff-kip1251", []string{"diff-kip1251"}
		c.sendSettled(t, fc)
		s := &commitEpochScript{t: t, c: c, member: "kip1251MemberAAAAAAAAA", owned: []kmsg.ConsumerGroupHeartbeatRequestTopic{}}
		s.beat(hbV, []string{"diff-kip1251-a"}, func(_ int32, asg map[string][]int32) bool {
			return len(asg["diff-kip1251-a"]) == 2
		})
		e1 := s.epoch
		s.beat(hbV, []string{"diff-kip1251-a", "diff-kip1251-b"}, func(epoch int32, asg map[string][]int32) bool {
			return epoch > e1 && len(asg["diff-kip1251-b"]) == 1
		})
		e2 := s.epoch
		var got []string
		for _, step := range []struct {
			name  string
			epoch int32
			parts map[string][]int32
		}{
			{"e1, a-0 (kept)", e1, map[string][]int32{"diff-kip1251-a": {0}}},
			{"e1, b-0 (added at e2)", e1, map[string][]int32{"diff-kip1251-b": {0}}},
			{"e1, a-1 and b-0", e1, map[string][]int32{"diff-kip1251-a": {1}, "diff-kip1251-b": {0}}},
			{"e2+1", e2 + 1, map[string][]int32{"diff-kip1251-a": {0}}},
			{"e2, a-0 and b-0", e2, map[string][]int32{"diff-kip1251-a": {0}, "diff-kip1251-b": {0}}},
		} {
			got = append(got, fmt.Sprintf("%s: %v", step.name, s.commit(commitV, step.epoch, step.parts)))
		}
		leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		leave.SetVersion(hbV)
		leave.Group, leave.MemberID, leave.MemberEpoch = "diff-kip1251", s.member, -1
		c.send(t, leave)
		who := "kbroker"
		if c == kf {
			who = "Kafka"
		}
		answers[who] = got
		t.Logf("%s (epochs %d → %d, OffsetCommit v%d): %v", who, e1, e2, commitV, got)
	}
	if !slices.Equal(answers["Kafka"], answers["kbroker"]) {
		t.Errorf("commit codes differ:\nKafka:   %v\nkbroker: %v", answers["Kafka"], answers["kbroker"])
	}
}
