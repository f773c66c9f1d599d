package txn

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFencingDuringOngoing: a second InitProducerId for the same
// transactional id aborts the open transaction at a bumped epoch and is told
// to retry; the old producer is fenced.
func TestFencingDuringOngoing(t *testing.T) {
	for _, tc := range []struct {
		tv          int16
		markerEpoch int16
	}{
		{tv: 2, markerEpoch: 2}, // fence bump + the abort's KIP-890 bump
		{tv: 0, markerEpoch: 1},
	} {
		h := newHarness(t, func(c *Config) { c.TransactionVersion = tc.tv })
		h.initPID(4, "tx", 60000)
		h.addOK("tx", 1000, 0, tp("a", 0), tp("b", 1))

		if code := h.initPID(4, "tx", 60000).ErrorCode; code != kerr.ConcurrentTransactions.Code {
			t.Fatalf("tv%d: second init: %d", tc.tv, code)
		}
		m := h.oneMarker()
		if m.Commit || m.ProducerID != 1000 || m.ProducerEpoch != tc.markerEpoch || len(m.Partitions) != 2 {
			t.Fatalf("tv%d: abort marker %+v", tc.tv, m)
		}
		if v := h.lastRecord(); State(v.State) != PrepareAbort || v.ProducerEpoch != tc.markerEpoch {
			t.Fatalf("tv%d: record %+v", tc.tv, v)
		}
		// The old producer is fenced, with the error its version knows.
		if code := h.endTxn(3, "tx", 1000, 0, true).ErrorCode; code != kerr.ProducerFenced.Code {
			t.Fatalf("tv%d: old producer EndTxn v3: %d", tc.tv, code)
		}
		if code := h.endTxn(1, "tx", 1000, 0, true).ErrorCode; code != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("tv%d: old producer EndTxn v1: %d", tc.tv, code)
		}
		if code := h.endTxn(5, "tx", 1000, 0, true).ErrorCode; code != kerr.ProducerFenced.Code && tc.tv == 2 {
			t.Fatalf("tv%d: old producer EndTxn v5: %d", tc.tv, code)
		}
		// Until the markers are written the new producer must wait.
		if code := h.initPID(4, "tx", 60000).ErrorCode; code != kerr.ConcurrentTransactions.Code {
			t.Fatalf("tv%d: init during abort: %d", tc.tv, code)
		}
		h.markersWritten(m)
		r := h.initPID(4, "tx", 60000)
		if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != tc.markerEpoch+1 {
			t.Fatalf("tv%d: retried init: %+v", tc.tv, r)
		}
		// The old producer's KIP-360 recovery is fenced too.
		if code := h.initPIDExpect(4, "tx", 1000, 0).ErrorCode; code != kerr.ProducerFenced.Code {
			t.Fatalf("tv%d: stale KIP-360 init: %d", tc.tv, code)
		}
		if code := h.initPIDExpect(3, "tx", 1000, 0).ErrorCode; code != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("tv%d: stale KIP-360 init v3: %d", tc.tv, code)
		}
		if code := h.addParts(3, "tx", 1000, 0, tp("a", 0))[tp("a", 0)]; code != kerr.ProducerFenced.Code {
			t.Fatalf("tv%d: old producer add: %d", tc.tv, code)
		}
	}
}

func TestTimeoutAbort(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "tx", 30000)
	h.addOK("tx", 1000, 0, tp("a", 0))
	start := h.now
	for h.now.Sub(start) <= 30*time.Second {
		if h.state("tx") != "Ongoing" {
			t.Fatalf("aborted at %v, before its timeout", h.now.Sub(start))
		}
		h.tick()
	}
	if h.now.Sub(start) > 40*time.Second {
		t.Fatalf("aborted only after %v", h.now.Sub(start))
	}
	m := h.oneMarker()
	if m.Commit || m.ProducerEpoch != 2 {
		t.Fatalf("marker %+v", m)
	}
	if got := h.state("tx"); got != "PrepareAbort" {
		t.Fatalf("state %s", got)
	}
	if code := h.endTxn(3, "tx", 1000, 0, true).ErrorCode; code != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn after timeout: %d", code)
	}
	if code := h.endTxn(5, "tx", 1000, 0, false).ErrorCode; code != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn v5 abort after timeout: %d", code)
	}
	h.markersWritten(m)
	h.tick()
	if len(h.markers) != 0 || h.state("tx") != "CompleteAbort" {
		t.Fatalf("after completion: %s, %d markers", h.state("tx"), len(h.markers))
	}
}

func TestEndTxnV5BumpsEpoch(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(5, "tx", 60000)
	if code, _ := h.c.PartitionsAddedByProduce(h.now, "tx", 1000, 0, []TopicPartition{tp("a", 0)}); code != 0 {
		t.Fatal(code)
	}
	r := h.endTxn(5, "tx", 1000, 0, true)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 1 {
		t.Fatalf("commit: %+v", r)
	}
	m := h.oneMarker()
	if !m.Commit || m.ProducerEpoch != 1 {
		t.Fatalf("marker %+v", m)
	}
	if code := h.endTxn(5, "tx", 1000, 0, true).ErrorCode; code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("retry during prepare: %d", code)
	}
	if code := h.endTxn(5, "tx", 1000, 0, false).ErrorCode; code != kerr.InvalidTxnState.Code {
		t.Fatalf("abort during prepare commit: %d", code)
	}
	h.markersWritten(m)
	// A retry (old epoch) gets the bumped epoch again, without a record.
	n := len(h.log)
	if r := h.endTxn(5, "tx", 1000, 0, true); r.ErrorCode != 0 || r.ProducerEpoch != 1 || len(h.log) != n {
		t.Fatalf("retry after complete: %+v", r)
	}
	// A new commit with nothing added is invalid; a new abort bumps and
	// completes at once, with no markers.
	if code := h.endTxn(5, "tx", 1000, 1, true).ErrorCode; code != kerr.InvalidTxnState.Code {
		t.Fatalf("empty commit: %d", code)
	}
	r = h.endTxn(5, "tx", 1000, 1, false)
	if r.ErrorCode != 0 || r.ProducerEpoch != 2 || len(h.markers) != 0 {
		t.Fatalf("empty abort: %+v, %d markers", r, len(h.markers))
	}
	if got := h.states("tx")[len(h.states("tx"))-2:]; got[0] != PrepareAbort || got[1] != CompleteAbort {
		t.Fatalf("empty abort records %v", got)
	}
	// An EndTxn v0–v4 answer carries no producer id.
	h.addOK("tx", 1000, 2, tp("a", 0))
	if r := h.endTxn(4, "tx", 1000, 2, true); r.ErrorCode != 0 || r.ProducerEpoch != -1 {
		t.Fatalf("v4 end: %+v", r)
	}
	if h.oneMarker().ProducerEpoch != 2 {
		t.Fatal("EndTxn v4 bumped the epoch")
	}
}

// replayTxn seeds h with a transactional id at the given state and epoch,
// as if read from the log.
func replayTxn(t *testing.T, h *harness, id string, pid int64, epoch int16, state State, parts ...TopicPartition) {
	t.Helper()
	tx := &txn{id: id, producerID: pid, epoch: epoch, lastEpoch: noEpoch, prevProducerID: noProducerID,
		nextProducerID: noProducerID, timeoutMs: 60000, state: state, partitions: map[TopicPartition]struct{}{},
		startMs: -1, lastUpdateMs: h.now.UnixMilli()}
	for _, p := range parts {
		tx.partitions[p] = struct{}{}
	}
	if state != Empty {
		tx.startMs = h.now.UnixMilli()
	}
	r := h.c.record(tx)
	h.log = append(h.log, r)
	if err := h.c.Replay(r.Key, r.Value); err != nil {
		t.Fatal(err)
	}
}

func TestEndTxnV5EpochOverflow(t *testing.T) {
	h := newHarness(t, nil)
	replayTxn(t, h, "tx", 7, math.MaxInt16-2, Ongoing, tp("a", 0))
	r := h.endTxn(5, "tx", 7, math.MaxInt16-2, true)
	if r.ErrorCode != 0 || r.ProducerID != 7 || r.ProducerEpoch != math.MaxInt16-1 {
		t.Fatalf("commit at max-2: %+v", r)
	}
	h.markersWritten(h.oneMarker())
	h.addOK("tx", 7, math.MaxInt16-1, tp("a", 0))

	// The epoch is exhausted: the producer moves to a new id.
	r = h.endTxn(5, "tx", 7, math.MaxInt16-1, true)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("commit at max-1: %+v", r)
	}
	m := h.oneMarker()
	if m.ProducerID != 7 || m.ProducerEpoch != math.MaxInt16 {
		t.Fatalf("marker %+v", m)
	}
	if v := h.lastRecord(); v.NextProducerID != 1000 {
		t.Fatalf("prepare record next producer id %d", v.NextProducerID)
	}
	h.markersWritten(m)
	d := h.describe("tx")[0]
	if d.ProducerID != 1000 || d.ProducerEpoch != 0 || d.State != "CompleteCommit" {
		t.Fatalf("after rotation: %+v", d)
	}
	// The producer retries the EndTxn with the old id.
	if r := h.endTxn(5, "tx", 7, math.MaxInt16-1, true); r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("retry across rotation: %+v", r)
	}
	h.addOK("tx", 1000, 0, tp("b", 0))
}

func TestInitProducerIDEpochExhausted(t *testing.T) {
	h := newHarness(t, nil)
	replayTxn(t, h, "tx", 7, math.MaxInt16-1, CompleteCommit)
	r := h.initPID(4, "tx", 60000)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("init at exhausted epoch: %+v", r)
	}
	if v := h.lastRecord(); v.PreviousProducerID != 7 {
		t.Fatalf("previous producer id %d", v.PreviousProducerID)
	}

	// KIP-360: the producer names its exhausted id and epoch, and a retry
	// of that call gets the same answer.
	h2 := newHarness(t, nil)
	replayTxn(t, h2, "tx", 7, math.MaxInt16-1, CompleteCommit)
	r = h2.initPIDExpect(4, "tx", 7, math.MaxInt16-1)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("KIP-360 init at exhausted epoch: %+v", r)
	}
	r = h2.initPIDExpect(4, "tx", 7, math.MaxInt16-1)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("retried KIP-360 init: %+v", r)
	}
}

func TestInitProducerID(t *testing.T) {
	h := newHarness(t, nil)
	// Idempotent producers get fresh ids and write nothing.
	for i, v := range []int16{0, 2, 5} {
		r := h.initPID(v, "", 0)
		if r.ErrorCode != 0 || r.ProducerID != 1000+int64(i) || r.ProducerEpoch != 0 {
			t.Fatalf("v%d idempotent: %+v", v, r)
		}
	}
	if len(h.log) != 0 {
		t.Fatal("idempotent init wrote records")
	}
	tests := []struct {
		name    string
		version int16
		id      *string
		timeout int32
		pid     int64
		epoch   int16
		want    int16
	}{
		{"empty id", 4, ptr(""), 60000, -1, -1, kerr.InvalidRequest.Code},
		{"zero timeout", 4, ptr("tx"), 0, -1, -1, kerr.InvalidTransactionTimeout.Code},
		{"timeout above max", 4, ptr("tx"), 900001, -1, -1, kerr.InvalidTransactionTimeout.Code},
		{"epoch without id", 4, ptr("tx"), 60000, -1, 3, kerr.InvalidRequest.Code},
		{"id without epoch", 4, nil, 60000, 5, -1, kerr.InvalidRequest.Code},
	}
	for _, tt := range tests {
		req := &initReq{version: tt.version, id: tt.id, timeout: tt.timeout, pid: tt.pid, epoch: tt.epoch}
		if got := errorCode(h.do(req.build())); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	// v0–v2 ignore whatever the producer id fields hold.
	req := (&initReq{version: 2, id: ptr("tx"), timeout: 900000, pid: 0, epoch: 0}).build()
	if r := errorCode(h.do(req)); r != 0 {
		t.Fatalf("v2 with zero producer fields: %d", r)
	}

	// KIP-360: the current producer bumps its epoch; a retry of that call
	// gets the same epoch; an older epoch is fenced.
	if r := h.initPIDExpect(4, "tx", 1003, 0); r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("KIP-360 bump: %+v", r)
	}
	if r := h.initPIDExpect(4, "tx", 1003, 0); r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("KIP-360 retry: %+v", r)
	}
	if r := h.initPIDExpect(4, "tx", 1003, 1); r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("KIP-360 second bump: %+v", r)
	}
	if r := h.initPIDExpect(4, "tx", 1003, 0); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("KIP-360 stale: %+v", r)
	}
	if r := h.initPIDExpect(4, "tx", 99, 2); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("KIP-360 other producer id: %+v", r)
	}
	// A fresh id accepts any named producer (it lost its state, KIP-360).
	if r := h.initPIDExpect(4, "fresh", 55, 9); r.ErrorCode != 0 || r.ProducerID != 1004 || r.ProducerEpoch != 0 {
		t.Fatalf("KIP-360 on a new id: %+v", r)
	}
}

func TestAllocatorFailure(t *testing.T) {
	h := newHarness(t, nil)
	h.c.cfg.NextProducerID = func() (int64, error) { return 0, errTest }
	if r := h.initPID(4, "", 0); r.ErrorCode != kerr.CoordinatorNotAvailable.Code || r.ProducerID != -1 {
		t.Fatalf("idempotent: %+v", r)
	}
	if r := h.initPID(4, "tx", 1000); r.ErrorCode != kerr.CoordinatorNotAvailable.Code || len(h.log) != 0 {
		t.Fatalf("transactional: %+v", r)
	}
	if len(h.c.txns) != 0 {
		t.Fatal("failed init kept a transactional id")
	}
}

func TestConcurrentTransactionsWhilePrepareCommit(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "tx", 60000)
	h.addOK("tx", 1000, 0, tp("a", 0))
	h.endTxn(3, "tx", 1000, 0, true)
	n := len(h.log)
	p := tp("b", 0)
	if code := h.initPID(4, "tx", 60000).ErrorCode; code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init: %d", code)
	}
	if code := h.addParts(3, "tx", 1000, 0, p)[p]; code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add: %d", code)
	}
	if code := h.addOffsets(3, "tx", 1000, 0, "g"); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add offsets: %d", code)
	}
	if code, _ := h.c.PartitionsAddedByProduce(h.now, "tx", 1000, 0, []TopicPartition{p}); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("implicit add: %d", code)
	}
	if code := h.endTxn(3, "tx", 1000, 0, true).ErrorCode; code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("end: %d", code)
	}
	if len(h.log) != n || len(h.markers) != 0 {
		t.Fatal("refused requests wrote records or markers")
	}
	// A timed-out check does not touch a completing transaction.
	h.now = h.now.Add(2 * time.Minute)
	recs, ms := h.c.Tick(h.now)
	if len(recs) != 0 || len(ms) != 0 {
		t.Fatalf("tick during prepare: %d records, %d markers", len(recs), len(ms))
	}
}

// TestEndTxnV5AtBumpedEpochWaitsForMarkers: under transactions version 2
// the producer learns the bumped epoch from EndTxn before the markers are
// written (in a cluster they travel to other brokers afterwards); an EndTxn
// it sends at that epoch meanwhile (aborting its next, empty transaction)
// waits with CONCURRENT_TRANSACTIONS instead of fencing it, and goes
// through once the markers are written.
func TestEndTxnV5AtBumpedEpochWaitsForMarkers(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(5, "tx", 60000)
	if code, _ := h.c.PartitionsAddedByProduce(h.now, "tx", 1000, 0, []TopicPartition{tp("a", 0)}); code != 0 {
		t.Fatal(code)
	}
	if r := h.endTxn(5, "tx", 1000, 0, true); r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("commit: %+v", r)
	}
	m := h.oneMarker()
	if code := h.endTxn(5, "tx", 1000, 1, false).ErrorCode; code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("abort at the bumped epoch during the commit's markers: %d", code)
	}
	if code := h.endTxn(5, "tx", 1000, 2, false).ErrorCode; code != kerr.ProducerFenced.Code {
		t.Fatalf("an epoch beyond the coordinator's: %d", code)
	}
	h.markersWritten(m)
	if r := h.endTxn(5, "tx", 1000, 1, false); r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("abort at the bumped epoch after the markers: %+v", r)
	}
}
