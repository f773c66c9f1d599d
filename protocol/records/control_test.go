package records

import "testing"

func TestControlBatchRoundTrip(t *testing.T) {
	for _, ct := range []ControlType{ControlAbort, ControlCommit} {
		b, err := BuildControlBatch(42, 3, ct, 7, 1000)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Check(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.NumRecords != 1 {
			t.Fatalf("header %+v", h)
		}
		got, err := ControlTypeOf(b)
		if err != nil || got != ct {
			t.Fatalf("type %d, %v; want %d", got, err, ct)
		}
	}
	if _, err := ParseControlKey([]byte{0}); err == nil {
		t.Fatal("short key accepted")
	}
}
