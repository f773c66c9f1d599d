package replica

import (
	"slices"
	"testing"

	"github.com/kbroker/kbroker/protocol/records"
)

// A coordinator that takes over a partition replays it to the log end, not
// to the HW (Kafka loads coordinators with FetchLogEnd isolation): a new
// leader's HW lags until its followers fetch again, and the records above
// it (say a group's LeaveGroup) are already acknowledged to clients.
func TestReplayPartitionReadsToLogEndOnNewLeader(t *testing.T) {
	c := newTestCluster(t, 3, manualRC(), true, 1)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, 1, "m1")
	c.mustProduce(1, 1, "m2")
	c.step(2, 1) // broker 2 copies both; the HW it learns is still behind
	c.broker(1).stop()
	// Broker 3 has not fetched yet, so the new leader's HW cannot move.
	c.elect(0, 2, []int32{2, 3}, all, 2)
	p := c.part(2, 0)
	if hw, leo := p.HighWatermark(), p.Log.LogEndOffset(); hw >= leo {
		t.Fatalf("setup: new leader HW %d, LEO %d; want the HW behind", hw, leo)
	}
	var got []string
	if err := ReplayPartition(p, func(_ records.Header, recs []records.Record) {
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"m1", "m2"}; !slices.Equal(got, want) {
		t.Fatalf("replayed %q, want %q", got, want)
	}
}

// What a leader appended itself and its followers have not acknowledged
// is not replayed: a coordinator reloading after one of its writes failed
// must not act on that write, which a later leader may lack. What it
// inherited and what the HW covers is.
func TestReplayPartitionSkipsOwnUnacknowledgedRecords(t *testing.T) {
	c := newTestCluster(t, 3, manualRC(), true, 1)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, 1, "m1")
	c.step(2, 1) // broker 2 copies m1; the HW it learns is still behind
	c.broker(1).stop()
	c.elect(0, 2, []int32{2, 3}, all, 2, 3)
	c.mustProduce(2, 1, "m2") // this leader's own, not replicated
	replay := func() []string {
		t.Helper()
		var got []string
		if err := ReplayPartition(c.part(2, 0), func(_ records.Header, recs []records.Record) {
			for _, r := range recs {
				got = append(got, string(r.Value))
			}
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := replay(), []string{"m1"}; !slices.Equal(got, want) {
		t.Fatalf("before m2 is replicated: replayed %q, want %q (m1 inherited, m2 unacknowledged)", got, want)
	}
	c.step(3, 2)
	c.step(3, 2) // broker 3 has m2 and the leader's HW covers it
	if hw := c.part(2, 0).HighWatermark(); hw != 2 {
		t.Fatalf("setup: HW %d after broker 3 fetched, want 2", hw)
	}
	if got, want := replay(), []string{"m1", "m2"}; !slices.Equal(got, want) {
		t.Fatalf("after m2 is replicated: replayed %q, want %q", got, want)
	}
}
