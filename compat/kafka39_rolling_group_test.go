package compat

// The consumer-group side of the rolling migration (issue 24): a group of
// two member slots consumes rollingTopic through the whole roll, its
// members leaving and being replaced every few seconds (a rebalance each
// time) and committing after every poll, while its coordinator moves
// between Kafka 3.9 and kbroker. The group checker then finds no
// committed offset moving back, no new owner starting below the committed
// offset, and no acknowledged record below the final commit unread.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/integration/history"
)

// rollingMembersGroup is the group of the member slots (grp of the
// rolling test only commits fixed offsets).
const rollingMembersGroup = "rolling-members"

// rollingGroup runs the member slots until stopped.
type rollingGroup struct {
	seeds []string
	gc    *history.GroupChecker
	stopc chan struct{}
	wg    sync.WaitGroup

	mu   sync.Mutex
	errs []error
}

// startRollingGroup starts two member slots; they are stopped at test
// cleanup if the test did not stop them.
func startRollingGroup(t *testing.T, seeds []string) *rollingGroup {
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

// member is one member's life: it polls, commits what it polled after
// every poll and when its partitions are revoked, and leaves.
func (g *rollingGroup) member(name string, lifetime time.Duration) error {
	commit := func(ctx context.Context, cl *kgo.Client) {
		offs := cl.UncommittedOffsets()
		if len(offs) == 0 {
			return
		}
		sent := g.gc.CommitSent()
		ok := map[history.TP]int64{}
		cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				return
			}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode == 0 {
						ok[history.TP{Topic: rt.Topic, Partition: rp.Partition}] = offs[rt.Topic][rp.Partition].Offset
					}
				}
			}
		})
		g.gc.Committed(name, sent, ok)
	}
	tps := func(m map[string][]int32) []history.TP {
		var out []history.TP
		for topic, ps := range m {
			for _, p := range ps {
				out = append(out, history.TP{Topic: topic, Partition: p})
			}
		}
		return out
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.seeds...), kgo.ConsumerGroup(rollingMembersGroup), kgo.ConsumeTopics(rollingTopic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { g.gc.Assigned(name, tps(m)...) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, m map[string][]int32) {
			commit(ctx, c)
			g.gc.Revoked(name, tps(m)...)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { g.gc.Revoked(name, tps(m)...) }))
	if err != nil {
		return err
	}
	defer cl.Close() // runs the revoke callback, which commits
	end := time.After(lifetime)
	for {
		select {
		case <-g.stopc:
			return nil
		case <-end:
			return nil
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			g.gc.Polled(name, history.Record{TP: history.TP{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset, Value: string(r.Value)})
		})
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		commit(ctx, cl)
		cancel()
	}
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
