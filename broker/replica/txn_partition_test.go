package replica

import (
	"testing"

	"github.com/kbroker/kbroker/protocol/records"
)

func TestPartitionTxns(t *testing.T) {
	var tx partitionTxns
	data := func(pid int64) records.Header {
		return records.Header{ProducerID: pid, Attributes: 0x10}
	}
	marker := func(pid int64) records.Header {
		return records.Header{ProducerID: pid, Attributes: 0x30}
	}
	tx.observe(records.Header{ProducerID: -1}, 0, 4, 0) // plain batch
	tx.observe(data(1), 5, 9, 0)
	tx.observe(data(2), 10, 12, 0)
	tx.observe(data(1), 13, 13, 0)
	if got := tx.lastStable(20); got != 5 {
		t.Fatalf("lso = %d, want 5", got)
	}
	tx.observe(marker(1), 14, 14, records.ControlAbort)
	if got := tx.lastStable(20); got != 10 {
		t.Fatalf("lso = %d, want 10", got)
	}
	// Kafka's AbortedTxn.lastStableOffset: the LSO once the marker is in.
	if got := tx.aborted[0].lso; got != 10 {
		t.Fatalf("aborted transaction's LSO = %d, want 10 (producer 2 open at 10)", got)
	}
	tx.observe(marker(2), 15, 15, records.ControlCommit)
	if got := tx.lastStable(20); got != 20 {
		t.Fatalf("lso = %d, want hw 20", got)
	}
	if got := tx.abortedBetween(0, 20); len(got) != 1 || got[0].ProducerID != 1 || got[0].FirstOffset != 5 {
		t.Fatalf("aborted = %+v", got)
	}
	if got := tx.abortedBetween(15, 20); len(got) != 0 {
		t.Fatalf("aborted after the marker = %+v", got)
	}
	if got := tx.abortedBetween(0, 5); len(got) != 0 {
		t.Fatalf("aborted before its first offset = %+v", got)
	}
	tx.truncateAbortedBelow(15)
	if len(tx.aborted) != 0 {
		t.Fatal("aborted txn below log start kept")
	}
}
