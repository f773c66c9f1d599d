package share

import (
	"slices"
	"testing"
)

// replayInto replays recs, in order, into a fresh coordinator, as a
// restarted broker replays __share_group_state.
func replayInto(t *testing.T, recs []StateRecord) *harness {
	t.Helper()
	h := newHarness(t, nil)
	for _, r := range recs {
		if err := h.c.ReplayState(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// TestStateSnapshotRoundTrip: the snapshot written after acknowledgements
// restores the SPSO, the finished records and the delivery counts; what
// was acquired but not acknowledged comes back Available, and a new member
// acquires exactly that.
func TestStateSnapshotRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	h.setGroupConfigs("g", map[string]string{"share.auto.offset.reset": "earliest"})
	if r := h.acquire("g", "m1", tpA0, 10, 10); len(r) != 1 || r[0].Last != 9 {
		t.Fatalf("acquired %+v", r)
	}
	if code := h.ack("g", "m1", tpA0, 0, 3, AckAccept); code != 0 {
		t.Fatal(code)
	}
	if code := h.ack("g", "m1", tpA0, 5, 5, AckReject); code != 0 {
		t.Fatal(code)
	}
	if code := h.ack("g", "m1", tpA0, 6, 6, AckRelease); code != 0 {
		t.Fatal(code)
	}
	recs := h.c.TakeStateRecords(h.now)
	if len(recs) != 1 || recs[0].Value == nil {
		t.Fatalf("state records %+v", recs)
	}
	if again := h.c.TakeStateRecords(h.now); len(again) != 0 {
		t.Fatalf("nothing changed, yet %d records", len(again))
	}
	if want := "g:AQAAAAAAAAAAAAAAAAAAAA:0"; recs[0].CoordinatorKey != want {
		t.Fatalf("coordinator key %q, want %q", recs[0].CoordinatorKey, want)
	}

	r := replayInto(t, recs)
	wantStates := []State{Available, Archived, Available, Available, Available, Available}
	if got := r.states("g", tpA0, 4, 9); !slices.Equal(got, wantStates) {
		t.Fatalf("states after replay %v, want %v", got, wantStates)
	}
	if _, dc := r.c.RecordStates("g", tpA0, 4, 9); !slices.Equal(dc, []int16{1, 1, 1, 1, 1, 1}) {
		t.Fatalf("delivery counts after replay %v", dc)
	}
	if o, ok := r.c.Offset("g", tpA0); !ok || o.StartOffset != 4 {
		t.Fatalf("SPSO after replay %+v %v", o, ok)
	}
	got := r.acquire("g", "m2", tpA0, 10, 100)
	want := []Range{{First: 4, Last: 4, DeliveryCount: 2}, {First: 6, Last: 9, DeliveryCount: 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("acquired after replay %+v, want %+v", got, want)
	}
}

// TestStateInitializationAndTombstone: a new share-partition is written
// at once (its SPSO from share.auto.offset.reset), and deleting its
// offsets writes a tombstone that replay honours.
func TestStateInitializationAndTombstone(t *testing.T) {
	h := newHarness(t, nil)
	if _, ok := h.c.FetchOffset("g", tpA0, 0, 7); ok {
		t.Fatal("latest: nothing to acquire below the HW")
	}
	first := h.c.TakeStateRecords(h.now)
	r := replayInto(t, first)
	if o, ok := r.c.Offset("g", tpA0); !ok || o.StartOffset != 7 {
		t.Fatalf("initialized SPSO after replay %+v %v", o, ok)
	}
	h.c.DeleteTopicOffsets("g", tpA0.TopicID)
	second := h.c.TakeStateRecords(h.now)
	if len(second) != 1 || second[0].Value != nil {
		t.Fatalf("want one tombstone, got %+v", second)
	}
	r = replayInto(t, append(first, second...))
	if _, ok := r.c.Offset("g", tpA0); ok {
		t.Fatal("state survived its tombstone")
	}
}

// TestStateUnwrittenIsRetried: records whose write failed are produced
// again by the next TakeStateRecords.
func TestStateUnwrittenIsRetried(t *testing.T) {
	h := newHarness(t, nil)
	h.c.FetchOffset("g", tpA0, 0, 3)
	recs := h.c.TakeStateRecords(h.now)
	h.c.Unwritten(recs)
	if again := h.c.TakeStateRecords(h.now); len(again) != 1 {
		t.Fatalf("retry got %d records", len(again))
	}
}

// TestStateReplayRejectsGarbage: malformed keys and values are errors,
// never panics or unbounded allocations.
func TestStateReplayRejectsGarbage(t *testing.T) {
	h := newHarness(t, nil)
	h.c.FetchOffset("g", tpA0, 0, 3)
	good := h.c.TakeStateRecords(h.now)[0]
	for i := range len(good.Key) {
		_ = h.c.ReplayState(good.Key[:i], good.Value)
	}
	huge := encodeStateKey(stateKey{"g", tpA0})
	p := &partition{start: 0, recs: []record{{state: Acknowledged, deliveries: 1}}}
	v := p.encodeSnapshot(h.now)
	for i := range len(v) {
		if err := h.c.ReplayState(huge, v[:i]); err == nil {
			t.Fatalf("truncated value of %d bytes accepted", i)
		}
	}
	p = &partition{start: 0}
	p.recs = make([]record, maxReplayWindow+1)
	p.recs[maxReplayWindow].deliveries = 1
	if err := h.c.ReplayState(huge, p.encodeSnapshot(h.now)); err == nil {
		t.Fatal("window beyond the replay bound accepted")
	}
}

func FuzzReplayState(f *testing.F) {
	p := &partition{start: 5, recs: []record{{state: Acquired, deliveries: 2}, {state: Archived, deliveries: 1}}}
	f.Add(encodeStateKey(stateKey{"g", tpA0}), p.encodeSnapshot(t0))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, err := New(DefaultConfig(), func() []TopicInfo { return nil })
		if err != nil {
			t.Fatal(err)
		}
		_ = c.ReplayState(key, value)
	})
}
