package share

import (
	"bytes"
	"encoding/hex"
	"slices"
	"testing"
)

// kafkaSnapshotHex is Kafka 4.4.0's encoding (its generated
// ShareSnapshotValue, version-prefixed as MessageUtil writes records) of
// SnapshotEpoch 1, StateEpoch 0, LeaderEpoch 0, StartOffset 4, both
// timestamps t0, and one state batch 4..4 Available with delivery count 1.
// Kafka 4.4.0's classes also decode this package's snapshots of every
// delivery state with nothing left over (checked by hand with the jars of
// compat/java).
const kafkaSnapshotHex = "000000000001000000000000000000000000000000040000018bcfe568000000018bcfe5680002000000000000000400000000000000040000010000"

// TestStateSnapshotMatchesKafka: a snapshot is byte for byte Kafka's, and
// Kafka's decodes to the same state.
func TestStateSnapshotMatchesKafka(t *testing.T) {
	want, err := hex.DecodeString(kafkaSnapshotHex)
	if err != nil {
		t.Fatal(err)
	}
	p := &partition{start: 4, snapshotEpoch: 1, created: t0.UnixMilli(), recs: []record{{state: Acquired, deliveries: 1}}}
	if got := EncodeSnapshot(p.snapshot(t0)); !bytes.Equal(got, want) {
		t.Fatalf("snapshot\n got %x\nwant %x", got, want)
	}
	d, err := decodeSnapshot(want)
	if err != nil {
		t.Fatal(err)
	}
	if d.start != 4 || d.snapshotEpoch != 1 || len(d.recs) != 1 || d.recs[0] != (record{state: Available, deliveries: 1}) {
		t.Fatalf("decoded %+v", d)
	}
	if k := hex.EncodeToString(encodeStateKey(stateKey{"g", tpA0})); k != "00000001670100000000000000000000000000000000000000" {
		t.Fatalf("key %s", k)
	}
}

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
	if errs := h.c.FinishReplay(); errs != nil {
		t.Fatal(errs)
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
	v := EncodeSnapshot(p.snapshot(h.now))
	for i := range len(v) {
		if err := h.c.ReplayState(huge, v[:i]); err != nil {
			t.Fatal(err)
		}
		if errs := h.c.FinishReplay(); len(errs) != 1 {
			t.Fatalf("truncated value of %d bytes: errors %v", i, errs)
		}
	}
	p = &partition{start: 0}
	p.recs = make([]record, maxReplayWindow+1)
	p.recs[maxReplayWindow].deliveries = 1
	if err := h.c.ReplayState(huge, EncodeSnapshot(p.snapshot(h.now))); err != nil {
		t.Fatal(err)
	}
	if errs := h.c.FinishReplay(); len(errs) != 1 {
		t.Fatalf("window beyond the replay bound: errors %v", errs)
	}
}

func FuzzReplayState(f *testing.F) {
	p := &partition{start: 5, recs: []record{{state: Acquired, deliveries: 2}, {state: Archived, deliveries: 1}}}
	f.Add(encodeStateKey(stateKey{"g", tpA0}), EncodeSnapshot(p.snapshot(t0)))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, err := New(DefaultConfig(), func() []TopicInfo { return nil })
		if err != nil {
			t.Fatal(err)
		}
		_ = c.ReplayState(key, value)
		_ = c.FinishReplay()
	})
}

// TestStatePartitionForMatchesKafka: the coordinator key and its
// __share_group_state partition (of 50) are Kafka 4.4.0's
// (SharePartitionKey.asCoordinatorKey, Utils.abs(hashCode) % 50).
func TestStatePartitionForMatchesKafka(t *testing.T) {
	for _, c := range []struct {
		group string
		part  int32
		key   string
		want  int32
	}{
		{"g", 0, "g:AQAAAAAAAAAAAAAAAAAAAA:0", 33},
		{"g", 2, "g:AQAAAAAAAAAAAAAAAAAAAA:2", 31},
		{"sg-restart", 1, "sg-restart:AQAAAAAAAAAAAAAAAAAAAA:1", 3},
		{"share-group-42", 2, "share-group-42:AQAAAAAAAAAAAAAAAAAAAA:2", 42},
	} {
		k := coordinatorKey(stateKey{c.group, TopicPartition{TopicID: tpA0.TopicID, Partition: c.part}})
		if k != c.key {
			t.Errorf("coordinator key %q, want %q", k, c.key)
		}
		if got := StatePartitionFor(k, 50); got != c.want {
			t.Errorf("%s: partition %d, want %d", k, got, c.want)
		}
	}
}

// TestForgetDeletedTopics: state of a topic that no longer exists is
// dropped with a tombstone; state of existing topics stays.
func TestForgetDeletedTopics(t *testing.T) {
	h := newHarness(t, nil)
	tpB0 := TopicPartition{TopicID: topicB.ID, Partition: 0}
	h.c.FetchOffset("g", tpA0, 0, 3)
	h.c.FetchOffset("g", tpB0, 0, 3)
	h.c.TakeStateRecords(h.now)
	h.topics = []TopicInfo{topicA} // topic b deleted
	h.c.ForgetDeletedTopics()
	recs := h.c.TakeStateRecords(h.now)
	if len(recs) != 1 || recs[0].Value != nil || recs[0].sk.tp != tpB0 {
		t.Fatalf("want one tombstone for b-0, got %+v", recs)
	}
	if _, ok := h.c.Offset("g", tpA0); !ok {
		t.Fatal("state of an existing topic dropped")
	}
}

// TestSnapshotCovers: a persisted state covers a write when everything the
// write finished is finished in it, under the same state epoch.
func TestSnapshotCovers(t *testing.T) {
	acked := func(first, last int64) StateBatch { return StateBatch{first, last, PersistAcknowledged, 1} }
	archived := func(first, last int64) StateBatch { return StateBatch{first, last, PersistArchived, 5} }
	avail := func(first, last int64) StateBatch { return StateBatch{first, last, PersistAvailable, 1} }
	w := Snapshot{StateEpoch: 1, StartOffset: 10, Batches: []StateBatch{acked(10, 12), avail(13, 13), archived(14, 15)}}
	for _, tc := range []struct {
		name string
		s    Snapshot
		want bool
	}{
		{"the write itself", w, true},
		{"the start moved past all of it", Snapshot{StateEpoch: 1, StartOffset: 16}, true},
		{"later progress: 13 acknowledged too", Snapshot{StateEpoch: 1, StartOffset: 16, Batches: []StateBatch{acked(16, 20)}}, true},
		{"the start moved to 13, 14..15 archived", Snapshot{StateEpoch: 1, StartOffset: 13, Batches: []StateBatch{avail(13, 13), archived(14, 15)}}, true},
		{"the state before the write", Snapshot{StateEpoch: 1, StartOffset: 10, Batches: []StateBatch{avail(10, 13)}}, false},
		{"an older start", Snapshot{StateEpoch: 1, StartOffset: 8, Batches: []StateBatch{acked(10, 15)}}, false},
		{"an offset of the write left available", Snapshot{StateEpoch: 1, StartOffset: 10, Batches: []StateBatch{acked(10, 11), avail(12, 13), archived(14, 15)}}, false},
		{"a gap where the write finished offsets", Snapshot{StateEpoch: 1, StartOffset: 10, Batches: []StateBatch{acked(10, 12), archived(15, 15)}}, false},
		{"nothing past the start", Snapshot{StateEpoch: 1, StartOffset: 12}, false},
		{"another state epoch (an admin reset)", Snapshot{StateEpoch: 2, StartOffset: 16}, false},
	} {
		if err := tc.s.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := tc.s.Covers(w); got != tc.want {
			t.Errorf("%s: Covers = %v, want %v", tc.name, got, tc.want)
		}
	}
}
