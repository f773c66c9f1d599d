package history

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// stamp is how reports show a time (UTC, to match the brokers' logs).
const stamp = "15:04:05.000"

// Consumer groups: members report what they were assigned, every record
// they polled and every offset commit with its outcome; GroupChecker then
// checks the claims a group makes across joins, leaves and faults:
//
//   - committed offsets never move back: a commit that succeeded never
//     names a lower offset than one that had succeeded before it was sent;
//   - a new owner never starts below the committed offset: the first
//     record a member polls from a partition after being assigned it is at
//     or above every offset committed (successfully) for that partition
//     before the assignment;
//   - nothing acknowledged is skipped forever: every acknowledged record
//     below the group's final committed offset was polled by some member.
//
// The checker orders events by the order of its calls, which is why a
// commit reports the position CommitSent returned when it was sent.

type commit struct {
	member     string
	offsets    map[TP]int64
	sent, done int
	at         time.Time // when it was answered, for the report
}

// GroupChecker collects a group's events; it is safe for concurrent use.
type GroupChecker struct {
	mu         sync.Mutex
	seq        int
	commits    []commit
	assigned   map[string]map[TP]int // member → partition → event position of its assignment
	assignedAt map[string]map[TP]time.Time
	first      map[string]map[TP]int64
	polled     map[TP]map[int64]bool
	// violations found as events arrive
	belowCommitted []string
}

// NewGroupChecker returns an empty checker.
func NewGroupChecker() *GroupChecker {
	return &GroupChecker{assigned: map[string]map[TP]int{}, assignedAt: map[string]map[TP]time.Time{}, first: map[string]map[TP]int64{}, polled: map[TP]map[int64]bool{}}
}

// next advances the event position; the lock must be held.
func (g *GroupChecker) nextLocked() int { g.seq++; return g.seq }

// Assigned records that member now owns tps.
func (g *GroupChecker) Assigned(member string, tps ...TP) {
	g.mu.Lock()
	defer g.mu.Unlock()
	at := g.nextLocked()
	if g.assigned[member] == nil {
		g.assigned[member] = map[TP]int{}
		g.assignedAt[member] = map[TP]time.Time{}
		g.first[member] = map[TP]int64{}
	}
	now := time.Now()
	for _, tp := range tps {
		g.assigned[member][tp] = at
		g.assignedAt[member][tp] = now
		delete(g.first[member], tp)
	}
}

// Revoked records that member no longer owns tps.
func (g *GroupChecker) Revoked(member string, tps ...TP) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextLocked()
	for _, tp := range tps {
		delete(g.assigned[member], tp)
		delete(g.first[member], tp)
	}
}

// committedBeforeLocked is the highest offset of tp committed
// successfully before event position at, and the commit that named it
// (nil if none).
func (g *GroupChecker) committedBeforeLocked(tp TP, at int) (int64, *commit) {
	best, by := int64(-1), (*commit)(nil)
	for i, c := range g.commits {
		if o, ok := c.offsets[tp]; ok && c.done < at && o > best {
			best, by = o, &g.commits[i]
		}
	}
	return best, by
}

// Polled records that member polled rec.
func (g *GroupChecker) Polled(member string, rec Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextLocked()
	if g.polled[rec.TP] == nil {
		g.polled[rec.TP] = map[int64]bool{}
	}
	g.polled[rec.TP][rec.Offset] = true
	at, ok := g.assigned[member][rec.TP]
	if !ok {
		return
	}
	if _, seen := g.first[member][rec.TP]; seen {
		return
	}
	g.first[member][rec.TP] = rec.Offset
	if c, by := g.committedBeforeLocked(rec.TP, at); rec.Offset < c {
		g.belowCommitted = append(g.belowCommitted, fmt.Sprintf("%s started %s at %d (assigned %s, polled %s), below the committed %d (%s's commit, answered %s)",
			member, rec.TP, rec.Offset, g.assignedAt[member][rec.TP].UTC().Format(stamp), time.Now().UTC().Format(stamp),
			c, by.member, by.at.UTC().Format(stamp)))
	}
}

// CommitSent returns the position to pass to Committed.
func (g *GroupChecker) CommitSent() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nextLocked()
}

// Committed records that member's commit of offsets (the next offset to
// consume, per partition), sent at position sent, succeeded for the
// partitions in offsets (the caller leaves out those that failed).
func (g *GroupChecker) Committed(member string, sent int, offsets map[TP]int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(offsets) == 0 {
		return
	}
	g.commits = append(g.commits, commit{member: member, offsets: offsets, sent: sent, done: g.nextLocked(), at: time.Now()})
}

// GroupReport lists the anomalies found, one line each.
type GroupReport struct {
	Backwards, BelowCommitted, Skipped []string
	// Commits counts successful commits; Polled the distinct records polled.
	Commits, Polled int
}

// Err is nil when the report holds no anomaly.
func (r GroupReport) Err() error {
	return anomalies([]anomaly{{"committed offsets moved back", r.Backwards},
		{"new owners started below the committed offset", r.BelowCommitted}, {"acknowledged records skipped", r.Skipped}})
}

// Check reports the anomalies, given the acknowledged records (see
// Checker.AckedRecords) and the group's final committed offsets.
func (g *GroupChecker) Check(acked []Record, final map[TP]int64) GroupReport {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := GroupReport{Commits: len(g.commits), BelowCommitted: append([]string(nil), g.belowCommitted...)}
	for _, offs := range g.polled {
		r.Polled += len(offs)
	}
	for i, a := range g.commits {
		for _, b := range g.commits[i+1:] {
			for tp, ao := range a.offsets {
				bo, ok := b.offsets[tp]
				switch {
				case !ok:
				case a.done < b.sent && bo < ao:
					r.Backwards = append(r.Backwards, fmt.Sprintf("%s: %s committed %d (answered %s) after %s's %d (answered %s)", tp, b.member, bo, b.at.UTC().Format(stamp), a.member, ao, a.at.UTC().Format(stamp)))
				case b.done < a.sent && ao < bo:
					r.Backwards = append(r.Backwards, fmt.Sprintf("%s: %s committed %d (answered %s) after %s's %d (answered %s)", tp, a.member, ao, a.at.UTC().Format(stamp), b.member, bo, b.at.UTC().Format(stamp)))
				}
			}
		}
	}
	for _, rec := range acked {
		if rec.Offset < final[rec.TP] && !g.polled[rec.TP][rec.Offset] {
			r.Skipped = append(r.Skipped, fmt.Sprintf("%s@%d=%q", rec.TP, rec.Offset, rec.Value))
		}
	}
	sort.Strings(r.Backwards)
	sort.Strings(r.Skipped)
	return r
}
