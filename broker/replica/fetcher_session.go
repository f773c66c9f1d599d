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
// for those the fetcher no longer copies; the leader reads the session
// partitions (a kbroker leader only those that may have news) and answers
// only those with news. Sessionless, every round
// carried every partition both ways: at 30,000 partitions at RF 3 that is
// 10,000–15,000 partitions per follower and leader, round after round under
// a producer, and it kept a 2-core machine's brokers saturated.
//
// Invariant: when epoch > 0, sent holds exactly the partitions of the
// leader's session id, each with the fetch state the leader last received
// for it. Epoch 0 means the next request is full (and closes session id,
// if any, as it creates the next).
//
// A round's partitions (roundPart) cache their entry of sent, tagged with
// gen, which changes whenever sent is emptied: a round in which no
// partition's state changed reads no map (rounds of thousands of
// partitions, several a second, spent most of their time in map lookups).
type followerSession struct {
	id, epoch int32
	version   int16
	sent      map[storage.TopicPartition]sentPartition
	gen       uint64
}

// sentPartition is a partition's fetch state as a Fetch carries it.
// lastFetchedEpoch (Fetch v12+; -1 before) is the log's latest epoch: it
// changes with fetchOffset or logStart (an epoch enters a follower's log
// with its first record and leaves it with a truncation or a log start that
// passes it), except when a truncation drops an epoch that started at the
// log end (one this replica assigned as leader and wrote nothing in), after
// which the fetcher resends the partition (resend).
type sentPartition struct {
	topicID               [16]byte
	epoch                 int32
	fetchOffset, logStart int64
	maxBytes              int32
	lastFetchedEpoch      int32
}

// sameButEpoch reports whether sp and o differ at most in lastFetchedEpoch.
func (sp sentPartition) sameButEpoch(o sentPartition) bool {
	o.lastFetchedEpoch = sp.lastFetchedEpoch
	return sp == o
}

func (sp sentPartition) request(partition int32) kmsg.FetchRequestTopicPartition {
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch = partition, sp.epoch
	rp.FetchOffset, rp.LogStartOffset, rp.PartitionMaxBytes = sp.fetchOffset, sp.logStart, sp.maxBytes
	rp.LastFetchedEpoch = sp.lastFetchedEpoch
	return rp
}

// roundPart is one partition of a fetcher's round: wanted when it is
// fetched this round, with its fetch state want. sent and inSent mirror
// its entry in the session's sent map as of the session's sentGen.
type roundPart struct {
	tp     storage.TopicPartition
	fp     fetchPart
	wanted bool
	want   sentPartition

	sentGen uint64
	inSent  bool
	sent    sentPartition
}

// reset makes the next request full.
func (s *followerSession) reset() {
	s.epoch = 0
	clear(s.sent)
	s.gen++
}

// resend makes the next request carry tp again with its state read afresh:
// after a truncation that may have dropped the log's latest epoch without
// moving its offsets (an epoch that started at the log end).
func (s *followerSession) resend(tp storage.TopicPartition) {
	if _, ok := s.sent[tp]; ok {
		delete(s.sent, tp)
		s.gen++
	}
}

// cached brings rp's copy of its sent entry up to date.
func (s *followerSession) cached(rp *roundPart) {
	if rp.sentGen != s.gen {
		rp.sent, rp.inSent = s.sent[rp.tp]
		rp.sentGen = s.gen
	}
}

// fill sets req's session fields and topics for the wanted partitions of
// parts, each partition at most once. req.Version must be set; below v7
// (no sessions) every wanted partition goes, session-less.
func (s *followerSession) fill(req *kmsg.FetchRequest, parts []roundPart) {
	var b fetchRequestBuilder
	if req.Version < 7 {
		req.SessionID, req.SessionEpoch = 0, -1
		for i := range parts {
			if parts[i].wanted {
				b.add(req, parts[i].tp, parts[i].want)
			}
		}
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
		s.reset()
	}
	if s.sent == nil {
		s.sent = map[storage.TopicPartition]sentPartition{}
	}
	inSent := 0
	for i := range parts {
		rp := &parts[i]
		s.cached(rp)
		switch {
		case !rp.wanted:
			if rp.inSent {
				b.forget(req, rp.tp, rp.sent.topicID)
				delete(s.sent, rp.tp)
				rp.inSent = false
			}
			continue
		case !rp.inSent || rp.sent != rp.want:
			b.add(req, rp.tp, rp.want)
			s.sent[rp.tp] = rp.want
			rp.sent, rp.inSent = rp.want, true
		}
		inSent++
	}
	if len(s.sent) == inSent {
		return
	}
	// sent holds partitions no longer in parts at all.
	in := make(map[storage.TopicPartition]bool, len(parts))
	for i := range parts {
		in[parts[i].tp] = true
	}
	for tp, old := range s.sent {
		if !in[tp] {
			b.forget(req, tp, old.topicID)
			delete(s.sent, tp)
		}
	}
}

// fetchRequestBuilder adds partitions and forgotten partitions to a Fetch,
// each topic's together.
type fetchRequestBuilder struct {
	topics, forgotten map[string]int
}

func (b *fetchRequestBuilder) add(req *kmsg.FetchRequest, tp storage.TopicPartition, sp sentPartition) {
	i, isNew := topicIndex(&b.topics, tp.Topic, len(req.Topics))
	if isNew {
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = tp.Topic, sp.topicID
		req.Topics = append(req.Topics, t)
	}
	req.Topics[i].Partitions = append(req.Topics[i].Partitions, sp.request(tp.Partition))
}

func (b *fetchRequestBuilder) forget(req *kmsg.FetchRequest, tp storage.TopicPartition, topicID [16]byte) {
	i, isNew := topicIndex(&b.forgotten, tp.Topic, len(req.ForgottenTopics))
	if isNew {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID = tp.Topic, topicID
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
}

// topicIndex is topic's index in a list of n topics indexed by *at; isNew:
// it was not listed and gets index n (the caller appends it).
func topicIndex(at *map[string]int, topic string, n int) (i int, isNew bool) {
	if *at == nil {
		*at = map[string]int{}
	}
	if i, ok := (*at)[topic]; ok {
		return i, false
	}
	(*at)[topic] = n
	return n, true
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
