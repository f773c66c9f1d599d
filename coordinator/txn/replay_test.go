package txn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCrashBetweenPrepareAndMarkers: the PrepareCommit record is in the log
// but the markers were never reported written. After a restart the markers
// come back from Loaded and the transaction completes.
func TestCrashBetweenPrepareAndMarkers(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "tx", 60000)
	h.addOK("tx", 1000, 0, tp("a", 0), tp("b", 2))
	h.addOffsets(3, "tx", 1000, 0, "g")
	h.endTxn(3, "tx", 1000, 0, true)
	before := h.oneMarker()
	h.initPID(4, "other", 60000)
	h.addOK("other", 1001, 0, tp("a", 0))

	h.c.SetCoordinatorEpoch(PartitionFor("tx", 50), 4)
	pending := h.reload()
	if len(pending) != 1 {
		t.Fatalf("%d pending markers after reload", len(pending))
	}
	before.CoordinatorEpoch = 0 // the new coordinator has not been told an epoch
	if !reflect.DeepEqual(pending[0], before) {
		t.Fatalf("reloaded marker %+v\nwant %+v", pending[0], before)
	}
	if d := h.describe("other")[0]; d.State != "Ongoing" || len(d.Topics) != 1 {
		t.Fatalf("other after reload: %+v", d)
	}
	// Requests see the completing transaction as before the crash.
	if code := h.endTxn(3, "tx", 1000, 0, true).ErrorCode; code != 51 {
		t.Fatalf("EndTxn retry after reload: %d", code)
	}
	h.markersWritten(pending[0])
	if got := h.state("tx"); got != "CompleteCommit" {
		t.Fatalf("state %s", got)
	}
	if len(h.c.PendingMarkers()) != 0 {
		t.Fatal("markers still pending")
	}
	// And a second restart finds nothing to do.
	if pending := h.reload(); len(pending) != 0 {
		t.Fatalf("pending after second reload: %+v", pending)
	}
}

// TestReplayRoundTrip: every state a transactional id passes through
// survives a reload, as DescribeTransactions shows it.
func TestReplayRoundTrip(t *testing.T) {
	for _, tv := range []int16{0, 2} {
		h := newHarness(t, func(c *Config) { c.TransactionVersion = tv })
		check := func(step string) {
			t.Helper()
			want := h.describe("tx", "tx2")
			h.reload()
			got := h.describe("tx", "tx2")
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("tv%d %s: after reload %+v\nwant %+v", tv, step, got, want)
			}
		}
		h.initPID(4, "tx", 60000)
		h.initPID(4, "tx2", 60000)
		check("empty")
		h.addOK("tx", 1000, 0, tp("a", 0), tp("a", 3), tp("b", 1))
		check("ongoing")
		h.endTxn(3, "tx", 1000, 0, false)
		check("prepare abort")
		h.markersWritten(h.c.PendingMarkers()[0])
		check("complete abort")
		h.addOK("tx2", 1001, 0, tp("c", 0))
		if tv == 2 {
			h.endTxn(5, "tx2", 1001, 0, true)
		} else {
			h.endTxn(3, "tx2", 1001, 0, true)
		}
		check("prepare commit")
		h.markersWritten(h.c.PendingMarkers()[0])
		check("complete commit")
	}
}

func TestReplayTombstoneAndSkips(t *testing.T) {
	h := newHarness(t, nil)
	h.initPID(4, "tx", 60000)
	h.log = append(h.log, tombstone("tx"))
	// A record of a future key version is skipped, as Kafka does.
	future := append([]byte{0, 9}, txnKey("x")[2:]...)
	h.log = append(h.log, Record{TxnID: "x", Key: future, Value: []byte{1, 2, 3}})
	h.reload()
	if len(h.c.txns) != 0 {
		t.Fatalf("txns after tombstone: %v", h.c.txns)
	}

	bad := []struct {
		name       string
		key, value []byte
	}{
		{"short key", []byte{0}, nil},
		{"negative key version", []byte{0xff, 0xff}, nil},
		{"truncated key", []byte{0, 0, 0, 9, 'a'}, nil},
		{"truncated value", txnKey("tx"), []byte{0, 0, 1}},
		{"value version", txnKey("tx"), valueWith(t, func(v *kmsg.TxnMetadataValue) { v.Version = 2 })},
		{"dead state", txnKey("tx"), valueWith(t, func(v *kmsg.TxnMetadataValue) { v.State = 6 })},
		{"negative epoch", txnKey("tx"), valueWith(t, func(v *kmsg.TxnMetadataValue) { v.ProducerEpoch = -1 })},
	}
	for _, b := range bad {
		if err := h.c.Replay(b.key, b.value); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: %v", b.name, err)
		}
	}
}

func valueWith(t *testing.T, mod func(*kmsg.TxnMetadataValue)) []byte {
	t.Helper()
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.TimeoutMillis = 1, 5, 1000
	mod(&v)
	if v.Version > 1 {
		b := v.AppendTo(nil)
		binary.BigEndian.PutUint16(b, uint16(v.Version))
		return b
	}
	return v.AppendTo(nil)
}

// TestRecordBytes pins the encoding to Kafka's TransactionLogKey v0 and
// TransactionLogValue v0 schemas, byte for byte.
func TestRecordBytes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TransactionVersion = 0 })
	h.initPID(4, "ab", 1000)
	r := h.log[0]
	wantKey := []byte{0, 0, 0, 2, 'a', 'b'}
	if !bytes.Equal(r.Key, wantKey) {
		t.Fatalf("key % x", r.Key)
	}
	var w bytes.Buffer
	put := func(v any) { _ = binary.Write(&w, binary.BigEndian, v) }
	put(int16(0))          // value version
	put(int64(1000))       // producer id
	put(int16(0))          // producer epoch
	put(int32(1000))       // transaction timeout
	put(int8(0))           // state Empty
	put(int32(-1))         // partitions: null in Empty
	put(h.now.UnixMilli()) // last update
	put(int64(-1))         // start
	if !bytes.Equal(r.Value, w.Bytes()) {
		t.Fatalf("value % x\nwant  % x", r.Value, w.Bytes())
	}

	h.addOK("ab", 1000, 0, tp("t", 1))
	w.Reset()
	put(int16(0))
	put(int64(1000))
	put(int16(0))
	put(int32(1000))
	put(int8(1)) // Ongoing
	put(int32(1))
	put(int16(1))
	w.WriteString("t")
	put(int32(1))
	put(int32(1))
	put(h.now.UnixMilli())
	put(h.now.UnixMilli())
	if got := h.log[1].Value; !bytes.Equal(got, w.Bytes()) {
		t.Fatalf("value % x\nwant  % x", got, w.Bytes())
	}

	// Transactions version 2 writes value version 1 with the tagged fields.
	h2 := newHarness(t, nil)
	h2.initPID(4, "ab", 1000)
	v := decode(t, h2.log[0]).value
	if v.Version != 1 || v.Topics != nil || v.PreviousProducerID != 1000 || v.NextProducerID != -1 {
		t.Fatalf("v1 value %+v", v)
	}
}
