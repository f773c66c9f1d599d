package share

import (
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/coordinator/groupconfig"

	"github.com/twmb/franz-go/pkg/kerr"
)

func earliest(h *harness, group string) {
	h.setGroupConfigs(group, map[string]string{groupconfig.ShareAutoOffsetReset: "earliest"})
}

func TestAutoOffsetReset(t *testing.T) {
	h := newHarness(t, nil)
	// latest (the default): the SPSO starts at the high watermark.
	if got := h.acquire("g", "m1", tpA0, 10, 100); got != nil {
		t.Fatalf("latest acquired %v, want nothing", got)
	}
	if o, _ := h.c.Offset("g", tpA0); o.StartOffset != 10 {
		t.Fatalf("latest SPSO = %d, want 10", o.StartOffset)
	}
	earliest(h, "g2")
	if got := h.acquire("g2", "m1", tpA0, 10, 100); !slices.Equal(got, []Range{{0, 9, 1}}) {
		t.Fatalf("earliest acquired %v", got)
	}
}

func TestAcquireRespectsMaxAndOwners(t *testing.T) {
	h := newHarness(t, nil)
	earliest(h, "g")
	if got := h.acquire("g", "m1", tpA0, 10, 4); !slices.Equal(got, []Range{{0, 3, 1}}) {
		t.Fatalf("m1 got %v", got)
	}
	if got := h.acquire("g", "m2", tpA0, 10, 100); !slices.Equal(got, []Range{{4, 9, 1}}) {
		t.Fatalf("m2 got %v", got)
	}
	if got := h.acquire("g", "m3", tpA0, 10, 100); got != nil {
		t.Fatalf("m3 got %v, everything is acquired", got)
	}
	// m2 may not acknowledge m1's records.
	if code := h.ack("g", "m2", tpA0, 0, 3, AckAccept); code != kerr.InvalidRecordState.Code {
		t.Fatalf("foreign ack: code %d", code)
	}
}

func TestAcknowledgeTypes(t *testing.T) {
	h := newHarness(t, nil)
	earliest(h, "g")
	h.acquire("g", "m1", tpA0, 8, 100)
	// Per-offset types: gap, accept, release, reject, then accept the rest.
	code := h.c.Acknowledge(h.now, "g", "m1", tpA0, []AckBatch{
		{First: 0, Last: 3, Types: []int8{AckGap, AckAccept, AckRelease, AckReject}},
		{First: 4, Last: 7, Types: []int8{AckAccept}},
	}, false)
	if code != 0 {
		t.Fatalf("ack code %d", code)
	}
	// 0 and 1 finished: the SPSO moves to 2, which was released.
	if o, _ := h.c.Offset("g", tpA0); o.StartOffset != 2 {
		t.Fatalf("SPSO = %d, want 2", o.StartOffset)
	}
	want := []State{Available, Archived, Acknowledged, Acknowledged, Acknowledged, Acknowledged}
	if got := h.states("g", tpA0, 2, 7); !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	// The released record is delivered again with delivery count 2.
	if got := h.acquire("g", "m2", tpA0, 8, 100); !slices.Equal(got, []Range{{2, 2, 2}}) {
		t.Fatalf("redelivery %v", got)
	}
	if h.ack("g", "m2", tpA0, 2, 2, AckAccept) != 0 {
		t.Fatal("accept failed")
	}
	if o, _ := h.c.Offset("g", tpA0); o.StartOffset != 8 {
		t.Fatalf("SPSO = %d, want 8", o.StartOffset)
	}
}

func TestAcknowledgeValidation(t *testing.T) {
	h := newHarness(t, nil)
	earliest(h, "g")
	h.acquire("g", "m1", tpA0, 5, 100)
	bad := [][]AckBatch{
		{{First: 3, Last: 2, Types: []int8{AckAccept}}},                                // first > last
		{{First: 0, Last: 1, Types: nil}},                                              // no type
		{{First: 0, Last: 2, Types: []int8{AckAccept, AckAccept}}},                     // wrong count
		{{First: 0, Last: 1, Types: []int8{9}}},                                        // unknown type
		{{First: 0, Last: 1, Types: []int8{AckRenew}}},                                 // renew without IsRenewAck
		{{First: 2, Last: 3, Types: []int8{1}}, {First: 1, Last: 1, Types: []int8{1}}}, // out of order
		{{First: 0, Last: 9, Types: []int8{AckAccept}}},                                // beyond what was delivered
	}
	for i, bs := range bad {
		if code := h.c.Acknowledge(h.now, "g", "m1", tpA0, bs, false); code != kerr.InvalidRequest.Code {
			t.Errorf("case %d: code %d, want INVALID_REQUEST", i, code)
		}
	}
	// Nothing was applied: all five are still acquired by m1.
	for i, s := range h.states("g", tpA0, 0, 4) {
		if s != Acquired {
			t.Fatalf("offset %d is %v after rejected acks", i, s)
		}
	}
	// All or nothing: one foreign offset fails the whole partition.
	h.acquire("g", "m2", tpA0, 6, 100)
	if code := h.ack("g", "m1", tpA0, 3, 5, AckAccept); code != kerr.InvalidRecordState.Code {
		t.Fatalf("code %d, want INVALID_RECORD_STATE", code)
	}
	if got := h.states("g", tpA0, 3, 3); got[0] != Acquired {
		t.Fatalf("offset 3 is %v, want still Acquired", got[0])
	}
}

func TestLockExpiryAndRenew(t *testing.T) {
	h := newHarness(t, nil)
	earliest(h, "g")
	h.setGroupConfigs("g", map[string]string{groupconfig.ShareAutoOffsetReset: "earliest", groupconfig.ShareRecordLockDurationMs: "15000"})
	h.acquire("g", "m1", tpA0, 4, 100)
	if next := h.c.NextDeadline(); !next.Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("next deadline %v, want lock expiry", next)
	}
	h.advance(10 * time.Second)
	// Renew 2..3 (KIP-1222): their lock restarts at now.
	if code := h.c.Acknowledge(h.now, "g", "m1", tpA0, []AckBatch{{First: 2, Last: 3, Types: []int8{AckRenew}}}, true); code != 0 {
		t.Fatalf("renew code %d", code)
	}
	changes := h.c.Changes()
	h.advance(5 * time.Second) // 0..1 expire, 2..3 are renewed until t0+25s
	want := []State{Available, Available, Acquired, Acquired}
	if got := h.states("g", tpA0, 0, 3); !slices.Equal(got, want) {
		t.Fatalf("after expiry %v, want %v", got, want)
	}
	if h.c.Changes() == changes {
		t.Fatal("expiry did not count as a change: parked fetches would not wake")
	}
	// The expired member's late ack is refused.
	if code := h.ack("g", "m1", tpA0, 0, 0, AckAccept); code != kerr.InvalidRecordState.Code {
		t.Fatalf("late ack code %d", code)
	}
	h.advance(10 * time.Second)
	if got := h.states("g", tpA0, 2, 3); !slices.Equal(got, []State{Available, Available}) {
		t.Fatalf("renewed records after their lock: %v", got)
	}
}

func TestDeliveryCountLimit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DeliveryCountLimit = 3 })
	earliest(h, "g")
	for i := int16(1); i <= 3; i++ {
		got := h.acquire("g", "m1", tpA0, 2, 100)
		if !slices.Equal(got, []Range{{0, 1, i}}) {
			t.Fatalf("delivery %d: %v", i, got)
		}
		if i < 3 {
			// One released, one timed out: both count as a delivery.
			if h.ack("g", "m1", tpA0, 0, 0, AckRelease) != 0 {
				t.Fatal("release failed")
			}
			h.advance(30 * time.Second)
			continue
		}
		if h.ack("g", "m1", tpA0, 0, 0, AckRelease) != 0 {
			t.Fatal("release failed")
		}
		h.advance(30 * time.Second)
	}
	// The third delivery was the last: both are archived and the SPSO passed them.
	if got := h.acquire("g", "m1", tpA0, 2, 100); got != nil {
		t.Fatalf("delivered beyond the limit: %v", got)
	}
	if o, _ := h.c.Offset("g", tpA0); o.StartOffset != 2 {
		t.Fatalf("SPSO = %d, want 2", o.StartOffset)
	}
}

func TestInFlightWindow(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PartitionMaxRecordLocks = 100 })
	earliest(h, "g")
	if got := h.acquire("g", "m1", tpA0, 1000, 500); !slices.Equal(got, []Range{{0, 99, 1}}) {
		t.Fatalf("first fetch %v", got)
	}
	if _, ok := h.c.FetchOffset("g", tpA0, 0, 1000); ok {
		t.Fatal("window full, yet a fetch offset")
	}
	// Releasing inside the window lets it be redelivered; accepting the
	// head moves the window.
	h.ack("g", "m1", tpA0, 50, 50, AckRelease)
	h.ack("g", "m1", tpA0, 0, 9, AckAccept)
	got := h.acquire("g", "m2", tpA0, 1000, 500)
	if !slices.Equal(got, []Range{{50, 50, 2}, {100, 109, 1}}) {
		t.Fatalf("after moving window %v", got)
	}
}

func TestControlBatchesAndHoles(t *testing.T) {
	h := newHarness(t, nil)
	earliest(h, "g")
	off, _ := h.c.FetchOffset("g", tpA0, 0, 20)
	bs := []Batch{{First: off, Last: 4}, {First: 5, Last: 5, Control: true}, {First: 9, Last: 12}}
	got := h.c.Acquire(h.now, "g", "m1", tpA0, bs, 100)
	if !slices.Equal(got, []Range{{0, 4, 1}, {9, 12, 1}}) {
		t.Fatalf("acquired %v", got)
	}
	// The control record and the compacted hole 6..8 are archived.
	if st := h.states("g", tpA0, 5, 8); !slices.Equal(st, []State{Archived, Archived, Archived, Archived}) {
		t.Fatalf("states %v", st)
	}
	h.ack("g", "m1", tpA0, 0, 4, AckAccept)
	if o, _ := h.c.Offset("g", tpA0); o.StartOffset != 9 {
		t.Fatalf("SPSO = %d, want 9", o.StartOffset)
	}
}

func TestLogStartPassesSPSO(t *testing.T) {
	h := newHarness(t, nil)
	earliest(h, "g")
	h.acquire("g", "m1", tpA0, 10, 100)
	// DeleteRecords moved the log start to 6: the state below it is dropped.
	off, ok := h.c.FetchOffset("g", tpA0, 6, 12)
	if !ok || off != 10 {
		t.Fatalf("fetch offset %d %v, want 10", off, ok)
	}
	if o, _ := h.c.Offset("g", tpA0); o.StartOffset != 6 {
		t.Fatalf("SPSO = %d, want 6", o.StartOffset)
	}
}
