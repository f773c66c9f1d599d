package integration

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration/history"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Environment of the nemesis test (TestFaultsNemesis); the defaults are the
// short variant that `go test ./integration/` runs.
const (
	// FaultsSeedEnv replays a run: the seed every random choice comes from
	// (default: the clock's, printed at the start).
	FaultsSeedEnv = "KBROKER_FAULTS_SEED"
	// FaultsDurationEnv is how long faults are injected (a Go duration;
	// default 60s).
	FaultsDurationEnv = "KBROKER_FAULTS_DURATION"
	// FaultsKindsEnv is a comma-separated list of fault kinds (default all;
	// see AllFaults).
	FaultsKindsEnv = "KBROKER_FAULTS_KINDS"
)

// faultsConfig reads the nemesis test's environment.
func faultsConfig(t *testing.T) (seed uint64, d time.Duration, kinds []FaultKind) {
	t.Helper()
	seed = uint64(time.Now().UnixNano())
	if s := os.Getenv(FaultsSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", FaultsSeedEnv, s, err)
		}
		seed = v
	}
	d = 60 * time.Second
	if s := os.Getenv(FaultsDurationEnv); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", FaultsDurationEnv, s, err)
		}
		d = v
	}
	kinds, err := ParseFaults(os.Getenv(FaultsKindsEnv))
	if err != nil {
		t.Fatalf("%s: %v", FaultsKindsEnv, err)
	}
	return seed, d, kinds
}

// faultStats is what the nemesis test measured for one fault kind.
type faultStats struct {
	n int
	// acked counts the successes (acknowledged records, committed
	// transactions) while faults of this kind were active.
	acked int
	// recovery is, per injection, the time from the heal to the next
	// success; consumed, to the first poll of a record sent after the
	// heal; healthy, to every replica back in every ISR.
	recovery, consumed, healthy []time.Duration
	// zombie is the longest time a deposed leader went on appending
	// records it never acknowledged (zombieWatch), zombies how many
	// injections had one, and unacked how many offsets they appended.
	zombie           time.Duration
	zombies, unacked int64
}

// faultsTable formats the stats as a Markdown table, one row per kind.
func faultsTable(stats map[FaultKind]*faultStats) string {
	var b strings.Builder
	b.WriteString("| fault | injected | successes during fault | produce recovery (max) | produce recovery (median) | consume recovery (max) | consume recovery (median) | full ISR again (max) | zombie appends (faults, offsets never acknowledged) | zombie window (max) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	for _, k := range AllFaults {
		s := stats[k]
		if s == nil {
			continue
		}
		zombie := "none"
		if s.zombies > 0 {
			zombie = fmt.Sprintf("%d, %d", s.zombies, s.unacked)
		}
		window := "-"
		if s.zombies > 0 {
			window = r(s.zombie).String()
		}
		cmax, cmed := "-", "-" // no consumer (TestFaultsDisk)
		if len(s.consumed) > 0 {
			cmax, cmed = r(maxDur(s.consumed)).String(), r(medianDur(s.consumed)).String()
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %v | %v | %s | %s | %v | %s | %s |\n", k, s.n, s.acked,
			r(maxDur(s.recovery)), r(medianDur(s.recovery)), cmax, cmed, r(maxDur(s.healthy)), zombie, window)
	}
	return b.String()
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func medianDur(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// faultProps are the broker properties of the fault tests: RF 3,
// min.insync.replicas=2, no unclean election.
var faultProps = map[string]string{
	"min.insync.replicas":            "2",
	"default.replication.factor":     "3",
	"unclean.leader.election.enable": "false",
	// KIP-848 members get the 10 s session the classic members of
	// TestFaultsConsumerGroup ask for: a member whose client is gone
	// without leaving (its LeaveGroup lost to a fault) holds its
	// partitions until its session expires, and the consumer-group tests
	// give the group 30 s (drainBound) after the faults to catch up.
	// Kafka's default of 45 s restarts whenever the coordinator moves.
	"group.consumer.session.timeout.ms":        "10000",
	"group.consumer.min.session.timeout.ms":    "10000",
	"group.consumer.heartbeat.interval.ms":     "3000",
	"group.consumer.min.heartbeat.interval.ms": "3000",
}

// TestFaultsNemesis runs a continuous acks=all idempotent producer against
// three brokers (RF 3, min.insync.replicas=2) while a nemesis injects one
// fault at a time, chosen from a printed seed: zombie leader, broker cut
// from ZooKeeper or from its peers, one-way cut, minority/majority split,
// packet loss, delay, kill -9 and SIGSTOP; a consumer tails the topic.
// After each fault it heals, measures how long produce and consume take
// to succeed again and how long a deposed leader went on appending
// records it never acknowledged, and waits for every replica to be back
// in every ISR. At the end every acknowledged record is read back
// exactly once, at the offset it was acknowledged at, in producer order,
// with dense offsets. Replay with KBROKER_FAULTS_SEED; lengthen with
// KBROKER_FAULTS_DURATION; pick faults with KBROKER_FAULTS_KINDS.
func TestFaultsNemesis(t *testing.T) {
	if !inNetns(t) {
		return
	}
	const topic = "faults"
	c, seed, duration, kinds := startFaultCluster(t, topic, 1)
	ch := history.New()
	probe := &consumeProbe{}
	p := startProbedProducer(t, c.Brokers, topic, ch, probe)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	tailConsumer(t, addrsOf(c.Brokers), topic, 3, "tail", nil, stop, &wg, kgo.WithHooks(probe))
	p.waitAcked(t, 100, "records acknowledged before the first fault")

	stats := runNemesis(t, c, NewNemesis(c, seed, kinds), duration, topic, workload{ch.AckedCount, probe})
	close(stop)
	wg.Wait()
	p.close(t)
	checkHistory(t, c.Brokers, topic, ch, fmt.Sprintf("seed %d", seed))
	t.Logf("seed %d faults:\n%s", seed, faultsTable(stats))
}

// startFaultCluster reads the nemesis environment (the duration divided
// by share), logs how to replay the run, and starts three brokers on a
// three-server ZooKeeper ensemble with topic (3 partitions, RF 3) led and
// fully in sync.
func startFaultCluster(t *testing.T, topic string, share int) (c *NetCluster, seed uint64, d time.Duration, kinds []FaultKind) {
	t.Helper()
	seed, d, kinds = faultsConfig(t)
	t.Logf("nemesis seed %d, %v of faults among %v (replay: %s=%d %s=%v %s=%s)", seed, d/time.Duration(share), kinds,
		FaultsSeedEnv, seed, FaultsDurationEnv, d, FaultsKindsEnv, joinKinds(kinds))
	c = StartNetCluster(t, 3, 3, faultProps)
	waitClusterFormed(t, c.Brokers, 3)
	createTopic(t, c.Brokers[0].Addr(), topic, 3, 3, false)
	waitFullISR(t, c.Brokers, topic, 3)
	return c, seed, d / time.Duration(share), kinds
}

// workload is what runNemesis watches: progress counts the writers'
// successes (acknowledged records, committed transactions); probe stamps
// the writers' records and sees the consumers' polls.
type workload struct {
	progress func() int
	probe    *consumeProbe
}

// runNemesis injects faults one at a time for duration (injectAndHeal).
func runNemesis(t *testing.T, c *NetCluster, nem *Nemesis, duration time.Duration, topic string, w workload) map[FaultKind]*faultStats {
	t.Helper()
	stats := map[FaultKind]*faultStats{}
	for end := time.Now().Add(duration); time.Now().Before(end); {
		injectAndHeal(t, c, nem, nem.Next(), topic, w, stats)
	}
	return stats
}

// injectAndHeal is one round of runNemesis: a fault of kind, held 6 to 12
// seconds and then healed. After the heal it measures how long progress
// takes to move again (produce recovery) and, with a probe, how long
// until a consumer polls a record sent after the heal (consume recovery),
// then waits until every broker is ready and every partition of topic has
// its full ISR. While the fault is held a zombieWatch samples the
// partitions' leaders of the fault's start. The zombie's victim is a
// leader of a partition of topic. Everything goes into stats.
func injectAndHeal(t *testing.T, c *NetCluster, nem *Nemesis, kind FaultKind, topic string, w workload, stats map[FaultKind]*faultStats) *Fault {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrsOf(c.Brokers)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	leaders := leadersOf(t, c.Brokers[0], topic)
	zw, err := startZombieWatch(cl, c.Brokers, c.Brokers[0], topic)
	if err != nil {
		t.Fatalf("watching the leaders of %s: %v", topic, err)
	}
	f, err := nem.Inject(kind, leaders[nem.Intn(len(leaders))])
	if err != nil {
		zw.halt()
		t.Fatalf("injecting %s: %v", kind, err)
	}
	hold := 6*time.Second + time.Duration(nem.Intn(6000))*time.Millisecond
	before := w.progress()
	t.Logf("fault %s: %s, held %v", kind, f.What, hold)
	<-time.After(hold) // the fault's own duration, not a wait for a condition
	during := w.progress() - before
	zw.halt()
	if err := f.Heal(); err != nil {
		t.Fatalf("healing %s: %v", kind, err)
	}
	healed, at := time.Now(), w.progress()
	var mark int64
	if w.probe != nil {
		mark = w.probe.mark()
	}
	var recovered, consumed time.Duration
	waitFor(t, 2*time.Minute, fmt.Sprintf("progress and a record sent after healing %s polled", kind), func() (bool, error) {
		if recovered == 0 && w.progress() > at {
			recovered = time.Since(healed)
		}
		if consumed == 0 && w.probe != nil && w.probe.readSince(mark) {
			consumed = time.Since(healed)
		}
		return recovered > 0 && (consumed > 0 || w.probe == nil), fmt.Errorf("produce recovered after %v, consume after %v (0: not yet)", recovered, consumed)
	})
	for _, b := range c.Brokers {
		waitReady(t, b)
	}
	waitFullISR(t, c.Brokers, topic, 3)
	zr, err := zw.result(c.Brokers[0])
	if err != nil {
		t.Fatalf("after healing %s: %v", kind, err)
	}
	s := stats[kind]
	if s == nil {
		s = &faultStats{}
		stats[kind] = s
	}
	s.n++
	s.acked += during
	s.recovery = append(s.recovery, recovered)
	if w.probe != nil {
		s.consumed = append(s.consumed, consumed)
	}
	s.healthy = append(s.healthy, time.Since(healed))
	if zr.unacked > 0 {
		s.zombies++
		s.unacked += zr.unacked
		s.zombie = max(s.zombie, zr.window)
	}
	for _, l := range zr.lines {
		t.Logf("zombie: %s", l)
	}
	t.Logf("healed %s: progress again after %v, a record sent after the heal polled after %v, full ISR after %v",
		kind, recovered.Round(time.Millisecond), consumed.Round(time.Millisecond), time.Since(healed).Round(time.Millisecond))
	return f
}

func joinKinds(kinds []FaultKind) string {
	var s []string
	for _, k := range kinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ",")
}

// TestZombieLeaderAcks1LosesWrites proves the checker can fail: with
// acks=1 a leader cut from ZooKeeper and its peers (clients still reach it)
// goes on acknowledging writes the rest of the cluster never sees. Once the
// controller has elected a new leader, the records the zombie acknowledged
// from then on are truncated away when it rejoins as a follower, and the
// history checker must report them lost. The producer knows only the
// zombie and never refreshes its metadata, as a client that sees no error
// has no reason to.
func TestZombieLeaderAcks1LosesWrites(t *testing.T) {
	if !inNetns(t) {
		return
	}
	c := StartNetCluster(t, 3, 1, faultProps)
	waitClusterFormed(t, c.Brokers, 3)
	const topic = "zombie"
	createTopic(t, c.Brokers[0].Addr(), topic, 1, 3, false)
	zombie := byID(c.Brokers, waitFullISR(t, c.Brokers, topic, 3)[0])
	ch := history.New()
	p := startAcks1Producer(t, zombie, topic, ch)
	p.waitAcked(t, 100, "acks=1 records acknowledged before the cut")

	f, err := NewNemesis(c, 0, AllFaults).Inject(FaultZombie, zombie.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("zombie: %s", f.What)
	var others []*BrokerProc
	for _, b := range c.Brokers {
		if b != zombie {
			others = append(others, b)
		}
	}
	waitFor(t, time.Minute, "a new leader elected without the zombie", func() (bool, error) {
		ps, err := partitionsOf(others[0].Addr(), topic)
		if err != nil {
			return false, err
		}
		return ps[0].Leader >= 0 && ps[0].Leader != zombie.ID, fmt.Errorf("%+v", ps[0])
	})
	p.waitAcked(t, 100, "acks=1 records the zombie acknowledged after the new leader's election")
	if err := f.Heal(); err != nil {
		t.Fatal(err)
	}
	p.close(t)
	waitReady(t, zombie)
	waitFullISR(t, c.Brokers, topic, 3)
	rep := ch.Check(readAll(t, c.Brokers, topic), true)
	if len(rep.Lost) == 0 {
		t.Fatalf("acks=1 under a zombie leader: the checker found no lost record (%d acknowledged, %d read): %v", rep.Acked, rep.Read, rep.Err())
	}
	t.Logf("as expected, the checker finds %d of %d acknowledged records lost, e.g. %s", len(rep.Lost), rep.Acked, rep.Lost[0])
}

// startAcks1Producer is startProducer with acks=1, no idempotence, seeded
// with b alone and with metadata that never ages.
func startAcks1Producer(t *testing.T, b *BrokerProc, topic string, ch *history.Checker) *producer {
	t.Helper()
	return startProducerOpts(t, []*BrokerProc{b}, topic, ch,
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.MetadataMinAge(time.Hour), kgo.MetadataMaxAge(time.Hour))
}
