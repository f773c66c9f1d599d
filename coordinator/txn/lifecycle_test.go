package txn

import (
	"reflect"
	"testing"
	"time"

	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCommitLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	init := h.initPID(4, "tx", 60000)
	if init.ErrorCode != 0 || init.ProducerID != 1000 || init.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", init)
	}
	if got := h.state("tx"); got != "Empty" {
		t.Fatalf("state %s", got)
	}
	h.addOK("tx", 1000, 0, tp("a", 0), tp("a", 1), tp("b", 0))
	start := h.now.UnixMilli()
	h.now = h.now.Add(time.Second)
	h.addOK("tx", 1000, 0, tp("a", 1)) // already in: no record
	if n := len(h.log); n != 2 {
		t.Fatalf("%d records after adds, want 2", n)
	}
	if code := h.addOffsets(3, "tx", 1000, 0, "g"); code != 0 {
		t.Fatalf("add offsets: %d", code)
	}
	offsets := tp(OffsetsTopic, group.PartitionFor("g", 50))

	d := h.describe("tx")[0]
	if d.State != "Ongoing" || d.StartTimestamp != start || d.TimeoutMillis != 60000 || len(d.Topics) != 3 {
		t.Fatalf("describe ongoing: %+v", d)
	}

	end := h.endTxn(3, "tx", 1000, 0, true)
	if end.ErrorCode != 0 {
		t.Fatalf("end: %d", end.ErrorCode)
	}
	m := h.oneMarker()
	want := Marker{TxnID: "tx", ProducerID: 1000, ProducerEpoch: 0, Commit: true,
		Partitions: []TopicPartition{offsets, tp("a", 0), tp("a", 1), tp("b", 0)}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("marker %+v\nwant %+v", m, want)
	}
	if v := h.lastRecord(); State(v.State) != PrepareCommit || len(v.Topics) != 3 {
		t.Fatalf("prepare record %+v", v)
	}
	// The client may retry while markers are outstanding.
	if code := h.endTxn(3, "tx", 1000, 0, true).ErrorCode; code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("retry during prepare: %d", code)
	}

	h.markersWritten(m)
	v := h.lastRecord()
	if State(v.State) != CompleteCommit || len(v.Topics) != 0 || v.StartTimestamp != start {
		t.Fatalf("complete record %+v", v)
	}
	if _, err := h.c.MarkersWritten(h.now, "tx", 1000, 0); err == nil {
		t.Fatal("second MarkersWritten accepted")
	}
	if code := h.endTxn(3, "tx", 1000, 0, true).ErrorCode; code != 0 {
		t.Fatalf("retry after complete: %d", code)
	}
	if code := h.endTxn(3, "tx", 1000, 0, false).ErrorCode; code != kerr.InvalidTxnState.Code {
		t.Fatalf("abort after commit: %d", code)
	}
	wantStates := []State{Empty, Ongoing, Ongoing, PrepareCommit, CompleteCommit}
	if got := h.states("tx"); !reflect.DeepEqual(got, wantStates) {
		t.Fatalf("record states %v, want %v", got, wantStates)
	}

	// The next transaction starts from CompleteCommit at the same epoch.
	h.addOK("tx", 1000, 0, tp("c", 0))
	if got := h.state("tx"); got != "Ongoing" {
		t.Fatalf("state %s", got)
	}
}

func TestAbortPath(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "tx", 60000)
	h.addOK("tx", 1000, 0, tp("a", 0))
	if code := h.endTxn(3, "tx", 1000, 0, false).ErrorCode; code != 0 {
		t.Fatalf("abort: %d", code)
	}
	m := h.oneMarker()
	if m.Commit || m.ProducerEpoch != 0 {
		t.Fatalf("marker %+v", m)
	}
	if code := h.endTxn(3, "tx", 1000, 0, true).ErrorCode; code != kerr.InvalidTxnState.Code {
		t.Fatalf("commit during abort: %d", code)
	}
	h.markersWritten(m)
	if got := h.state("tx"); got != "CompleteAbort" {
		t.Fatalf("state %s", got)
	}
	if code := h.endTxn(3, "tx", 1000, 0, false).ErrorCode; code != 0 {
		t.Fatalf("retried abort: %d", code)
	}
	if code := h.endTxn(3, "tx", 1000, 0, true).ErrorCode; code != kerr.InvalidTxnState.Code {
		t.Fatalf("commit after abort: %d", code)
	}
}

func TestEndTxnErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "tx", 60000)
	tests := []struct {
		name    string
		version int16
		id      string
		pid     int64
		epoch   int16
		commit  bool
		want    int16
	}{
		{"empty id", 3, "", 1000, 0, true, kerr.InvalidRequest.Code},
		{"unknown id", 3, "nope", 1000, 0, true, kerr.InvalidProducerIDMapping.Code},
		{"wrong producer", 3, "tx", 7, 0, true, kerr.InvalidProducerIDMapping.Code},
		{"wrong epoch", 3, "tx", 1000, 3, true, kerr.ProducerFenced.Code},
		{"wrong epoch v1", 1, "tx", 1000, 3, true, kerr.InvalidProducerEpoch.Code},
		{"commit in Empty", 3, "tx", 1000, 0, true, kerr.InvalidTxnState.Code},
		{"abort in Empty", 3, "tx", 1000, 0, false, kerr.InvalidTxnState.Code},
		{"v5 commit in Empty", 5, "tx", 1000, 0, true, kerr.InvalidTxnState.Code},
	}
	for _, tt := range tests {
		if got := h.endTxn(tt.version, tt.id, tt.pid, tt.epoch, tt.commit).ErrorCode; got != tt.want {
			t.Errorf("%s: error %d, want %d", tt.name, got, tt.want)
		}
	}
	if len(h.log) != 1 {
		t.Fatalf("failed EndTxns wrote records: %d", len(h.log))
	}
}

func TestAddErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "tx", 60000)
	p := tp("a", 0)
	tests := []struct {
		name    string
		version int16
		id      string
		pid     int64
		epoch   int16
		want    int16
	}{
		{"empty id", 3, "", 1000, 0, kerr.InvalidRequest.Code},
		{"unknown id", 3, "nope", 1000, 0, kerr.InvalidProducerIDMapping.Code},
		{"wrong producer", 3, "tx", 1, 0, kerr.InvalidProducerIDMapping.Code},
		{"wrong epoch", 3, "tx", 1000, 1, kerr.ProducerFenced.Code},
		{"wrong epoch v1", 1, "tx", 1000, 1, kerr.InvalidProducerEpoch.Code},
	}
	for _, tt := range tests {
		if got := h.addParts(tt.version, tt.id, tt.pid, tt.epoch, p)[p]; got != tt.want {
			t.Errorf("%s: error %d, want %d", tt.name, got, tt.want)
		}
	}
	if got := h.addOffsets(1, "tx", 1000, 1, "g"); got != kerr.InvalidProducerEpoch.Code {
		t.Errorf("add offsets v1 fenced: %d", got)
	}
	if got := h.addOffsets(2, "tx", 1000, 1, "g"); got != kerr.ProducerFenced.Code {
		t.Errorf("add offsets v2 fenced: %d", got)
	}
	if len(h.log) != 1 {
		t.Fatalf("failed adds wrote records: %d", len(h.log))
	}
}

func TestAddPartitionsBrokerForm(t *testing.T) {
	exists := func(topic string, _ int32) bool { return topic != "gone" }
	h := newHarness(t, func(c *Config) { c.PartitionExists = exists })
	h.initPID(4, "tx", 60000)
	h.addOK("tx", 1000, 0, tp("a", 0))

	codes := h.addParts(3, "tx", 1000, 0, tp("a", 1), tp("gone", 0))
	if codes[tp("gone", 0)] != kerr.UnknownTopicOrPartition.Code || codes[tp("a", 1)] != kerr.OperationNotAttempted.Code {
		t.Fatalf("missing topic: %v", codes)
	}

	send := func(version int16, verify bool, parts ...TopicPartition) map[TopicPartition]int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = version
		tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = "tx", 1000, 0, verify
		for _, g := range groupByTopic(parts) {
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic, rt.Partitions = g.topic, g.partitions
			tr.Topics = append(tr.Topics, rt)
		}
		req.Transactions = append(req.Transactions, tr)
		resp := h.do(req).(*kmsg.AddPartitionsToTxnResponse)
		if len(resp.Transactions) != 1 || resp.Transactions[0].TransactionalID != "tx" {
			t.Fatalf("response %+v", resp)
		}
		codes := map[TopicPartition]int16{}
		for _, rt := range resp.Transactions[0].Topics {
			for _, rp := range rt.Partitions {
				codes[TopicPartition{rt.Topic, rp.Partition}] = rp.ErrorCode
			}
		}
		return codes
	}
	records := len(h.log)
	codes = send(5, true, tp("a", 0), tp("b", 0))
	if codes[tp("a", 0)] != 0 || codes[tp("b", 0)] != kerr.TransactionAbortable.Code {
		t.Fatalf("verify v5: %v", codes)
	}
	codes = send(4, true, tp("b", 0))
	if codes[tp("b", 0)] != kerr.InvalidTxnState.Code {
		t.Fatalf("verify v4: %v", codes)
	}
	if len(h.log) != records {
		t.Fatal("verification wrote a record")
	}
	codes = send(5, false, tp("b", 0))
	if codes[tp("b", 0)] != 0 || len(h.log) != records+1 {
		t.Fatalf("broker add: %v", codes)
	}
	if v := h.lastRecord(); v.ClientTransactionVersion != 2 {
		t.Fatalf("client transaction version %d after a v5 add", v.ClientTransactionVersion)
	}
}

func TestPartitionsAddedByProduce(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(5, "tx", 60000)
	code, recs := h.c.PartitionsAddedByProduce(h.now, "tx", 1000, 0, []TopicPartition{tp("a", 0), tp("a", 0)})
	if code != 0 || len(recs) != 1 {
		t.Fatalf("add: %d, %d records", code, len(recs))
	}
	if code, recs = h.c.PartitionsAddedByProduce(h.now, "tx", 1000, 0, []TopicPartition{tp("a", 0)}); code != 0 || len(recs) != 0 {
		t.Fatalf("repeat add: %d, %d records", code, len(recs))
	}
	if code, _ = h.c.PartitionsAddedByProduce(h.now, "tx", 1000, 1, []TopicPartition{tp("b", 0)}); code != kerr.ProducerFenced.Code {
		t.Fatalf("fenced add: %d", code)
	}
	if d := h.describe("tx")[0]; d.State != "Ongoing" || len(d.Topics) != 1 {
		t.Fatalf("describe %+v", d)
	}
}
