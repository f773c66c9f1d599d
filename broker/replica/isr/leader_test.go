package isr

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_700_000_000, 0)

func newLeader(t *testing.T, isr []int32, leo, hw int64) *Leader {
	t.Helper()
	l, err := NewLeader(Config{LagTimeMax: 30 * time.Second, MinInsyncReplicas: 2}, 1, 5, []int32{1, 2, 3}, isr, leo, hw, t0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func fetch(t *testing.T, l *Leader, id int32, off int64, at time.Time) Update {
	t.Helper()
	u, err := l.FollowerFetch(id, off, at)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestHWIsMinimumLEOOfISR checks the central invariant: the HW is the
// smallest log end offset of the ISR, and it never moves back.
func TestHWIsMinimumLEOOfISR(t *testing.T) {
	l := newLeader(t, []int32{1, 2, 3}, 10, 10)
	if l.Appended(15) {
		t.Fatal("HW moved before any follower fetched")
	}
	fetch(t, l, 2, 15, t0)
	if l.HW() != 10 {
		t.Fatalf("HW = %d with replica 3 not fetched", l.HW())
	}
	if u := fetch(t, l, 3, 12, t0); !u.HWMoved || l.HW() != 12 {
		t.Fatalf("HW = %d after replica 3 reached 12 (moved %v)", l.HW(), u.HWMoved)
	}
	fetch(t, l, 3, 15, t0)
	if l.HW() != 15 {
		t.Fatalf("HW = %d, want 15", l.HW())
	}
	// A follower that truncated (fetches lower) never lowers the HW.
	fetch(t, l, 3, 13, t0)
	if l.HW() != 15 {
		t.Fatalf("HW went back to %d", l.HW())
	}
}

// TestAcksAllWaitsForISRAndFailsAfterShrink is the acks=all path: the
// produce completes when the HW covers it, and with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
// min.insync.replicas while it waited.
func TestAcksAllWaitsForISRAndFailsAfterShrink(t *testing.T) {
	l := newLeader(t, []int32{1, 2}, 0, 0)
	if err := l.CheckAppend(-1); err != nil {
		t.Fatal(err)
	}
	l.Appended(3)
	if done, _ := l.Acked(3); done {
		t.Fatal("acked before the follower fetched")
	}
	// Replica 2 stops fetching; after replica.lag.time.max.ms it is dropped.
	if c := l.Tick(t0.Add(29 * time.Second)); c != nil {
		t.Fatalf("shrink proposed before the lag time: %v", c.ISR)
	}
	c := l.Tick(t0.Add(31 * time.Second))
	if c == nil || !c.Shrink || !slices.Equal(c.ISR, []int32{1}) {
		t.Fatalf("shrink = %+v", c)
	}
	// While the shrink is in flight, the HW still waits on replica 2.
	if done, _ := l.Acked(3); done {
		t.Fatal("acked while the shrink was not committed")
	}
	if !l.Committed(c.ISR) {
		t.Fatal("HW did not move after the shrink committed")
	}
	done, err := l.Acked(3)
	if !done || !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) {
		t.Fatalf("Acked = %v, %v; want done with NOT_ENOUGH_REPLICAS_AFTER_APPEND", done, err)
	}
	if err := l.CheckAppend(-1); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("CheckAppend(-1) = %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if err := l.CheckAppend(1); err != nil {
		t.Fatalf("acks=1 refused: %v", err)
	}
}

// TestFollowerRejoinsOnlyWhenCaughtUp checks ISR expansion: a follower
// rejoins once it reached the HW and the leader epoch's start offset, and
// the HW then waits for it as soon as the expansion is in flight.
func TestFollowerRejoinsOnlyWhenCaughtUp(t *testing.T) {
	l := newLeader(t, []int32{1, 2}, 100, 100)
	fetch(t, l, 2, 100, t0)
	l.Appended(120)
	fetch(t, l, 2, 120, t0)
	if u := fetch(t, l, 3, 50, t0); u.Propose != nil {
		t.Fatalf("replica 3 at 50 proposed into the ISR (HW %d)", l.HW())
	}
	u := fetch(t, l, 3, 120, t0)
	if u.Propose == nil || !slices.Equal(u.Propose.ISR, []int32{1, 2, 3}) || u.Propose.Shrink {
		t.Fatalf("expansion = %+v", u.Propose)
	}
	l.Appended(130)
	fetch(t, l, 2, 130, t0)
	if l.HW() != 120 {
		t.Fatalf("HW = %d: it passed replica 3 during its pending expansion", l.HW())
	}
	l.Committed(u.Propose.ISR)
	fetch(t, l, 3, 130, t0)
	if l.HW() != 130 || !slices.Equal(l.ISR(), []int32{1, 2, 3}) {
		t.Fatalf("HW = %d, ISR = %v", l.HW(), l.ISR())
	}
}

// TestCaughtUpRule checks Kafka's lastCaughtUpTime rule: a follower that
// keeps fetching but never reaches the log end of the moment still counts as
// caught up if it reached the log end of its previous fetch.
func TestCaughtUpRule(t *testing.T) {
	l := newLeader(t, []int32{1, 2, 3}, 0, 0)
	fetch(t, l, 3, 0, t0)
	at := t0
	leo := int64(0)
	for i := 0; i < 10; i++ {
		at = at.Add(10 * time.Second)
		prev := leo
		leo += 100
		l.Appended(leo)
		fetch(t, l, 2, prev, at) // always one step behind, but reaches the previous end
		fetch(t, l, 3, leo, at)
	}
	if c := l.Tick(at.Add(time.Second)); c != nil {
		t.Fatalf("replica 2, which keeps up with the previous end, was dropped: %v", c.ISR)
	}
	// Now replica 2 stalls at a fixed offset: it falls out after the lag time.
	stall := leo
	for i := 0; i < 4; i++ {
		at = at.Add(10 * time.Second)
		leo += 100
		l.Appended(leo)
		fetch(t, l, 2, stall, at)
		fetch(t, l, 3, leo, at)
	}
	c := l.Tick(at)
	if c == nil || !slices.Equal(c.ISR, []int32{1, 3}) {
		t.Fatalf("stalled replica 2 not dropped: %+v", c)
	}
	// A rejected change (stale znode version) can be proposed again.
	l.Rejected()
	if c := l.Tick(at); c == nil {
		t.Fatal("no proposal after a rejected one")
	}
}

// TestIdleCaughtUpFollowerStays: with no new data, a follower at the log
// end is never out of sync, however long since it last caught up.
func TestIdleCaughtUpFollowerStays(t *testing.T) {
	l := newLeader(t, []int32{1, 2}, 7, 7)
	fetch(t, l, 2, 7, t0)
	if c := l.Tick(t0.Add(time.Hour)); c != nil {
		t.Fatalf("idle caught-up follower dropped: %v", c.ISR)
	}
}

func TestFollowerFetchErrors(t *testing.T) {
	l := newLeader(t, []int32{1, 2}, 7, 7)
	if _, err := l.FollowerFetch(9, 0, t0); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("unassigned replica: %v", err)
	}
	if _, err := l.FollowerFetch(2, 8, t0); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("fetch beyond the log end: %v", err)
	}
	if _, err := NewLeader(Config{}, 4, 0, []int32{1, 2}, []int32{1, 2}, 0, 0, t0); err == nil {
		t.Fatal("a leader outside the ISR was accepted")
	}
}

// A changed min.insync.replicas applies to the next acks=all check.
func TestSetMinInsyncReplicas(t *testing.T) {
	l, err := NewLeader(Config{LagTimeMax: time.Second, MinInsyncReplicas: 1}, 1, 0, []int32{1, 2}, []int32{1}, 0, 0, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CheckAppend(-1); err != nil {
		t.Fatal(err)
	}
	l.SetMinInsyncReplicas(2)
	if err := l.CheckAppend(-1); err == nil {
		t.Fatal("CheckAppend with ISR [1] and min.insync.replicas=2 passed")
	}
}

// TestReelectKeepsFollowerProgress: a new epoch of the same leader (the
// controller dropped follower 3 from the ISR) keeps what follower 2 had
// fetched, so the HW moves to it at once; a fresh leader state waits for
// every follower to fetch again.
func TestReelectKeepsFollowerProgress(t *testing.T) {
	l := newLeader(t, []int32{1, 2, 3}, 10, 10)
	l.Appended(20)
	fetch(t, l, 2, 20, t0) // 2 holds everything, 3 nothing new
	fetch(t, l, 3, 10, t0)
	if l.HW() != 10 {
		t.Fatalf("HW %d, want 10 (follower 3 is at 10)", l.HW())
	}
	cfg := Config{LagTimeMax: 30 * time.Second, MinInsyncReplicas: 2}
	n, err := l.Reelect(cfg, 6, []int32{1, 2, 3}, []int32{1, 2}, 20, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if n.Epoch() != 6 || n.HW() != 20 {
		t.Fatalf("re-elected: epoch %d HW %d, want 6 and 20", n.Epoch(), n.HW())
	}
	if got := n.FollowerLEO(3); got != 10 {
		t.Fatalf("follower 3 LEO %d, want 10 kept", got)
	}
	if ok, err := n.Acked(20); !ok || err != nil {
		t.Fatalf("Acked(20) = %v, %v", ok, err)
	}
	// Follower 3 is outside the ISR: it rejoins only from the new epoch's start.
	if u := fetch(t, n, 3, 20, t0.Add(2*time.Second)); u.Propose == nil || !slices.Equal(u.Propose.ISR, []int32{1, 2, 3}) {
		t.Fatalf("follower 3 caught up: proposal %+v", u.Propose)
	}
	fresh, err := NewLeader(cfg, 1, 6, []int32{1, 2, 3}, []int32{1, 2}, 20, 10, t0)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.HW() != 10 {
		t.Fatalf("fresh leader HW %d, want 10 until followers fetch", fresh.HW())
	}
}
