package txn

import (
	"reflect"
	"testing"
	"time"

	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestConfigValidate(t *testing.T) {
	alloc := func() (int64, error) { return 1, nil }
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"no allocator", func(c *Config) { c.NextProducerID = nil }, false},
		{"zero max timeout", func(c *Config) { c.TransactionMaxTimeoutMs = 0 }, false},
		{"zero expiration", func(c *Config) { c.TransactionalIDExpirationMs = 0 }, false},
		{"zero abort interval", func(c *Config) { c.AbortTimedOutTransactionCleanupIntervalMs = 0 }, false},
		{"zero expire interval", func(c *Config) { c.RemoveExpiredTransactionalIDCleanupIntervalMs = 0 }, false},
		{"zero partitions", func(c *Config) { c.TransactionStateLogNumPartitions = 0 }, false},
		{"zero offsets partitions", func(c *Config) { c.OffsetsTopicNumPartitions = 0 }, false},
		{"transaction version 1", func(c *Config) { c.TransactionVersion = 1 }, false},
		{"transaction version 0", func(c *Config) { c.TransactionVersion = 0 }, true},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		cfg.NextProducerID = alloc
		tt.mod(&cfg)
		if _, err := New(cfg); (err == nil) != tt.ok {
			t.Errorf("%s: err = %v", tt.name, err)
		}
	}
}

func TestHandleRefusesUnsupported(t *testing.T) {
	h := newHarness(t, nil)
	for _, req := range []kmsg.Request{
		&kmsg.InitProducerIDRequest{Version: 6},
		&kmsg.EndTxnRequest{Version: 6},
		&kmsg.AddOffsetsToTxnRequest{Version: 5},
		&kmsg.ListTransactionsRequest{Version: 3},
		&kmsg.DescribeTransactionsRequest{Version: 1},
		&kmsg.JoinGroupRequest{Version: 3},
	} {
		rs, recs, ms, err := h.c.Handle(h.now, 1, Client{}, req)
		if err == nil || len(rs)+len(recs)+len(ms) != 0 {
			t.Errorf("key %d v%d: err %v", req.Key(), req.GetVersion(), err)
		}
	}
}

// TestEveryVersionEncodes sends each API at each version it serves and
// checks that the reply has the request's version and encodes (harness.do).
func TestEveryVersionEncodes(t *testing.T) {
	h := newHarness(t, nil)
	for v := int16(0); v <= 5; v++ {
		id := "tx" + string(rune('0'+v))
		r := h.initPID(v, id, 60000)
		if r.ErrorCode != 0 {
			t.Fatalf("init v%d: %d", v, r.ErrorCode)
		}
		if v <= 3 {
			h.addParts(v, id, r.ProducerID, r.ProducerEpoch, tp("a", 0))
		} else {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.Version = v
			tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch = id, r.ProducerID, r.ProducerEpoch
			tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0}}}
			req.Transactions = append(req.Transactions, tr)
			h.do(req)
		}
		h.addOffsets(min(v, 4), id, r.ProducerID, r.ProducerEpoch, "g")
		if e := h.endTxn(v, id, r.ProducerID, r.ProducerEpoch, true); e.ErrorCode != 0 {
			t.Fatalf("end v%d: %d", v, e.ErrorCode)
		}
	}
	h.describe("tx0", "nope", "")
	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = v
		h.do(req)
	}
}

func TestPartitionFor(t *testing.T) {
	for _, id := range []string{"", "tx", "my-transactional-id", "ünïcödé", "\U0001F600"} {
		for _, n := range []int32{1, 50, 7} {
			if got, want := PartitionFor(id, n), group.PartitionFor(id, n); got != want {
				t.Errorf("PartitionFor(%q, %d) = %d, want %d", id, n, got, want)
			}
		}
	}
	if PartitionFor("tx", 0) != 0 {
		t.Error("PartitionFor with no partitions")
	}
}

func TestExpiration(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "idle", 60000)
	h.initPID(4, "busy", 60000)
	h.initPID(4, "open", 900000)
	start := h.now
	// "open" has a transaction open until it is aborted on timeout, a
	// quarter of an hour in, and expires 7 days after that; "busy" is
	// updated every day and stays.
	h.addOK("open", 1002, 0, tp("a", 0))
	for h.now.Sub(start) < 8*24*time.Hour {
		h.tick()
		if len(h.markers) > 0 {
			h.markersWritten(h.oneMarker())
		}
		if h.now.Sub(start) < 6*24*time.Hour && h.now.Hour() == 0 && h.now.Minute() == 0 && h.now.Second() < 10 {
			h.addOK("busy", 1001, 0, tp("b", int32(h.now.Day())))
			h.endTxn(3, "busy", 1001, 0, false)
			h.markersWritten(h.oneMarker())
		}
	}
	var gone []string
	for _, r := range h.log {
		if r.Value == nil {
			gone = append(gone, r.TxnID)
		}
	}
	if !reflect.DeepEqual(gone, []string{"idle", "open"}) {
		t.Fatalf("expired %v, want [idle open]", gone)
	}
	if d := h.describe("idle")[0]; d.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe expired: %+v", d)
	}
	// A producer of an expired id starts afresh with a new producer id.
	if r := h.initPID(4, "idle", 60000); r.ErrorCode != 0 || r.ProducerID == 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("init after expiry: %+v", r)
	}
}

func TestCoordinatorEpochAndUnload(t *testing.T) {
	h := newHarness(t, nil)
	p := PartitionFor("tx", 50)
	h.c.SetCoordinatorEpoch(p, 9)
	h.initPID(4, "tx", 60000)
	h.addOK("tx", 1000, 0, tp("a", 0))
	h.endTxn(3, "tx", 1000, 0, true)
	if m := h.oneMarker(); m.CoordinatorEpoch != 9 {
		t.Fatalf("marker coordinator epoch %d", m.CoordinatorEpoch)
	}
	h.initPID(4, "elsewhere", 60000)
	if PartitionFor("elsewhere", 50) == p {
		t.Fatal("test ids share a partition")
	}
	h.c.Unload(p)
	if _, ok := h.c.txns["tx"]; ok || len(h.c.txns) != 1 || len(h.c.PendingMarkers()) != 0 {
		t.Fatalf("after unload: %v", h.c.txns)
	}
}

func TestDescribeAndListTransactions(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "a", 60000)
	h.initPID(4, "b", 30000)
	h.initPID(4, "c", 60000)
	h.addOK("b", 1001, 0, tp("y", 1), tp("x", 0), tp("y", 0))
	bStart := h.now.UnixMilli()
	h.now = h.now.Add(10 * time.Second)
	h.addOK("c", 1002, 0, tp("x", 0))
	h.endTxn(3, "c", 1002, 0, true)

	ds := h.describe("b", "nope", "")
	want := kmsg.NewDescribeTransactionsResponseTransactionState()
	want.TransactionalID, want.State, want.TimeoutMillis = "b", "Ongoing", 30000
	want.StartTimestamp, want.ProducerID, want.ProducerEpoch = bStart, 1001, 0
	want.Topics = []kmsg.DescribeTransactionsResponseTransactionStateTopic{
		{Topic: "x", Partitions: []int32{0}},
		{Topic: "y", Partitions: []int32{0, 1}},
	}
	if !reflect.DeepEqual(ds[0], want) {
		t.Fatalf("describe b: %+v\nwant %+v", ds[0], want)
	}
	if ds[1].ErrorCode != kerr.TransactionalIDNotFound.Code || ds[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("describe errors: %+v", ds[1:])
	}
	if d := h.describe("a")[0]; d.State != "Empty" || d.StartTimestamp != -1 || d.Topics != nil {
		t.Fatalf("describe a: %+v", d)
	}

	list := func(v int16, states []string, pids []int64, duration int64) ([]string, []string) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis = v, states, pids, duration
		resp := h.do(req).(*kmsg.ListTransactionsResponse)
		var got []string
		for _, s := range resp.TransactionStates {
			got = append(got, s.TransactionalID+":"+s.TransactionState)
		}
		return got, resp.UnknownStateFilters
	}
	all := []string{"a:Empty", "b:Ongoing", "c:PrepareCommit"}
	tests := []struct {
		name        string
		version     int16
		states      []string
		pids        []int64
		duration    int64
		want        []string
		wantUnknown []string
	}{
		{"all", 0, nil, nil, -1, all, nil},
		{"by state", 0, []string{"Ongoing", "PrepareCommit"}, nil, -1, all[1:], nil},
		{"unknown state", 0, []string{"Bogus"}, nil, -1, nil, []string{"Bogus"}},
		{"by producer", 0, nil, []int64{1000, 1002}, -1, []string{all[0], all[2]}, nil},
		{"by duration", 1, nil, nil, 5000, all[:2], nil},
		{"duration ignored in v0", 0, nil, nil, 5000, all, nil},
	}
	for _, tt := range tests {
		got, unknown := list(tt.version, tt.states, tt.pids, tt.duration)
		if !reflect.DeepEqual(got, tt.want) || !reflect.DeepEqual(unknown, tt.wantUnknown) {
			t.Errorf("%s: %v %v, want %v %v", tt.name, got, unknown, tt.want, tt.wantUnknown)
		}
	}

	// v2: the pattern must match the whole id; an invalid one is refused.
	for _, tt := range []struct {
		pattern string
		want    []string
		code    int16
	}{
		{"", all, 0},
		{"[ab]", all[:2], 0},
		{"b|c", all[1:], 0},
		{"a.", nil, 0},
		{"(", nil, kerr.InvalidRegularExpression.Code},
	} {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.DurationFilterMillis, req.TransactionalIDPattern = 2, -1, &tt.pattern
		resp := h.do(req).(*kmsg.ListTransactionsResponse)
		var got []string
		for _, s := range resp.TransactionStates {
			got = append(got, s.TransactionalID+":"+s.TransactionState)
		}
		if resp.ErrorCode != tt.code || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("pattern %q: code %d %v, want %d %v", tt.pattern, resp.ErrorCode, got, tt.code, tt.want)
		}
	}
}
