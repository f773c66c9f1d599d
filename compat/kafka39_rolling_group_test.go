package compat

// The consumer-group side of the rolling migration (issue 24): a group of
// two member slots consumes rollingTopic through the whole roll, its
// members leaving and being replaced every few seconds (a rebalance each
// time) and committing after every poll, while its coordinator moves
// between Kafka 3.9 and kbroker. The group checker then finds no
// committed offset moving back, no new owner starting below the committed
// offset, and no acknowledged record below the final commit unread.

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kbroker/kbroker/integration"
	"github.com/kbroker/kbroker/integration/history"
)

// rollingMembersGroup is the group of the member slots (grp of the
// rolling test only commits fixed offsets).
const rollingMembersGroup = "rolling-members"

// rollingGroup runs the member slots until stopped.
type rollingGroup struct {
	seeds func() []string // where a new member bootstraps
	gc    *history.GroupChecker
	stopc chan struct{}
	wg    sync.WaitGroup

	mu   sync.Mutex
	errs []error
}

// startRollingGroup starts two member slots; they are stopped at test
// cleanup if the test did not stop them.
func startRollingGroup(t *testing.T, seeds func() []string) *rollingGroup {
	t.Helper()
	g := &rollingGroup{seeds: seeds, gc: history.NewGroupChecker(), stopc: make(chan struct{})}
	for slot := range 2 {
		g.wg.Add(1)
		go g.slot(slot)
	}
	t.Cleanup(g.halt)
	return g
}

// halt stops the members and waits for them; it is idempotent.
func (g *rollingGroup) halt() {
	select {
	case <-g.stopc:
	default:
		close(g.stopc)
	}
	g.wg.Wait()
}

// slot runs members one after another, each living 3 to 8 seconds.
func (g *rollingGroup) slot(slot int) {
	defer g.wg.Done()
	rng := rand.New(rand.NewPCG(24, uint64(slot)))
	for gen := 1; ; gen++ {
		select {
		case <-g.stopc:
			return
		default:
		}
		name := fmt.Sprintf("m%d.%d", slot, gen)
		if err := g.member(name, 3*time.Second+time.Duration(rng.IntN(5000))*time.Millisecond); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, fmt.Errorf("member %s: %w", name, err))
			g.mu.Unlock()
		}
	}
}

// member is one member's life (integration.RunGroupMember).
func (g *rollingGroup) member(name string, lifetime time.Duration) error {
	return integration.RunGroupMember(g.seeds(), rollingMembersGroup, rollingTopic, name, lifetime, g.gc, g.stopc)
}

// stop ends the members and checks the group against the producer's
// acknowledgements and the group's final committed offsets, fetched
// through the broker at addr.
func (g *rollingGroup) stop(t *testing.T, addr string, acks []ack) {
	t.Helper()
	g.halt()
	g.mu.Lock()
	for _, err := range g.errs {
		t.Logf("group: %v", err)
	}
	g.mu.Unlock()
	final := map[history.TP]int64{}
	adm := newAdmin(t, addr)
	waitFor(t, opTimeout, "the group's final committed offsets", func() bool {
		offs, err := adm.FetchOffsets(testCtx(t), rollingMembersGroup)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			return false
		}
		offs.Each(func(o kadm.OffsetResponse) { final[history.TP{Topic: o.Topic, Partition: o.Partition}] = o.At })
		return true
	})
	var acked []history.Record
	for _, a := range acks {
		acked = append(acked, history.Record{TP: history.TP{Topic: rollingTopic, Partition: a.partition}, Offset: a.offset, Value: a.value})
	}
	rep := g.gc.Check(acked, final)
	t.Logf("group %s through the roll: %d successful commits, %d records polled, final committed %v", rollingMembersGroup, rep.Commits, rep.Polled, final)
	if err := rep.Err(); err != nil {
		t.Errorf("group %s: %v", rollingMembersGroup, err)
	}
	if rep.Commits == 0 {
		t.Errorf("group %s committed nothing", rollingMembersGroup)
	}
}
