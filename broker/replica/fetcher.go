package replica

// Replica fetchers, as Kafka's ReplicaFetcherThread: num.replica.fetchers
// goroutines per leader broker, each owned by the Manager (started by the
// first MakeFollower that needs it, stopped when MakeLeader, StopReplica or
// another leader takes its last partition, and by Stop). A fetcher speaks
// kmsg over one TCP connection to its leader's inter-broker endpoint
// (protocol/kconn), and for each partition:
//
//   - after a new leader epoch, makes sure its log does not diverge from
//     the leader's: with Fetch v12+ (every inter.broker.protocol.version
//     kbroker accepts) and an epoch in the log, in the fetch itself, whose
//     LastFetchedEpoch the leader checks and answers a DivergingEpoch to
//     cut at (KIP-320, as Kafka's followers since 2.7); otherwise by
//     truncating first: OffsetForLeaderEpoch for the log's latest epoch
//     (also after an out-of-range answer above the leader's log start, or
//     batches that do not continue the log). Either way
//     isr.Truncate says where (KIP-101, KIP-279: never to the HW alone; an
//     epoch the leader answers with that this log has differently is asked
//     again);
//   - then fetches with its replica id from its log end offset, all its
//     partitions in one Fetch (replica.fetch.max.bytes each,
//     replica.fetch.response.max.bytes in all, replica.fetch.wait.max.ms)
//     in an incremental fetch session (fetcher_session.go: after the first,
//     a Fetch lists only the partitions whose fetch state changed), appends
//     what comes (Partition.appendAsFollower) and moves its HW to
//     min(leader HW, LEO);
//   - on OFFSET_OUT_OF_RANGE below the leader's log start, empties the log
//     and restarts it there; otherwise truncates again;
//   - on a fenced or unknown epoch or NOT_LEADER_OR_FOLLOWER, backs off
//     (replica.fetch.backoff.ms) until the controller's next LeaderAndIsr.

import (
	"context"
	"crypto/tls"
	"errors"
	"hash/fnv"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/replica/isr"
	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connOptions are the inter-broker connection settings, with the
// fetcher's client id and a response bound: the fetch asks for at most
// replica.fetch.response.max.bytes of records plus the first batch whole,
// so a size prefix above 256 MiB means a corrupt stream.
func (f *fetcher) connOptions() kconn.Options {
	o := f.cfg.Conn
	o.ClientID, o.MaxResponse = f.cfg.ClientID, 256<<20
	return o
}

// fetcherKey names one fetcher: its leader broker and its index below
// num.replica.fetchers.
type fetcherKey struct {
	leader int32
	index  int
}

// fetchPart is one partition a fetcher copies.
type fetchPart struct {
	p       *Partition
	topicID [16]byte
	// epoch is the leader epoch this follower state is for; work for an
	// older one is dropped.
	epoch int32
	// truncating: OffsetForLeaderEpoch must run before the next fetch
	// (a log without an epoch, Fetch below v12, or an answer the fetch
	// cannot settle: out of range, batches that do not continue the log).
	truncating bool
	// askEpoch is the epoch the next OffsetForLeaderEpoch asks for; -1 is
	// the log's latest (KIP-279 asks again for an older one).
	askEpoch int32
	// retryAt delays the partition after an error.
	retryAt time.Time
	// misaligned marks a partition whose last fetched batches did not
	// continue its log (storage.ErrUnexpectedAppendOffset) and which has
	// appended nothing since: a second time in a row it backs off.
	misaligned bool
}

// fetcher is one replica fetcher goroutine and its partitions.
type fetcher struct {
	m      *Manager
	key    fetcherKey
	self   int32
	cfg    ReplicationConfig
	addr   func(int32) (string, bool)
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu    sync.Mutex
	parts map[storage.TopicPartition]*fetchPart
	// gen changes with every change to parts or to a partition's state.
	gen uint64

	// sess is the incremental fetch session with the leader; only the run
	// goroutine touches it.
	sess followerSession

	// round is the run goroutine's copy of parts, taken again only when
	// gen moved: a fetcher copying thousands of partitions rebuilt maps of
	// all of them several times a round, round after round under a
	// producer. idx finds a partition in parts, names a topic's name by
	// its id. Only the run goroutine touches it.
	round struct {
		gen   uint64
		parts []roundPart
		idx   map[storage.TopicPartition]int
		names map[[16]byte]string
	}

	// fetchBuf holds the last Fetch answer's bytes, reused by the next
	// (kconn.RoundTripReuse); only the run goroutine touches it, and
	// fetch is done with an answer (its batches are in the logs) before
	// it sends the next request.
	fetchBuf []byte
}

// fetcherIndex spreads partitions over num.replica.fetchers.
func fetcherIndex(tp storage.TopicPartition, n int) int {
	h := fnv.New32a()
	h.Write([]byte(tp.Topic))
	return int((h.Sum32()*31 + uint32(tp.Partition)) % uint32(n))
}

// addFollower makes the fetcher of leader copy p at epoch (truncating
// first when truncate is set, or when it was not copying p at that epoch),
// taking p away from any other fetcher.
func (m *Manager) addFollower(p *Partition, topicID [16]byte, leader, epoch int32, truncate bool) {
	c := m.cluster()
	tp := tpOf(p)
	m.repl.mu.Lock()
	if m.repl.mu.stopped || m.repl.mu.noFollow {
		m.repl.mu.Unlock()
		return
	}
	key := fetcherKey{leader: leader, index: fetcherIndex(tp, c.cfg.NumFetchers)}
	var idle []*fetcher
	for k, f := range m.repl.mu.fetchers {
		if k != key && f.remove(tp) {
			delete(m.repl.mu.fetchers, k)
			idle = append(idle, f)
		}
	}
	f := m.repl.mu.fetchers[key]
	if f == nil {
		f = m.newFetcher(c, key)
		m.repl.mu.fetchers[key] = f
		if m.repl.manualFetch {
			close(f.done) // tests step it themselves
		} else {
			m.repl.wg.Add(1)
			go f.run()
		}
	}
	f.set(tp, p, topicID, epoch, truncate)
	m.repl.mu.Unlock()
	for _, f := range idle {
		f.shutdown()
	}
}

// removeFollower stops copying p; a fetcher left without partitions stops.
// The caller must not hold p.mu (the fetcher may wait for it).
func (m *Manager) removeFollower(p *Partition) {
	if m.cluster() == nil {
		return
	}
	tp := tpOf(p)
	m.repl.mu.Lock()
	var idle []*fetcher
	for k, f := range m.repl.mu.fetchers {
		if f.remove(tp) {
			delete(m.repl.mu.fetchers, k)
			idle = append(idle, f)
		}
	}
	m.repl.mu.Unlock()
	for _, f := range idle {
		f.shutdown()
	}
}

func (m *Manager) newFetcher(c *clusterState, key fetcherKey) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &fetcher{m: m, key: key, self: c.self, cfg: c.cfg, addr: c.leaderAddr, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1), parts: map[storage.TopicPartition]*fetchPart{}}
}

// set adds or updates a partition.
func (f *fetcher) set(tp storage.TopicPartition, p *Partition, topicID [16]byte, epoch int32, truncate bool) {
	f.mu.Lock()
	old := f.parts[tp]
	if old == nil || old.p != p || old.epoch != epoch || truncate {
		// With Fetch v12+ a log that has an epoch is checked by the
		// leader in the fetch itself (LastFetchedEpoch), as Kafka's
		// followers do since 2.7: no OffsetForLeaderEpoch round.
		onFetch := f.m.cfg.Cluster.IBP.FetchVersion() >= 12 && p.Log.LatestEpoch() >= 0
		f.parts[tp] = &fetchPart{p: p, topicID: topicID, epoch: epoch, truncating: !onFetch, askEpoch: -1}
		f.gen++
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// remove drops a partition; it reports whether the fetcher is now idle.
func (f *fetcher) remove(tp storage.TopicPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.parts[tp]; !ok {
		return false
	}
	delete(f.parts, tp)
	f.gen++
	return len(f.parts) == 0
}

// shutdown stops the goroutine and waits for it.
func (f *fetcher) shutdown() {
	f.cancel()
	<-f.done
}

// snapshot returns the partitions and their states as of now, in the run
// goroutine's f.round.parts (valid until the next call), with none wanted.
func (f *fetcher) snapshot() []roundPart {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := &f.round
	if r.parts != nil && r.gen == f.gen {
		return r.parts
	}
	r.gen = f.gen
	clear(r.parts)
	r.parts = r.parts[:0]
	idx, names := reuseMap(&r.idx), reuseMap(&r.names)
	for tp, fp := range f.parts {
		idx[tp] = len(r.parts)
		names[fp.topicID] = tp.Topic
		r.parts = append(r.parts, roundPart{tp: tp, fp: *fp})
	}
	return r.parts
}

// truncating returns the partitions of parts that must truncate first.
func truncating(parts []roundPart) map[storage.TopicPartition]fetchPart {
	var out map[storage.TopicPartition]fetchPart
	for i := range parts {
		if parts[i].fp.truncating {
			if out == nil {
				out = map[storage.TopicPartition]fetchPart{}
			}
			out[parts[i].tp] = parts[i].fp
		}
	}
	return out
}

// reuseMap empties *m, making it first, and returns it: the map keeps its
// buckets, so refilling it to its former size allocates nothing.
func reuseMap[K comparable, V any](m *map[K]V) map[K]V {
	if *m == nil {
		*m = map[K]V{}
	} else {
		clear(*m)
	}
	return *m
}

// update changes a partition's state if it is still at epoch.
func (f *fetcher) update(tp storage.TopicPartition, epoch int32, fn func(*fetchPart)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fp := f.parts[tp]; fp != nil && fp.epoch == epoch {
		fn(fp)
		f.gen++
	}
}

// backoff delays a partition after an error.
func (f *fetcher) backoff(tp storage.TopicPartition, epoch int32) {
	at := time.Now().Add(f.cfg.FetchBackoff)
	f.update(tp, epoch, func(fp *fetchPart) { fp.retryAt = at })
}

// sleep waits d, a wake-up or the end; it reports false at the end.
func (f *fetcher) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.ctx.Done():
		return false
	case <-f.wake:
	case <-t.C:
	}
	return true
}

func (f *fetcher) run() {
	defer f.m.repl.wg.Done()
	defer close(f.done)
	var conn *kconn.Conn
	lastDialErr := "" // the authentication error last logged
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for f.ctx.Err() == nil {
		parts := f.snapshot()
		now := time.Now()
		next := time.Duration(-1)
		trunc, fetch := false, false
		for i := range parts {
			rp := &parts[i]
			rp.wanted = false
			if wait := rp.fp.retryAt.Sub(now); wait > 0 {
				if next < 0 || wait < next {
					next = wait
				}
				continue
			}
			if rp.fp.truncating {
				trunc = true
			} else {
				rp.wanted, fetch = true, true
			}
		}
		if !trunc && !fetch {
			if next < 0 {
				next = time.Hour // idle until a partition arrives
			}
			if !f.sleep(next) {
				return
			}
			continue
		}
		if conn == nil {
			addr, ok := f.addr(f.key.leader)
			var err error
			if ok {
				if conn, err = kconn.Dial(f.ctx, addr, f.connOptions()); err == nil {
					lastDialErr = ""
				}
			}
			if !ok || err != nil {
				// A refused handshake or login is a configuration error
				// the operator must see (once per distinct error); a
				// leader that is down is routine.
				var cerr *tls.CertificateVerificationError
				if errors.Is(err, kconn.ErrAuthentication) || errors.As(err, &cerr) {
					if msg := err.Error(); msg != lastDialErr {
						f.m.log.Warn("replica fetcher cannot authenticate to its leader", "leader", f.key.leader, "addr", addr, "err", err)
						lastDialErr = msg
					}
				} else {
					f.m.log.Debug("replica fetcher cannot reach its leader", "leader", f.key.leader, "addr", addr, "err", err)
				}
				conn = nil
				if !f.sleep(f.cfg.FetchBackoff) {
					return
				}
				continue
			}
		}
		var err error
		if trunc {
			err = f.truncate(conn, truncating(parts))
		} else {
			err = f.fetch(conn, parts)
		}
		if err != nil {
			if f.ctx.Err() != nil {
				return
			}
			f.m.log.Info("replica fetch failed; reconnecting", "leader", f.key.leader, "err", err)
			conn.Close()
			conn = nil
			if !f.sleep(f.cfg.FetchBackoff) {
				return
			}
		}
	}
}

// requestTimeout bounds one request to the leader beyond its own wait.
const requestTimeout = 30 * time.Second

// truncate runs one OffsetForLeaderEpoch round for parts and truncates
// each log as isr.Truncate decides.
func (f *fetcher) truncate(conn *kconn.Conn, parts map[storage.TopicPartition]fetchPart) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = f.m.cfg.Cluster.IBP.OffsetForLeaderEpochVersion()
	req.ReplicaID = f.self
	byTopic := map[string]int{}
	asked := map[storage.TopicPartition]bool{}
	for tp, fp := range parts {
		ask := fp.askEpoch
		if ask < 0 {
			ask = fp.p.Log.LatestEpoch()
		}
		if ask < 0 {
			// No epoch in this log (empty, or written before epochs):
			// nothing the leader could answer helps; keep below the HW.
			if err := fp.p.truncateAsFollower(fp.epoch, fp.p.HighWatermark()); err != nil && !errors.Is(err, errStaleFollower) {
				f.m.log.Error("follower truncation failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
				f.backoff(tp, fp.epoch)
				continue
			}
			f.update(tp, fp.epoch, func(x *fetchPart) { x.truncating, x.askEpoch = false, -1 })
			continue
		}
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tp.Partition, fp.epoch, ask
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		asked[tp] = true
	}
	if len(asked) == 0 {
		return nil
	}
	r, err := conn.RoundTrip(req, requestTimeout)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.OffsetForLeaderEpochResponse)
	answered := map[storage.TopicPartition]bool{}
	defer func() {
		for tp := range asked {
			if !answered[tp] {
				f.backoff(tp, parts[tp].epoch) // the leader left it out: do not spin
			}
		}
	}()
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			tp := storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			fp := parts[tp]
			if !asked[tp] || answered[tp] {
				continue
			}
			answered[tp] = true
			if rp.ErrorCode != 0 {
				f.m.log.Debug("OffsetForLeaderEpoch refused", "topic", tp.Topic, "partition", tp.Partition, "err", kerr.ErrorForCode(rp.ErrorCode))
				f.backoff(tp, fp.epoch)
				continue
			}
			f.applyTruncation(tp, fp, isr.EpochEnd{Epoch: rp.LeaderEpoch, EndOffset: rp.EndOffset})
		}
	}
	return nil
}

// applyTruncation truncates one log by the leader's answer.
func (f *fetcher) applyTruncation(tp storage.TopicPartition, fp fetchPart, leader isr.EpochEnd) {
	p := fp.p
	local := func(epoch int32) isr.EpochEnd {
		e, end := p.Log.EndOffsetForEpoch(epoch)
		return isr.EpochEnd{Epoch: e, EndOffset: end}
	}
	tr := isr.Truncate(leader, local, p.Log.LogEndOffset(), p.HighWatermark())
	if err := p.truncateAsFollower(fp.epoch, tr.Offset); err != nil {
		if !errors.Is(err, errStaleFollower) {
			f.m.log.Error("follower truncation failed", "topic", tp.Topic, "partition", tp.Partition, "offset", tr.Offset, "err", err)
			f.backoff(tp, fp.epoch)
		}
		return
	}
	f.update(tp, fp.epoch, func(x *fetchPart) {
		if tr.Done {
			x.truncating, x.askEpoch = false, -1
		} else {
			x.askEpoch = tr.Again
		}
	})
}

// fetch runs one Fetch for the wanted partitions of parts and applies the
// answer; parts are f.round.parts.
func (f *fetcher) fetch(conn *kconn.Conn, parts []roundPart) error {
	// The version inter.broker.protocol.version gives, as a Kafka
	// follower sends: a Kafka leader of a mixed cluster gets what its own
	// followers send. v15 moved the replica id into ReplicaState, with
	// the follower's registration epoch.
	req := kmsg.NewPtrFetchRequest()
	req.Version = f.m.cfg.Cluster.IBP.FetchVersion()
	lastEpochs := req.Version >= 12 // the version is lowered to 12 at most below
	for i := range parts {
		rp := &parts[i]
		if !rp.wanted {
			continue
		}
		if rp.fp.topicID == ([16]byte{}) {
			req.Version = min(req.Version, 12) // names, not topic ids
		}
		rp.want = sentPartition{topicID: rp.fp.topicID, epoch: rp.fp.epoch, fetchOffset: rp.fp.p.Log.LogEndOffset(),
			logStart: rp.fp.p.Log.LogStartOffset(), maxBytes: f.cfg.FetchMaxBytes, lastFetchedEpoch: -1}
		if lastEpochs {
			// The log's latest epoch (a read lock) only when the
			// partition's offsets moved since the session last had
			// them (sentPartition: otherwise the epoch moves only
			// with a DivergingEpoch's truncation, which resends).
			f.sess.cached(rp)
			if rp.inSent && rp.sent.sameButEpoch(rp.want) {
				rp.want.lastFetchedEpoch = rp.sent.lastFetchedEpoch
			} else {
				rp.want.lastFetchedEpoch = rp.fp.p.Log.LatestEpoch()
			}
		}
	}
	req.ReplicaID = f.self
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.self, -1
	if f.cfg.BrokerEpoch != nil {
		req.ReplicaState.Epoch = f.cfg.BrokerEpoch()
	}
	req.MaxWaitMillis = int32(f.cfg.FetchWaitMax / time.Millisecond)
	req.MinBytes = f.cfg.FetchMinBytes
	req.MaxBytes = f.cfg.FetchResponseMaxBytes
	f.sess.fill(req, parts) // fetcher_session.go: only what changed, once a session is open
	r, err := conn.RoundTripReuse(req, f.cfg.FetchWaitMax+requestTimeout, &f.fetchBuf)
	if err != nil {
		f.sess.answered(nil, err)
		return err
	}
	resp := r.(*kmsg.FetchResponse)
	f.sess.answered(resp, nil)
	if resp.ErrorCode != 0 {
		err := kerr.ErrorForCode(resp.ErrorCode)
		if errors.Is(err, kerr.FetchSessionIDNotFound) || errors.Is(err, kerr.InvalidFetchSessionEpoch) || errors.Is(err, kerr.FetchSessionTopicIDError) {
			// The leader lost or refused the session (restart, eviction):
			// the next round sends a full request and opens another.
			f.m.log.Debug("replica fetch session reset", "leader", f.key.leader, "err", err)
			return nil
		}
		return err
	}
	for _, rt := range resp.Topics {
		topic := rt.Topic
		if req.Version >= 13 {
			topic = f.round.names[rt.TopicID]
		}
		for _, p := range rt.Partitions {
			tp := storage.TopicPartition{Topic: topic, Partition: p.Partition}
			i, ok := f.round.idx[tp]
			if !ok || !parts[i].wanted {
				continue
			}
			f.applyFetched(tp, parts[i].fp, parts[i].want.fetchOffset, &p)
		}
	}
	return nil
}

// applyFetched applies one partition of a Fetch answer.
func (f *fetcher) applyFetched(tp storage.TopicPartition, fp fetchPart, fetchOffset int64, rp *kmsg.FetchResponseTopicPartition) {
	p := fp.p
	switch kerrv := kerr.ErrorForCode(rp.ErrorCode); {
	case kerrv == nil && rp.DivergingEpoch.Epoch >= 0:
		// The leader's log differs from ours before our fetch offset
		// (KIP-320's truncation on fetch): cut ours where it says; the
		// next fetch carries the log's new latest epoch, and the
		// leader answers again if that one diverges too.
		leo, latest := p.Log.LogEndOffset(), p.Log.LatestEpoch()
		f.applyTruncation(tp, fp, isr.EpochEnd{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset})
		f.sess.resend(tp) // its latest epoch may have moved alone
		if p.Log.LogEndOffset() == leo && p.Log.LatestEpoch() == latest {
			// Nothing was cut (no record, no epoch that started at
			// the end): the same fetch would get the same answer.
			f.m.log.Warn("leader answered a diverging epoch the follower log cannot cut to", "topic", tp.Topic, "partition", tp.Partition,
				"diverging_epoch", rp.DivergingEpoch.Epoch, "end_offset", rp.DivergingEpoch.EndOffset, "log_end_offset", leo)
			f.backoff(tp, fp.epoch)
		}
	case kerrv == nil:
		_, err := p.appendAsFollower(fp.epoch, rp.RecordBatches, rp.HighWatermark)
		switch {
		case errors.Is(err, errStaleFollower):
			// The role changed; the LeaderAndIsr handling removes or
			// replaces this partition shortly.
			f.backoff(tp, fp.epoch)
			return
		case errors.Is(err, storage.ErrUnexpectedAppendOffset):
			// Once, a truncation that cut inside a leader's batch
			// explains it and truncating again settles it; twice in a
			// row, the logs disagree and retrying at once would spin
			// (Kafka stops fetching the partition until its next
			// LeaderAndIsr): again after replica.fetch.backoff.ms.
			f.m.log.Warn("leader's batches do not continue the follower log; truncating again", "topic", tp.Topic, "partition", tp.Partition,
				"again", fp.misaligned, "err", err)
			var at time.Time
			if fp.misaligned {
				at = time.Now().Add(f.cfg.FetchBackoff)
			}
			f.update(tp, fp.epoch, func(x *fetchPart) { x.truncating, x.askEpoch, x.misaligned, x.retryAt = true, -1, true, at })
			return
		case err != nil:
			f.m.log.Error("follower append failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			f.backoff(tp, fp.epoch)
			return
		}
		if rp.LogStartOffset >= 0 {
			p.raiseLogStart(fp.epoch, rp.LogStartOffset)
		}
		if fp.misaligned && len(rp.RecordBatches) > 0 {
			f.update(tp, fp.epoch, func(x *fetchPart) { x.misaligned = false })
		}
	case errors.Is(kerrv, kerr.OffsetOutOfRange):
		if rp.LogStartOffset >= 0 && fetchOffset < rp.LogStartOffset {
			if err := p.truncateFullyAsFollower(fp.epoch, rp.LogStartOffset); err != nil && !errors.Is(err, errStaleFollower) {
				f.m.log.Error("follower truncation failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
				f.backoff(tp, fp.epoch)
			}
			return
		}
		f.update(tp, fp.epoch, func(x *fetchPart) { x.truncating, x.askEpoch = true, -1 })
	default:
		f.m.log.Debug("replica fetch refused", "topic", tp.Topic, "partition", tp.Partition, "err", kerrv)
		f.backoff(tp, fp.epoch)
	}
}
