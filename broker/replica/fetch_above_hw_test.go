package replica

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A consumer's fetch offset above a new leader's HW, but within its log,
// is not out of range: the answer is empty, as Kafka's (OFFSET_OUT_OF_RANGE
// only past the log end or below its start). A new leader's HW lags the
// old leader's until its followers fetch from it, so a consumer that read
// up to the old HW may well be ahead of it. Before, kbroker answered
// OFFSET_OUT_OF_RANGE there, and franz-go, by default, rewinds a minute
// (ConsumeResetOffset RewindOffset): the read_committed readers of
// TestFaultsTransactions went back in a partition after leader changes.
func TestFetchAboveNewLeaderHW(t *testing.T) {
	c := newTestCluster(t, 2, manualRC(), true, 1)
	all := []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, 1, "m1")
	c.mustProduce(1, 1, "m2")
	c.step(2, 1) // B copies m1 and m2; the HW it learns is still 0
	c.elect(0, 2, all, all, all...)
	p := c.part(2, 0)
	hw, leo := p.HighWatermark(), p.Log.LogEndOffset()
	if hw >= leo {
		t.Fatalf("setup: new leader's HW %d, LEO %d; want the HW behind", hw, leo)
	}
	for _, isolation := range []int8{0, 1} {
		for _, off := range []int64{hw + 1, leo} {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.IsolationLevel = 12, -1, isolation
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = off, 1<<20, -1, -1
			sp := kmsg.NewFetchResponseTopicPartition()
			n, kerrv := c.broker(2).m.readPartition(req, rp, p, &sp, nil, 1<<20, true)
			if kerrv != nil || n != 0 {
				t.Fatalf("isolation %d, offset %d (HW %d, LEO %d): %d bytes, error %v; want none", isolation, off, hw, leo, n, kerrv)
			}
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.IsolationLevel = 12, -1, isolation
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = leo+1, 1<<20, -1, -1
		sp := kmsg.NewFetchResponseTopicPartition()
		if _, kerrv := c.broker(2).m.readPartition(req, rp, p, &sp, nil, 1<<20, true); kerrv == nil {
			t.Fatalf("isolation %d, offset %d past the log end %d: no error, want OFFSET_OUT_OF_RANGE", isolation, leo+1, leo)
		}
	}
}
