package replica

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// Producers write acks=all continuously while the leader dies and a
// follower from the ISR takes over: every acknowledged record is in the new
// leader's log at the offset it was acknowledged with, and the surviving
// follower ends identical to it.
func TestAcknowledgedSurviveLeaderFailover(t *testing.T) {
	c := newTestCluster(t, 3, fastRC(10*time.Second), false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	type ack struct {
		v   string
		off int64
	}
	var (
		mu    sync.Mutex
		acked []ack
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := fmt.Sprintf("w%d-%d", w, i)
				leader := c.state(0).Leader
				res := c.produce(leader, 0, -1, v, 2*time.Second)
				if res.Err == nil {
					mu.Lock()
					acked = append(acked, ack{v, res.BaseOffset})
					mu.Unlock()
				}
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor(t, "acks before the failover", func() bool { return count() >= 200 })
	c.broker(1).stop()
	isr := slices.DeleteFunc(c.state(0).ISR, func(id int32) bool { return id == 1 })
	c.elect(0, 2, isr, all, 2, 3)
	before := count()
	waitFor(t, "acks after the failover", func() bool { return count() >= before+200 })
	close(stop)
	wg.Wait()
	c.waitReplicated(2, 3)
	c.wantIdentical(2, 3)
	vals := c.values(2, 0)
	start := c.part(2, 0).Log.LogStartOffset()
	for _, a := range acked {
		if i := a.off - start; i < 0 || i >= int64(len(vals)) || vals[i] != a.v {
			t.Fatalf("acknowledged %q at offset %d is not in the new leader's log", a.v, a.off)
		}
	}
	t.Logf("%d acknowledged records, %d in the log", len(acked), len(vals))
}
