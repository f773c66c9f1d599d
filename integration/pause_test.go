package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration/history"
)

// TestPausedLeaderLosesSessionAndRejoins: a SIGSTOPped leader (RF=3,
// min.insync.replicas=2, a continuous acks=all idempotent producer) loses
// its ZooKeeper session; the controller moves the leadership to an ISR
// member and the ISR drops the paused broker while the producer goes on.
// Resumed, the broker finds its session expired, registers again (a new
// broker epoch), follows the new leader (truncating whatever it appended
// alone, none of which was acknowledged) and rejoins the ISR. Every
// acknowledged record is read back exactly once and in order.
func TestPausedLeaderLosesSessionAndRejoins(t *testing.T) {
	z := StartZooKeeper(t)
	bs := StartCluster(t, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3"})
	waitClusterFormed(t, bs, 3)
	createTopic(t, bs[0].Addr(), "pause", 3, 3, false)
	leaders := waitFullISR(t, bs, "pause", 3)
	ch := history.New()
	p := startProducer(t, bs, "pause", ch)
	p.waitAcked(t, 200, "records acknowledged before the pause")

	victim := byID(bs, leaders[0])
	registrations := func() int { return strings.Count(victim.Log(), `msg="registered broker"`) }
	if n := registrations(); n != 1 {
		t.Fatalf("broker %d registered %d times before the pause", victim.ID, n)
	}
	victim.Pause()
	t.Logf("SIGSTOPped broker %d (leader of pause/0)", victim.ID)
	var others []*BrokerProc
	for _, b := range bs {
		if b != victim {
			others = append(others, b)
		}
	}
	waitFor(t, 60*time.Second, "pause/0 led and in sync without the paused broker", func() (bool, error) {
		for _, b := range others {
			ps, err := partitionsOf(b.Addr(), "pause")
			if err != nil {
				return false, err
			}
			for _, pp := range ps {
				if pp.Partition == 0 && (pp.Leader < 0 || pp.Leader == victim.ID || slices.Contains(pp.ISR, victim.ID)) {
					return false, fmt.Errorf("broker %d: %+v", b.ID, pp)
				}
			}
		}
		return true, nil
	})
	p.waitAcked(t, 200, "records acknowledged while the old leader is paused")

	victim.Resume()
	t.Logf("SIGCONTed broker %d", victim.ID)
	waitFor(t, 60*time.Second, "the resumed broker to register again", func() (bool, error) {
		n := registrations()
		return n >= 2, fmt.Errorf("%d registrations", n)
	})
	waitClusterFormed(t, bs, 3)
	waitFullISR(t, bs, "pause", 3)
	p.waitAcked(t, 100, "records acknowledged after the resume")
	p.close(t)
	checkHistory(t, bs, "pause", ch, "after a paused leader's return")
}
