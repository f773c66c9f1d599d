package integration

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
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
	// acked counts the records acknowledged while faults of this kind
	// were active.
	acked int
	// recovery is, per injection, the time from the heal to the next
	// acknowledged produce; healthy, to every replica back in every ISR.
	recovery, healthy []time.Duration
}

// table formats the stats as a Markdown table, one row per kind.
func faultsTable(stats map[FaultKind]*faultStats) string {
	var b strings.Builder
	b.WriteString("| fault | injected | successes during fault | produce recovery (max) | produce recovery (median) | full ISR again (max) |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, k := range AllFaults {
		s := stats[k]
		if s == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %v | %v | %v |\n", k, s.n, s.acked,
			maxDur(s.recovery).Round(10*time.Millisecond), medianDur(s.recovery).Round(10*time.Millisecond),
			maxDur(s.healthy).Round(10*time.Millisecond))
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
// packet loss, kill -9 and SIGSTOP. After each fault it heals, measures
// how long produce takes to succeed again and waits for every replica to
// be back in every ISR. At the end every acknowledged record is read back
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
	p := startProducer(t, c.Brokers, topic, ch)
	p.waitAcked(t, 100, "records acknowledged before the first fault")

	stats := runNemesis(t, c, NewNemesis(c, seed, kinds), duration, topic, ch.AckedCount)
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

// runNemesis injects faults one at a time for duration, each held 6 to 12
// seconds and then healed; after each heal it measures how long progress
// (a count of successes: acknowledged records, committed transactions)
// takes to move again and waits until every broker is ready and every
// partition of topic has its full ISR. The zombie's victim is a leader of
// a partition of topic.
func runNemesis(t *testing.T, c *NetCluster, nem *Nemesis, duration time.Duration, topic string, progress func() int) map[FaultKind]*faultStats {
	t.Helper()
	stats := map[FaultKind]*faultStats{}
	for end := time.Now().Add(duration); time.Now().Before(end); {
		injectAndHeal(t, c, nem, nem.Next(), topic, progress, stats)
	}
	return stats
}

// injectAndHeal is one round of runNemesis: a fault of kind, held 6 to 12
// seconds, healed, and measured into stats.
func injectAndHeal(t *testing.T, c *NetCluster, nem *Nemesis, kind FaultKind, topic string, progress func() int, stats map[FaultKind]*faultStats) *Fault {
	t.Helper()
	leaders := leadersOf(t, c.Brokers[0], topic)
	f, err := nem.Inject(kind, leaders[nem.Intn(len(leaders))])
	if err != nil {
		t.Fatalf("injecting %s: %v", kind, err)
	}
	hold := 6*time.Second + time.Duration(nem.Intn(6000))*time.Millisecond
	before := progress()
	t.Logf("fault %s: %s, held %v", kind, f.What, hold)
	<-time.After(hold) // the fault's own duration, not a wait for a condition
	during := progress() - before
	if err := f.Heal(); err != nil {
		t.Fatalf("healing %s: %v", kind, err)
	}
	healed, at := time.Now(), progress()
	waitFor(t, 2*time.Minute, fmt.Sprintf("progress after healing %s", kind), func() (bool, error) {
		return progress() > at, errNotYet
	})
	recovered := time.Since(healed)
	for _, b := range c.Brokers {
		waitReady(t, b)
	}
	waitFullISR(t, c.Brokers, topic, 3)
	s := stats[kind]
	if s == nil {
		s = &faultStats{}
		stats[kind] = s
	}
	s.n++
	s.acked += during
	s.recovery = append(s.recovery, recovered)
	s.healthy = append(s.healthy, time.Since(healed))
	t.Logf("healed %s: progress again after %v, full ISR after %v", kind, recovered.Round(time.Millisecond), time.Since(healed).Round(time.Millisecond))
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
