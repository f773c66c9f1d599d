package replica

// Incremental fetch sessions (KIP-227) for consumer Fetch v7+.
//
// A request's (SessionID, SessionEpoch) picks one of:
//   - epoch -1 (FINAL): session-less; a session it names is closed.
//   - epoch 0 (INITIAL): full request; a session it names is closed and a new
//     one is created holding every requested partition. The full response
//     carries the new SessionID (0 when the cache has no room for it).
//   - epoch > 0 (incremental): SessionID must name a cached session
//     (FETCH_SESSION_ID_NOT_FOUND) whose expected epoch it carries
//     (INVALID_FETCH_SESSION_EPOCH). The partitions listed are added or
//     updated, ForgottenTopics removed, then every session partition is read
//     (a follower's: only those that may have news, fetch_replica.go) and
//     the response holds only those with news: records, an error, or a
//     high watermark, last stable offset or log start offset that differs
//     from the one last sent. Partitions that returned records move to the
//     end of the session's order so the byte limits rotate fairly. A session
//     left with no partitions is closed and answered session-less.
//
// Sessions are keyed by topic id from v13 and by name before; a session is
// used only with the kind of request that created it
// (FETCH_SESSION_TOPIC_ID_ERROR otherwise).
//
// The cache holds max.incremental.fetch.session.cache.slots sessions (0
// disables sessions). When it is full a new session may evict, as Kafka's
// FetchSessionCache does (less the privileged follower rule):
//  1. the least recently used session, if idle for fetchSessionEvictionAge;
//  2. else the smallest session (least recently used among equals) created
//     more than fetchSessionEvictionAge ago, if the new one is at least as big.
//
// Otherwise no session is created and the client keeps sending full requests.
// Sessions live in memory only: they are dropped on eviction and at Close.

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSessionEvictionAge is Kafka's fixed fetch session eviction time (2 minutes).
const fetchSessionEvictionAge = 2 * time.Minute

// fsKey names a session partition: by topic id (v13+) or by name.
type fsKey struct {
	topic     string
	id        [16]byte
	partition int32
}

// fsPartition is one session partition: the last fetch parameters the client
// sent and the offsets last answered.
type fsPartition struct {
	key   fsKey
	topic string
	id    [16]byte
	req   kmsg.FetchRequestTopicPartition

	hw, lso, logStart int64
	// moved marks, during filterIncremental, a partition that returned
	// records.
	moved bool

	// A follower's session is read narrowed (fetch_replica.go): part is
	// the partition as last resolved (nil: not yet, or unknown), visited
	// when it was last read, and inRound marks, while a request of the
	// session is served, a partition that request reads.
	part    *Partition
	visited time.Time
	inRound bool
}

type fetchSession struct {
	id      int32
	epoch   int32 // the epoch the next incremental request must carry
	usesIDs bool
	parts   map[fsKey]*fsPartition
	// order is every partition of parts once, in the order they are read.
	order   []*fsPartition
	created time.Time
	used    time.Time

	// busy is set (under the cache's mu) while a request reads from
	// reqTopics; reqTopics and reqAt are the expanded request's lists,
	// kept for the session's next request so that a follower's session
	// of thousands of partitions does not allocate them every round. A
	// second request of the same session while one is served (a client
	// racing itself) gets lists of its own.
	busy      bool
	reqTopics []kmsg.FetchRequestTopic
	reqAt     map[fsKey]int
	// round lists the partitions marked inRound by the request served
	// (narrowed requests only).
	round []*fsPartition
}

// fetchSessionCache is the broker's session cache. Its methods take the time
// explicitly so tests can drive it with a fake clock.
type fetchSessionCache struct {
	mu       sync.Mutex
	slots    int
	sessions map[int32]*fetchSession
	newID    func() int32
}

func newFetchSessionCache(slots int) *fetchSessionCache {
	return &fetchSessionCache{
		slots:    slots,
		sessions: map[int32]*fetchSession{},
		newID:    func() int32 { return rand.Int32N(math.MaxInt32-1) + 1 },
	}
}

// fetchCtx is how one Fetch is served: req is what to read; sess the
// session to create (full) or filter against (incremental).
type fetchCtx struct {
	req         *kmsg.FetchRequest
	create      bool
	sess        *fetchSession
	incremental bool
	// reused: req's lists are sess's own; finish hands them back.
	reused bool
	// visit, when not nil, narrows req to the session partitions the
	// request lists and those visit picks (fetchSessionCache.narrow).
	visit func(*fsPartition, time.Time) bool
}

func nextFetchEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

func fsKeyOf(usesIDs bool, topic string, id [16]byte, p int32) fsKey {
	if usesIDs {
		return fsKey{id: id, partition: p}
	}
	return fsKey{topic: topic, partition: p}
}

// begin resolves a request's session fields. A non-zero error code is the
// top-level answer (with SessionID 0 and no topics). With visit (not nil)
// an incremental request reads only the partitions it lists and those
// visit picks, unless another request of the session is being served.
func (c *fetchSessionCache) begin(now time.Time, req *kmsg.FetchRequest, visit func(*fsPartition, time.Time) bool) (fetchCtx, int16) {
	if req.Version < 7 {
		return fetchCtx{req: req}, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case req.SessionEpoch == -1:
		c.removeLocked(req.SessionID)
		return fetchCtx{req: req}, 0
	case req.SessionEpoch == 0:
		c.removeLocked(req.SessionID)
		return fetchCtx{req: req, create: c.slots > 0}, 0
	}
	s := c.sessions[req.SessionID]
	if s == nil {
		return fetchCtx{}, kerr.FetchSessionIDNotFound.Code
	}
	if s.epoch != req.SessionEpoch {
		return fetchCtx{}, kerr.InvalidFetchSessionEpoch.Code
	}
	if s.usesIDs != (req.Version >= 13) {
		return fetchCtx{}, kerr.FetchSessionTopicIDError.Code
	}
	reuse := !s.busy
	if !reuse {
		visit = nil
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := fsKeyOf(s.usesIDs, rt.Topic, rt.TopicID, rp.Partition)
			p := s.parts[k]
			if p != nil {
				p.req = rp
			} else {
				p = &fsPartition{key: k, topic: rt.Topic, id: rt.TopicID, req: rp, hw: -1, lso: -1, logStart: -1}
				s.parts[k] = p
				s.order = append(s.order, p)
			}
			if visit != nil && !p.inRound {
				p.inRound = true
				s.round = append(s.round, p)
			}
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			delete(s.parts, fsKeyOf(s.usesIDs, ft.Topic, ft.TopicID, p))
		}
	}
	if len(s.parts) < len(s.order) {
		kept := s.order[:0]
		for _, p := range s.order {
			if s.parts[p.key] == p {
				kept = append(kept, p)
			}
		}
		clear(s.order[len(kept):])
		s.order = kept
	}
	if len(s.parts) == 0 {
		// Nothing left to fetch: close the session, answer session-less.
		s.endRound()
		c.removeLocked(s.id)
		empty := *req
		empty.Topics = nil
		return fetchCtx{req: &empty}, 0
	}
	s.used = now
	s.epoch = nextFetchEpoch(s.epoch)
	s.busy = true
	fc := fetchCtx{sess: s, incremental: true, reused: reuse, visit: visit}
	if visit != nil {
		fc.req = s.narrowLocked(now, req, visit)
	} else {
		fc.req = sessionRequest(req, s, reuse, false)
	}
	return fc, 0
}

// narrow rebuilds fc's request of a narrowed session with the partitions
// visit picks now added (a parked fetch woken by a change).
func (c *fetchSessionCache) narrow(now time.Time, fc *fetchCtx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fc.req = fc.sess.narrowLocked(now, fc.req, fc.visit)
}

// narrowLocked marks inRound every partition of s that visit picks and
// returns req with the marked partitions as its topics, in session order
// (in the session's own lists: the caller holds busy).
func (s *fetchSession) narrowLocked(now time.Time, req *kmsg.FetchRequest, visit func(*fsPartition, time.Time) bool) *kmsg.FetchRequest {
	for _, p := range s.order {
		if !p.inRound && visit(p, now) {
			p.inRound = true
			s.round = append(s.round, p)
		}
	}
	for _, p := range s.round {
		p.visited = now
	}
	return sessionRequest(req, s, true, true)
}

// endRound clears the marks of the request served.
func (s *fetchSession) endRound() {
	for _, p := range s.round {
		p.inRound = false
	}
	clear(s.round)
	s.round = s.round[:0]
}

// sessionRequest is req with its topics replaced by every session partition
// (narrowed: every one marked inRound), in session order, each topic's
// partitions kept together. With reuse the lists are built in the
// session's own from the last request (the caller holds busy for them
// until finish).
func sessionRequest(req *kmsg.FetchRequest, s *fetchSession, reuse, narrowed bool) *kmsg.FetchRequest {
	out := *req
	var topics []kmsg.FetchRequestTopic
	var at map[fsKey]int // topic key (partition 0) -> index in topics
	if reuse {
		topics, at = s.reqTopics[:0], reuseMap(&s.reqAt)
	} else {
		at = map[fsKey]int{}
	}
	for _, p := range s.order {
		if narrowed && !p.inRound {
			continue
		}
		tk := fsKey{topic: p.key.topic, id: p.key.id}
		i, ok := at[tk]
		if !ok {
			i = len(topics)
			at[tk] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.topic, p.id
			if i < cap(topics) {
				rt.Partitions = topics[:i+1][i].Partitions[:0] // the last request's list
			}
			topics = append(topics, rt)
		}
		topics[i].Partitions = append(topics[i].Partitions, p.req)
	}
	if reuse {
		s.reqTopics = topics
	}
	out.Topics = topics
	return &out
}

// finish completes a response: it creates the session of a full request
// (the response carries its id), or filters an incremental response down to
// the partitions with news and records what was sent.
func (c *fetchSessionCache) finish(now time.Time, fc fetchCtx, resp *kmsg.FetchResponse) {
	switch {
	case fc.create:
		resp.SessionID = c.create(now, fc.req, resp)
	case fc.incremental:
		c.mu.Lock()
		filterIncremental(fc.sess, resp)
		if fc.reused {
			fc.sess.busy = false
			fc.sess.endRound()
		}
		c.mu.Unlock()
		resp.SessionID = fc.sess.id
	}
}

// create adds a session for a full request and its response; 0 if there is no room.
func (c *fetchSessionCache) create(now time.Time, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) int32 {
	usesIDs := req.Version >= 13
	s := &fetchSession{epoch: 1, usesIDs: usesIDs, parts: map[fsKey]*fsPartition{}, created: now, used: now}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := fsKeyOf(usesIDs, rt.Topic, rt.TopicID, rp.Partition)
			if p := s.parts[k]; p != nil {
				p.req = rp // listed twice: the last one counts
				continue
			}
			p := &fsPartition{key: k, topic: rt.Topic, id: rt.TopicID, req: rp, hw: -1, lso: -1, logStart: -1}
			s.parts[k] = p
			s.order = append(s.order, p)
		}
	}
	if len(s.parts) == 0 {
		return 0
	}
	eachResponsePartition(s, resp, func(p *fsPartition, rp *kmsg.FetchResponseTopicPartition) bool {
		p.record(rp)
		return true
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots <= 0 || len(c.sessions) >= c.slots && !c.evictLocked(now, len(s.parts)) {
		return 0
	}
	for {
		s.id = c.newID()
		if s.id > 0 && c.sessions[s.id] == nil {
			break
		}
	}
	c.sessions[s.id] = s
	return s.id
}

// evictLocked makes room for a session of size partitions (rules in the file comment).
func (c *fetchSessionCache) evictLocked(now time.Time, size int) bool {
	var lru, small *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.used.Before(lru.used) {
			lru = s
		}
		if now.Sub(s.created) <= fetchSessionEvictionAge {
			continue
		}
		if small == nil || len(s.parts) < len(small.parts) || len(s.parts) == len(small.parts) && s.used.Before(small.used) {
			small = s
		}
	}
	switch {
	case lru != nil && now.Sub(lru.used) > fetchSessionEvictionAge:
		delete(c.sessions, lru.id)
	case small != nil && size >= len(small.parts):
		delete(c.sessions, small.id)
	default:
		return false
	}
	return true
}

func (c *fetchSessionCache) removeLocked(id int32) {
	if id != 0 {
		delete(c.sessions, id)
	}
}

// clear drops every session (broker shutdown).
func (c *fetchSessionCache) clear() {
	c.mu.Lock()
	c.sessions = map[int32]*fetchSession{}
	c.mu.Unlock()
}

func (c *fetchSessionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// sessionPartitions returns how many partitions session id holds (-1: no such session).
func (c *fetchSessionCache) sessionPartitions(id int32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[id]; ok {
		return len(s.parts)
	}
	return -1
}

// record notes what a response told the client about p. After an error
// the high watermark is forgotten so the partition is sent again once the
// error clears.
func (p *fsPartition) record(rp *kmsg.FetchResponseTopicPartition) {
	p.hw, p.lso, p.logStart = rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset
	if rp.ErrorCode != 0 {
		p.hw = -1
	}
}

// eachResponsePartition calls fn with each response partition and its
// session partition; fn returning false drops the partition from resp, and
// topics left empty are dropped too.
func eachResponsePartition(s *fetchSession, resp *kmsg.FetchResponse, fn func(*fsPartition, *kmsg.FetchResponseTopicPartition) bool) {
	topics := resp.Topics[:0]
	for _, rt := range resp.Topics {
		parts := rt.Partitions[:0]
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			p := s.parts[fsKeyOf(s.usesIDs, rt.Topic, rt.TopicID, rp.Partition)]
			if p == nil || fn(p, rp) {
				parts = append(parts, *rp)
			}
		}
		rt.Partitions = parts
		if len(parts) > 0 {
			topics = append(topics, rt)
		}
	}
	resp.Topics = topics
}

// filterIncremental keeps the partitions with news (records, error, or
// changed HW / LSO / log start offset), records what they carried, and
// moves those that returned records to the end of the session order.
func filterIncremental(s *fetchSession, resp *kmsg.FetchResponse) {
	var moved []*fsPartition
	eachResponsePartition(s, resp, func(p *fsPartition, rp *kmsg.FetchResponseTopicPartition) bool {
		news := rp.ErrorCode != 0 || len(rp.RecordBatches) > 0 ||
			rp.HighWatermark != p.hw || rp.LastStableOffset != p.lso || rp.LogStartOffset != p.logStart
		if !news {
			return false
		}
		p.record(rp)
		if len(rp.RecordBatches) > 0 && !p.moved {
			p.moved = true
			moved = append(moved, p)
		}
		return true
	})
	if len(moved) == 0 {
		return
	}
	// In place: the partitions that did not move keep their order, the
	// moved ones follow in the order they were answered.
	kept := 0
	for _, p := range s.order {
		if !p.moved {
			s.order[kept] = p
			kept++
		}
	}
	copy(s.order[kept:], moved)
	for _, p := range moved {
		p.moved = false
	}
}
