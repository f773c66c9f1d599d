package txn

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a Coordinator with a fake clock and an id allocator that
// counts from 1000, keeps every record in log order (the __transaction_state
// "log") and the markers of the last call.
type harness struct {
	t       *testing.T
	c       *Coordinator
	cfg     Config
	now     time.Time
	nextPID int64
	log     []Record
	markers []Marker
	tokens  int
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, now: time.UnixMilli(1_700_000_000_000), nextPID: 1000}
	cfg := DefaultConfig()
	cfg.NextProducerID = func() (int64, error) {
		h.nextPID++
		return h.nextPID - 1, nil
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.c, h.cfg = c, cfg
	return h
}

// do sends req and returns its single reply, checking that the reply
// carries the request's token and version and encodes.
func (h *harness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	h.tokens++
	tok := h.tokens
	rs, recs, ms, err := h.c.Handle(h.now, tok, Client{ID: "client", Host: "/127.0.0.1"}, req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.log = append(h.log, recs...)
	h.markers = ms
	if len(rs) != 1 || rs[0].Token != tok {
		h.t.Fatalf("%s v%d: replies %+v", kmsg.NameForKey(req.Key()), req.GetVersion(), rs)
	}
	if rs[0].Resp.GetVersion() != req.GetVersion() {
		h.t.Fatalf("reply version %d for request version %d", rs[0].Resp.GetVersion(), req.GetVersion())
	}
	_ = rs[0].Resp.AppendTo(nil)
	return rs[0].Resp
}

func (h *harness) initPID(version int16, id string, timeoutMs int32) *kmsg.InitProducerIDResponse {
	h.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	if id != "" {
		req.TransactionalID = &id
	}
	req.TransactionTimeoutMillis = timeoutMs
	return h.do(req).(*kmsg.InitProducerIDResponse)
}

func (h *harness) initPIDExpect(version int16, id string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	h.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return h.do(req).(*kmsg.InitProducerIDResponse)
}

// addParts sends AddPartitionsToTxn v3 (or the given client version) and
// returns the error code of every partition, keyed "topic-partition".
func (h *harness) addParts(version int16, id string, pid int64, epoch int16, parts ...TopicPartition) map[TopicPartition]int16 {
	h.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	for _, g := range groupByTopic(parts) {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = g.topic, g.partitions
		req.Topics = append(req.Topics, rt)
	}
	resp := h.do(req).(*kmsg.AddPartitionsToTxnResponse)
	codes := map[TopicPartition]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes[TopicPartition{rt.Topic, rp.Partition}] = rp.ErrorCode
		}
	}
	if len(codes) != len(parts) {
		h.t.Fatalf("answered %d partitions of %d", len(codes), len(parts))
	}
	return codes
}

// addOK adds partitions with AddPartitionsToTxn v3 and fails on any error.
func (h *harness) addOK(id string, pid int64, epoch int16, parts ...TopicPartition) {
	h.t.Helper()
	for p, code := range h.addParts(3, id, pid, epoch, parts...) {
		if code != 0 {
			h.t.Fatalf("add %v: error %d", p, code)
		}
	}
}

func (h *harness) addOffsets(version int16, id string, pid int64, epoch int16, group string) int16 {
	h.t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, group
	return h.do(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

func (h *harness) endTxn(version int16, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	h.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	return h.do(req).(*kmsg.EndTxnResponse)
}

func (h *harness) describe(ids ...string) []kmsg.DescribeTransactionsResponseTransactionState {
	h.t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = ids
	return h.do(req).(*kmsg.DescribeTransactionsResponse).TransactionStates
}

// state describes id and returns its state name.
func (h *harness) state(id string) string {
	h.t.Helper()
	return h.describe(id)[0].State
}

// markersWritten reports the markers of the last call that returned one.
func (h *harness) markersWritten(m Marker) {
	h.t.Helper()
	recs, err := h.c.MarkersWritten(h.now, m.TxnID, m.ProducerID, m.ProducerEpoch)
	if err != nil {
		h.t.Fatal(err)
	}
	h.log = append(h.log, recs...)
}

// oneMarker returns the only marker of the last call.
func (h *harness) oneMarker() Marker {
	h.t.Helper()
	if len(h.markers) != 1 {
		h.t.Fatalf("%d markers, want 1: %+v", len(h.markers), h.markers)
	}
	return h.markers[0]
}

// tick moves the clock to the next deadline and ticks.
func (h *harness) tick() {
	h.t.Helper()
	d := h.c.NextDeadline()
	if d.IsZero() {
		h.t.Fatal("no deadline")
	}
	h.now = d
	recs, ms := h.c.Tick(h.now)
	h.log = append(h.log, recs...)
	h.markers = ms
}

// decoded is a __transaction_state record decoded with kmsg.
type decoded struct {
	id    string
	value *kmsg.TxnMetadataValue // nil for a tombstone
}

func decode(t *testing.T, r Record) decoded {
	t.Helper()
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		t.Fatal(err)
	}
	if k.TransactionalID != r.TxnID {
		t.Fatalf("key %q for record of %q", k.TransactionalID, r.TxnID)
	}
	if r.Value == nil {
		return decoded{id: k.TransactionalID}
	}
	v := new(kmsg.TxnMetadataValue)
	if err := v.ReadFrom(r.Value); err != nil {
		t.Fatal(err)
	}
	return decoded{id: k.TransactionalID, value: v}
}

// lastRecord decodes the newest record in the log.
func (h *harness) lastRecord() *kmsg.TxnMetadataValue {
	h.t.Helper()
	if len(h.log) == 0 {
		h.t.Fatal("no records")
	}
	return decode(h.t, h.log[len(h.log)-1]).value
}

// states lists the states of id's records in log order.
func (h *harness) states(id string) []State {
	var out []State
	for _, r := range h.log {
		if d := decode(h.t, r); d.id == id && d.value != nil {
			out = append(out, State(d.value.State))
		}
	}
	return out
}

// reload builds a new Coordinator from the log, as after a restart.
func (h *harness) reload() []Marker {
	h.t.Helper()
	c, err := New(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range h.log {
		if err := c.Replay(r.Key, r.Value); err != nil {
			h.t.Fatal(err)
		}
	}
	h.c = c
	return c.Loaded(h.now)
}

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }

var errTest = errors.New("test failure")

func ptr(s string) *string { return &s }

// initReq builds an InitProducerId request with every field as given.
type initReq struct {
	version int16
	id      *string
	timeout int32
	pid     int64
	epoch   int16
}

func (r *initReq) build() *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = r.version, r.id, r.timeout
	req.ProducerID, req.ProducerEpoch = r.pid, r.epoch
	return req
}

// errorCode returns the top-level error code of a response.
func errorCode(r kmsg.Response) int16 {
	switch r := r.(type) {
	case *kmsg.InitProducerIDResponse:
		return r.ErrorCode
	case *kmsg.EndTxnResponse:
		return r.ErrorCode
	case *kmsg.AddOffsetsToTxnResponse:
		return r.ErrorCode
	case *kmsg.ListTransactionsResponse:
		return r.ErrorCode
	}
	return 0
}
