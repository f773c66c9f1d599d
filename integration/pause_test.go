package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration/history"
)

// TestPausedLeaderLeavesISRAndReturns: the leader of a partition (RF=3,
// min.insync.replicas=2) is paused with SIGSTOP under a continuous acks=all
// producer. Its ZooKeeper session expires, the controller elects another
// leader from the ISR and drops the paused broker from it, and the
// producer carries on. Resumed with SIGCONT, the broker finds its session
// gone, registers again, follows the new leader (truncating what it may
// hold beyond it) and rejoins the ISR. Every acknowledged record, those
// the paused leader acknowledged included, is read back exactly once and
// in order (history checker).
func TestPausedLeaderLeavesISRAndReturns(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2"})
	waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "paused", 1, 3, false)
	leaders := waitFullISR(t, bs, "paused", 3)
	victim := byID(bs, leaders[0])

	ch := history.New()
	p := startProducer(t, bs, "paused", ch)
	p.waitAcked(t, 500, "records acknowledged before the pause")
	victim.Pause()
	paused := true
	defer func() {
		if paused {
			victim.Resume() // so that the cleanup's SIGKILL and stack dump work
		}
	}()
	t.Logf("SIGSTOPped broker %d (leader of paused/0)", victim.ID)
	var others []*BrokerProc
	for _, b := range bs {
		if b != victim {
			others = append(others, b)
		}
	}
	waitFor(t, 60*time.Second, "a new leader and an ISR without the paused broker", func() (bool, error) {
		for _, b := range others {
			ps, err := partitionsOf(b.Addr(), "paused")
			if err != nil {
				return false, err
			}
			if ps[0].Leader == victim.ID || ps[0].Leader < 0 || slices.Contains(ps[0].ISR, victim.ID) {
				return false, fmt.Errorf("broker %d: leader %d isr %v", b.ID, ps[0].Leader, ps[0].ISR)
			}
		}
		return true, nil
	})
	waitClusterFormed(t, others, 2) // its registration went with its session
	p.waitAcked(t, 500, "records acknowledged while the old leader is paused")

	victim.Resume()
	paused = false
	t.Logf("SIGCONTinued broker %d", victim.ID)
	waitClusterFormed(t, bs, 3) // registered again
	waitFullISR(t, bs, "paused", 3)
	p.waitAcked(t, 300, "records acknowledged after it rejoined")
	p.close(t)
	checkHistory(t, bs, "paused", ch, "after pausing the leader past its session timeout")
}
