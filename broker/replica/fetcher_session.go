package replica

import (
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// followerSession is a fetcher's incremental fetch session with its leader
// (KIP-227; Kafka's FetchSessionHandler). After a full Fetch that the
// leader answered with a session id, each Fetch lists only the partitions
// whose fetch state changed since the one last sent, and ForgottenTopics
// for those the fetcher no longer copies; the leader reads every session
// partition and answers only those with news. Sessionless, every round
// carried every partition both ways: at 30,000 partitions at RF 3 that is
// 10,000–15,000 partitions per follower and leader, round after round under
// a producer, and it kept a 2-core machine's brokers saturated.
//
// Invariant: when epoch > 0, sent holds exactly the partitions of the
// leader's session id, each with the fetch state the leader last received
// for it. Epoch 0 means the next request is full (and closes session id,
// if any, as it creates the next).
type followerSession struct {
	id, epoch int32
	version   int16
	sent      map[storage.TopicPartition]sentPartition
}

// sentPartition is a partition's fetch state as a Fetch carries it.
type sentPartition struct {
	topicID               [16]byte
	epoch                 int32
	fetchOffset, logStart int64
	maxBytes              int32
}

func (sp sentPartition) request(partition int32) kmsg.FetchRequestTopicPartition {
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch = partition, sp.epoch
	rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = sp.fetchOffset, sp.logStart, sp.maxBytes
	return rp
}

// reset makes the next request full.
func (s *followerSession) reset() {
	s.epoch = 0
	clear(s.sent)
}

// fill sets req's session fields and topics for want, every partition the
// fetcher copies this round with its fetch state. req.Version must be set;
// below v7 (no sessions) every partition goes, session-less. want stays
// the caller's: sent is a copy kept up to date in place.
func (s *followerSession) fill(req *kmsg.FetchRequest, want map[storage.TopicPartition]sentPartition) {
	if req.Version < 7 {
		req.SessionID, req.SessionEpoch = 0, -1
		addFetchPartitions(req, want, nil)
		s.id = 0
		s.reset()
		return
	}
	if req.Version != s.version {
		s.reset() // sessions are keyed by topic id from v13, by name before
	}
	s.version = req.Version
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	if s.epoch == 0 {
		reuseMap(&s.sent)
		addFetchPartitions(req, want, s.sent)
		return
	}
	addFetchPartitions(req, want, s.sent)
	var forgotten map[string]int
	for tp, old := range s.sent {
		if _, ok := want[tp]; ok {
			continue
		}
		delete(s.sent, tp)
		if forgotten == nil {
			forgotten = map[string]int{}
		}
		i, ok := forgotten[tp.Topic]
		if !ok {
			i = len(req.ForgottenTopics)
			forgotten[tp.Topic] = i
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = tp.Topic, old.topicID
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
	}
}

// addFetchPartitions adds to req every partition of want whose state
// differs from sent (all of them when sent is nil or empty), and records
// in sent (when not nil) the state sent.
func addFetchPartitions(req *kmsg.FetchRequest, want, sent map[storage.TopicPartition]sentPartition) {
	byTopic := map[string]int{}
	for tp, sp := range want {
		if old, ok := sent[tp]; ok && old == sp {
			continue
		}
		if sent != nil {
			sent[tp] = sp
		}
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = tp.Topic, sp.topicID
			req.Topics = append(req.Topics, t)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, sp.request(tp.Partition))
	}
}

// answered moves the session on by the leader's answer to the request fill
// built last (err: none came, the request may or may not have been taken).
func (s *followerSession) answered(resp *kmsg.FetchResponse, err error) {
	if err != nil {
		s.reset()
		return
	}
	switch kerr.ErrorForCode(resp.ErrorCode) {
	case nil:
	case kerr.FetchSessionIDNotFound:
		s.id = 0
		s.reset()
		return
	default: // an invalid epoch, a topic id mismatch, any other error
		s.reset()
		return
	}
	if s.version < 7 {
		return
	}
	if s.epoch == 0 {
		s.id = resp.SessionID
		if s.id == 0 {
			s.reset() // the leader keeps no session for us: full requests
			return
		}
		s.epoch = 1
		return
	}
	s.epoch = nextFetchEpoch(s.epoch)
}
