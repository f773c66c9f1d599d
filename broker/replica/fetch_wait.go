package replica

// The long-poll wait of a fetch, as Kafka's DelayedFetch in its purgatory:
// a parked fetch is a watcher on each partition it reads. Every change of
// such a partition that may complete it (an append or HW move: data; a
// role change, truncation or close: state) signals the watcher's one
// channel, so the fetch sleeps in a plain select on that channel, its
// deadline and shutdown, whatever the number of partitions. On a data
// wake-up it reads nothing: it adds up the bytes appended to its
// partitions since it parked (storage.Log.BytesAppended, an atomic per
// partition) and reads again only once they reach MinBytes. A state
// wake-up reads again, since the answer (an error) may have changed.
//
// The byte count is an estimate from above: it counts bytes appended but
// not yet below the HW and, for read_committed, below the LSO; bytes of a
// batch that begins before the fetch offset count too. So a fetch may
// answer before MinBytes are readable, never later than Kafka would.
//
// Bytes appended before the read that the read could not see (above the
// HW while followers catch up, or above the LSO while a transaction is
// open) are not in that count. So each read notes, per partition with such
// hidden bytes, the end it read to; when a wake-up finds that end moved (a
// follower's fetch advanced the HW, a marker or an abort moved the LSO,
// with no append to count) the fetch reads again, as Kafka's DelayedFetch
// adds up the bytes up to the new end.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchWatch is one parked fetch's wake-up.
type fetchWatch struct {
	// ch holds at most one pending signal: signals while one is pending
	// merge, and the fetch looks at everything when it wakes.
	ch chan struct{}
	// reread is set by a state change: the fetch must read again.
	reread atomic.Bool
}

func newFetchWatch() *fetchWatch { return &fetchWatch{ch: make(chan struct{}, 1)} }

// signal wakes the watcher without blocking.
func (w *fetchWatch) signal(state bool) {
	if state {
		w.reread.Store(true)
	}
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// watch adds w to p's watchers; on a closed partition it signals a state
// change at once.
func (p *Partition) watch(w *fetchWatch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		w.signal(true)
		return
	}
	if p.mu.watchers == nil {
		p.mu.watchers = map[*fetchWatch]struct{}{}
	}
	p.mu.watchers[w] = struct{}{}
}

// unwatch removes w from p's watchers.
func (p *Partition) unwatch(w *fetchWatch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.mu.watchers, w)
}

// signalWatchersLocked wakes every parked fetch on p and, for a change
// of a partition it leads or of a role, every parked narrowed follower
// fetch of the broker (a follower's own appends are news to no follower).
// p.mu must be held.
func (p *Partition) signalWatchersLocked(state bool) {
	for w := range p.mu.watchers {
		w.signal(state)
	}
	if p.env.parked != nil && (state || p.role.Load() == uint32(replLeader)) {
		p.env.parked.signal(state)
	}
}

// watchSet is a set of parked fetches woken together.
type watchSet struct {
	n  atomic.Int32 // len(ws), read without mu
	mu sync.Mutex
	ws map[*fetchWatch]struct{}
}

func (s *watchSet) add(w *fetchWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ws == nil {
		s.ws = map[*fetchWatch]struct{}{}
	}
	s.ws[w] = struct{}{}
	s.n.Store(int32(len(s.ws)))
}

func (s *watchSet) remove(w *fetchWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ws, w)
	s.n.Store(int32(len(s.ws)))
}

// signal wakes every fetch of the set.
func (s *watchSet) signal(state bool) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for w := range s.ws {
		w.signal(state)
	}
}

// run answers the fetch: at once if the first read has MinBytes or an
// error (or the deadline is already past, then without a second read),
// else at the first wake-up whose arrivals reach MinBytes, at a state
// change that ends it, at the deadline or at shutdown, reading again each
// time it answers.
func (d *delayedFetch) run(deadline time.Time) {
	m := d.m
	w := newFetchWatch()
	parts := m.fetchPartitions(d.req, d.unique)
	// Watch before reading, so an append between the read and the wait
	// is not missed.
	for _, p := range parts {
		p.watch(w)
	}
	defer func() {
		for _, p := range parts {
			p.unwatch(w)
		}
	}()
	minBytes := int64(d.req.MinBytes)
	ends := make([]int64, len(parts))
	read := func() bool {
		base := appendedTotal(parts)
		m.hiddenEnds(d.req, parts, ends)
		bytes, stop := m.fillFetch(d.req, d.resp, d.spl)
		d.have, d.base = int64(bytes), base
		return stop || d.have >= minBytes
	}
	m.park(w, deadline, read, func() bool {
		if w.reread.Swap(false) || m.endsMoved(d.req, parts, ends) {
			return read()
		}
		if d.have+appendedTotal(parts)-d.base >= minBytes {
			read()
			return true
		}
		return false
	})
}

// park answers a fetch: at once when read (which fills the answer) says
// so, else at the first wake-up of w that woken says ends it (reading
// itself when it must), or after a last read at the deadline or shutdown.
func (m *Manager) park(w *fetchWatch, deadline time.Time, read, woken func() bool) {
	if read() {
		return
	}
	left := deadline.Sub(m.now())
	if left <= 0 {
		return
	}
	timer := time.NewTimer(left)
	defer timer.Stop()
	for {
		select {
		case <-w.ch:
		case <-timer.C:
			read()
			return
		case <-m.closing:
			read()
			return
		}
		if woken() {
			return
		}
	}
}

// readEnd is where a read of p for req stops: the log end for a follower,
// the LSO for read_committed, else the HW.
func (m *Manager) readEnd(req *kmsg.FetchRequest, p *Partition) int64 {
	switch {
	case fetchReplicaID(req) >= 0 && m.cluster() != nil:
		return p.Log.LogEndOffset()
	case req.IsolationLevel == 1:
		return p.LastStableOffset()
	}
	return p.HighWatermark()
}

// hiddenEnds sets ends[i] to the read end of parts[i] if the log holds
// bytes beyond it (which a read now cannot see and later appends will not
// count), else to -1. It is called just before a read: the end it notes is
// at most the one the read uses.
func (m *Manager) hiddenEnds(req *kmsg.FetchRequest, parts []*Partition, ends []int64) {
	for i, p := range parts {
		ends[i] = -1
		if end := m.readEnd(req, p); p.Log.LogEndOffset() > end {
			ends[i] = end
		}
	}
}

// endsMoved reports whether a partition with hidden bytes at the last read
// has a different read end now: some of those bytes became readable.
func (m *Manager) endsMoved(req *kmsg.FetchRequest, parts []*Partition, ends []int64) bool {
	for i, p := range parts {
		if ends[i] >= 0 && m.readEnd(req, p) != ends[i] {
			return true
		}
	}
	return false
}

// appendedTotal sums BytesAppended over parts.
func appendedTotal(parts []*Partition) int64 {
	var n int64
	for _, p := range parts {
		n += p.Log.BytesAppended()
	}
	return n
}

// fetchPartitions are the partitions req reads that exist, each once
// (unique: req lists none twice, nothing to check).
func (m *Manager) fetchPartitions(req *kmsg.FetchRequest, unique bool) []*Partition {
	n := 0
	for _, rt := range req.Topics {
		n += len(rt.Partitions)
	}
	out := make([]*Partition, 0, n)
	var seen map[*Partition]bool
	if !unique {
		seen = make(map[*Partition]bool, n)
	}
	for _, rt := range req.Topics {
		t := m.fetchTopic(req.Version, rt)
		if t == nil {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition >= 0 && int(rp.Partition) < len(t.Partitions) {
				if p := t.Partitions[rp.Partition]; p.Hosted() && !seen[p] {
					if seen != nil {
						seen[p] = true
					}
					out = append(out, p)
				}
			}
		}
	}
	return out
}
