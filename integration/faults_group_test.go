package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration/history"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupMember runs one slot of a consumer group: a client that joins,
// polls, commits what it polled after every poll and when its partitions
// are revoked, and after a random lifetime leaves so that a new member
// (a new name) takes the slot. Everything goes to a GroupChecker.
func groupMember(t *testing.T, seeds []string, group, topic string, slot int, seed uint64, kip848 bool, gc *history.GroupChecker, probe *consumeProbe, stop <-chan struct{}, wg *sync.WaitGroup) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(100+slot)))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for gen := 1; ; gen++ {
			select {
			case <-stop:
				return
			default:
			}
			name := fmt.Sprintf("m%d.%d", slot, gen)
			lifetime := 5*time.Second + time.Duration(rng.IntN(10000))*time.Millisecond
			opts := []kgo.Opt{kgo.WithHooks(probe)}
			if kip848 {
				// franz-go runs the KIP-848 protocol with a server-side
				// balancer and the range or sticky balancer named.
				opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
			}
			if err := RunGroupMember(seeds, group, topic, name, lifetime, gc, stop, opts...); err != nil {
				t.Logf("member %s: %v", name, err)
			}
		}
	}()
}

// TestFaultsConsumerGroup runs an acks=all producer and a consumer group of
// three member slots whose members leave and are replaced every 5 to 15
// seconds, committing after every poll and on revocation, while the
// nemesis injects faults (same seed and environment as TestFaultsNemesis;
// the duration halved). The group checker then finds no committed offset
// moving back, no new owner starting below the committed offset, and no
// acknowledged record below the final committed offset that no member
// polled; the produce history is checked as in TestFaultsNemesis. For
// liveness, the members keep consuming after the producer stops and must
// commit every acknowledged record within drainBound.
func TestFaultsConsumerGroup(t *testing.T) {
	if !inNetns(t) {
		return
	}
	runGroupFaults(t, "grp", "faults-group", false)
}

// TestFaultsConsumerGroup848 is TestFaultsConsumerGroup with a KIP-848
// consumer group: the broker's consumer coordinator assigns partitions
// through ConsumerGroupHeartbeat, and commits carry member epochs.
func TestFaultsConsumerGroup848(t *testing.T) {
	if !inNetns(t) {
		return
	}
	runGroupFaults(t, "grp848", "faults-group-848", true)
}

// runGroupFaults is the consumer-group fault test of topic and group.
func runGroupFaults(t *testing.T, topic, group string, kip848 bool) {
	c, seed, duration, kinds := startFaultCluster(t, topic, 2)
	seeds := addrsOf(c.Brokers)
	ch := history.New()
	probe := &consumeProbe{}
	p := startProbedProducer(t, c.Brokers, topic, ch, probe)
	gc := history.NewGroupChecker()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for slot := range 3 {
		groupMember(t, seeds, group, topic, slot, seed, kip848, gc, probe, stop, &wg)
	}
	p.waitAcked(t, 100, "records acknowledged before the first fault")
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	if kip848 {
		// The members run the KIP-848 protocol, not a fallback to the
		// classic one: once they joined, the broker lists the group as a
		// consumer group. (franz-go falls back to the classic protocol if
		// ConsumerGroupHeartbeat is refused, e.g. with group.version 0.)
		waitFor(t, 30*time.Second, "the group listed as a KIP-848 (consumer) group", func() (bool, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			listed, err := kadm.NewClient(admCl).ListGroups(ctx)
			if err != nil {
				return false, err
			}
			lg := listed[group]
			return lg.GroupType == "consumer", fmt.Errorf("listed as %+v", lg)
		})
	}

	stats := runNemesis(t, c, NewNemesis(c, seed, kinds), duration, topic, workload{ch.AckedCount, probe})
	// The producer stops first and the members then get drainBound to
	// commit every acknowledged record (liveness, checked below). The
	// producer's sticky partitioner writes one partition at a time (64 KiB
	// stints), so when the members stopped first, the partition it turned
	// to last got its records only after them and was left unconsumed for
	// want of consumers, which looked like a group that never assigned it.
	p.close(t)
	ends := map[history.TP]int64{}
	for _, r := range ch.AckedRecords() {
		ends[r.TP] = max(ends[r.TP], r.Offset+1)
	}
	lagging, drainTook := drainGroup(admCl, group, ends, drainBound)
	close(stop)
	wg.Wait()
	checkHistory(t, c.Brokers, topic, ch, fmt.Sprintf("seed %d", seed))
	if len(lagging) > 0 {
		t.Fatalf("seed %d: %s after the producer stopped (faults healed), the group's committed offsets were still behind the acknowledged ends %v: %v",
			seed, drainBound, ends, lagging)
	}
	t.Logf("the group committed every acknowledged record %s after the producer stopped", drainTook.Round(time.Millisecond))

	final := map[history.TP]int64{}
	waitFor(t, time.Minute, "the group's committed offsets", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		offs, err := kadm.NewClient(admCl).FetchOffsets(ctx, group)
		if err == nil {
			err = offs.Error()
		}
		if err != nil {
			return false, err
		}
		offs.Each(func(o kadm.OffsetResponse) {
			final[history.TP{Topic: o.Topic, Partition: o.Partition}] = o.At
		})
		return true, nil
	})
	rep := gc.Check(ch.AckedRecords(), final)
	t.Logf("group: %d successful commits, %d records polled, final committed %v", rep.Commits, rep.Polled, final)
	if err := rep.Err(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if rep.Commits == 0 {
		t.Fatalf("seed %d: the group committed nothing", seed)
	}
	t.Logf("seed %d faults:\n%s", seed, faultsTable(stats))
}

// drainBound is how long after the producer stops the group may take to
// commit every acknowledged record.
const drainBound = 30 * time.Second

// drainGroup waits up to bound for group's committed offsets to reach
// ends; it returns the partitions still behind (committed offset, -1 if
// none) and how long it waited.
func drainGroup(admCl *kgo.Client, group string, ends map[history.TP]int64, bound time.Duration) (map[history.TP]int64, time.Duration) {
	start := time.Now()
	for {
		lagging := map[history.TP]int64{}
		for tp := range ends {
			lagging[tp] = -1
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		offs, err := kadm.NewClient(admCl).FetchOffsets(ctx, group)
		cancel()
		if err == nil && offs.Error() == nil {
			offs.Each(func(o kadm.OffsetResponse) {
				tp := history.TP{Topic: o.Topic, Partition: o.Partition}
				if end, ok := ends[tp]; ok {
					if o.At >= end {
						delete(lagging, tp)
					} else {
						lagging[tp] = o.At
					}
				}
			})
		}
		if len(lagging) == 0 || time.Since(start) >= bound {
			return lagging, time.Since(start)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
