package compat

// BenchmarkKafkaClusterScale runs integration's BenchmarkClusterScale
// operations (integration/cluster_scale_bench_test.go) on a 3-broker Apache
// Kafka 3.9 cluster in ZooKeeper mode and, in the same run, on three
// kbrokers, and prints the figures side by side with kbroker's ratio to
// Kafka (issue 26: "30k partitions: controller failover < 5 s, controlled
// shutdown < 10 s"). The clusters run one after the other, each on a
// ZooKeeper of its own (Kafka under the chroot /kafka39), so that neither
// pays for the other's idle work; sub-benchmarks "kbroker" and "kafka39"
// run one alone.
//
// The same knobs as BenchmarkClusterScale: KBROKER_BENCH_CLUSTER_TOPICS
// topics (default 300) of KBROKER_BENCH_PARTITIONS partitions (default
// 100) at RF 3, min.insync.replicas=2, zookeeper.session.timeout.ms from
// KBROKER_BENCH_ZK_SESSION_MS (default Kafka's 18 s; integration's
// ZooKeeper caps what it grants at its maxSessionTimeout), and for both
// the settings of integration.StartCluster that bear on these operations
// (see props below). Kafka's JVM gets a fixed heap of
// KBROKER_BENCH_KAFKA_HEAP (default 1g) and Kafka's defaults otherwise.
// Per cluster, measured the same way as
// BenchmarkClusterScale (each broker's own Metadata, raw requests):
//
//   - CreateTopics (10 topics a request) until every broker's Metadata
//     shows every ISR full;
//   - kill -9 of the controller until a survivor's Metadata names a live
//     leader for every partition, split at the moment a survivor holds
//     /controller in ZooKeeper (the dead controller's session expiry and
//     the election) and the rest (the new controller's failover and its
//     elections reaching the brokers);
//   - the killed broker's restart until it is back in every ISR;
//   - controlled shutdown: SIGTERM to exit of the non-controller that leads
//     the most partitions, then until a survivor names a live leader for
//     every partition, and its restart until it is back in every ISR;
//   - a rolling restart (each broker in turn: SIGTERM, start, until every
//     broker's Metadata shows every ISR full, as an operator would wait)
//     under an acks=all idempotent producer (integration.AckWatch): its
//     duration, the producer's longest gap between acknowledgements and its
//     failed records (none may fail on kbroker; Kafka's are reported),
//     beside the same producer's rate in a window of
//     KBROKER_BENCH_STEADY_SECS (default 20; 0 leaves it out) just before,
//     with no restart: each cluster's own steady state.
//     KBROKER_BENCH_CLUSTER_ROLLING=0 skips it.
//
//	go test ./compat/ -run '^$' -bench BenchmarkKafkaClusterScale -benchtime 1x -timeout 60m
//
// Kafka keeps a descriptor open per log segment (the .log file; its
// indexes are memory maps), so each broker holds about one per partition
// replica: the report gives each broker's count once the topics exist.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/integration"
)

// scaleBroker is one broker of a cluster BenchmarkKafkaClusterScale drives.
type scaleBroker struct {
	id        int32
	addr      string
	kill      func()                    // kill -9, returning once it is gone
	restart   func()                    // start again on the same port and data
	term      func(time.Duration) error // SIGTERM, returning once it exited
	openFiles func() int
}

// scaleCluster is a 3-broker cluster and its ZooKeeper (at its chroot).
type scaleCluster struct {
	name    string
	zk      *zkclient.Client
	brokers []scaleBroker
}

// addrs are the brokers' addresses but down's (-1: all of them).
func (c scaleCluster) addrs(down int32) []string {
	var out []string
	for _, sb := range c.brokers {
		if sb.id != down {
			out = append(out, sb.addr)
		}
	}
	return out
}

// broker is the broker with id.
func (c scaleCluster) broker(b *testing.B, id int32) scaleBroker {
	for _, sb := range c.brokers {
		if sb.id == id {
			return sb
		}
	}
	b.Fatalf("%s: no broker %d", c.name, id)
	return scaleBroker{}
}

// controller waits until /controller names a broker other than not (-1:
// any) and returns it.
func (c scaleCluster) controller(b *testing.B, not int32) int32 {
	b.Helper()
	id := int32(-1)
	waitFor(b, 10*time.Minute, c.name+": a controller in ZooKeeper", func() bool {
		data, _, err := c.zk.Get(zkdata.ControllerPath)
		if err != nil {
			if !errors.Is(err, zk.ErrNoNode) {
				b.Logf("%s: reading /controller: %v", c.name, err)
			}
			return false
		}
		reg, err := zkdata.DecodeControllerRegistration(data)
		if err != nil {
			b.Fatalf("%s: /controller: %v", c.name, err)
		}
		id = reg.BrokerID
		return id != not
	})
	return id
}

// scaleResult is what one cluster measured.
type scaleResult struct {
	createAcked, create    time.Duration
	dead                   int32
	controllerMoved        time.Duration // kill -9 until a survivor holds /controller
	failover, rejoin       time.Duration
	victim                 int32
	victimLed              int
	shutdown, leadersMoved time.Duration
	victimRejoin           time.Duration
	rolling                time.Duration // zero: skipped
	ackGap                 integration.AckGap
	acked, failed          int64 // during the rolling restart
	// steadyAcked records were acknowledged in the steady window of the
	// same producer before the rolling restart.
	steady                time.Duration
	steadyAcked           int64
	openFiles             []int // per broker, once every ISR is full
	loadBefore, loadAfter string
}

// BenchmarkKafkaClusterScale is described at the top of this file.
func BenchmarkKafkaClusterScale(b *testing.B) {
	topics := integration.EnvInt(b, "KBROKER_BENCH_CLUSTER_TOPICS", 300)
	perTopic := integration.EnvInt(b, "KBROKER_BENCH_PARTITIONS", 100)
	session := integration.EnvInt(b, "KBROKER_BENCH_ZK_SESSION_MS", 18000)
	heap := cmp.Or(os.Getenv("KBROKER_BENCH_KAFKA_HEAP"), "1g")
	// Both clusters get BenchmarkClusterScale's properties and those of
	// integration.StartCluster's defaults that bear on these operations
	// (Kafka's own defaults: a 30 s replica lag, controlled shutdown
	// retried 3 times 5 s apart, leaders moved back every 5 minutes).
	props := map[string]string{
		"zookeeper.session.timeout.ms":         strconv.Itoa(session),
		"min.insync.replicas":                  "2",
		"default.replication.factor":           "3",
		"replica.lag.time.max.ms":              "5000",
		"controlled.shutdown.retry.backoff.ms": "200",
		"controlled.shutdown.max.retries":      "20",
		"auto.leader.rebalance.enable":         "false",
	}
	results := map[string]scaleResult{}

	b.Run("kbroker", func(b *testing.B) {
		z := integration.StartZooKeeper(b)
		c := scaleCluster{name: "kbroker", zk: dialRollingZK(b, z, integration.ClusterChroot)}
		for _, bp := range integration.StartCluster(b, z, 3, props) {
			c.brokers = append(c.brokers, scaleBroker{id: bp.ID, addr: bp.Addr(), kill: bp.Kill, restart: bp.Restart, term: bp.Term,
				openFiles: func() int { return integration.OpenFiles(bp.Pid()) }})
		}
		results[c.name] = measureScale(b, c, topics, perTopic)
	})
	b.Run("kafka39", func(b *testing.B) {
		z := integration.StartZooKeeper(b)
		extra := maps.Clone(props)
		extra["offsets.topic.replication.factor"] = "3"
		extra["transaction.state.log.replication.factor"] = "3"
		extra["transaction.state.log.min.isr"] = "2"
		jvm := kafka39JVM{xmx: heap, xms: heap, gc: "-XX:+UseSerialGC", startTimeout: 10 * time.Minute}
		var c scaleCluster
		for i := range int32(3) {
			id := i + 1
			logDir, port := filepath.Join(b.TempDir(), "data"), freePort(b)
			k := startKafka39JVM(b, z, "/kafka39", id, logDir, port, extra, jvm)
			c.brokers = append(c.brokers, scaleBroker{id: id, addr: k.Addr(), kill: func() { k.kill() },
				restart:   func() { k = startKafka39JVM(b, z, "/kafka39", id, logDir, port, extra, jvm) },
				term:      func(d time.Duration) error { return k.term(d) },
				openFiles: func() int { return k.openFiles() }})
		}
		c.name, c.zk = "kafka39", dialRollingZK(b, z, "/kafka39")
		results[c.name] = measureScale(b, c, topics, perTopic)
	})
	var names []string // those measured, kbroker first
	for _, n := range []string{"kbroker", "kafka39"} {
		if _, ok := results[n]; ok {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		fmt.Fprint(os.Stderr, scaleReport(names, results, topics, perTopic, session, heap))
	}
}

// measureScale runs the operations on c (see the top of the file).
func measureScale(b *testing.B, c scaleCluster, topics, perTopic int) scaleResult {
	b.Helper()
	steady := time.Duration(integration.EnvInt(b, "KBROKER_BENCH_STEADY_SECS", 20)) * time.Second
	total := topics * perTopic
	timed := func(f func()) time.Duration {
		t0 := time.Now()
		f()
		return time.Since(t0)
	}
	waitFull := func() { integration.WaitScale(b, c.addrs(-1), -1, total, true) }
	r := scaleResult{loadBefore: loadAvg()}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs(-1)...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	r.create = timed(func() {
		r.createAcked = timed(func() {
			if err := integration.CreateScaleTopics(context.Background(), adm, integration.ScaleTopicNames(topics), perTopic); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
		})
		waitFull()
	})
	for _, sb := range c.brokers {
		r.openFiles = append(r.openFiles, sb.openFiles())
	}

	// Controller failover.
	r.dead = c.controller(b, -1)
	dead := c.broker(b, r.dead)
	r.failover = timed(func() {
		r.controllerMoved = timed(func() {
			dead.kill()
			c.controller(b, r.dead)
		})
		integration.WaitScale(b, c.addrs(r.dead), r.dead, total, false)
	})
	r.rejoin = timed(func() { dead.restart(); waitFull() })

	// Controlled shutdown of the non-controller that leads the most.
	ctrl := c.controller(b, -1)
	m, err := adm.Metadata(context.Background())
	if err != nil {
		b.Fatalf("%s: Metadata: %v", c.name, err)
	}
	led := map[int32]int{}
	for _, td := range m.Topics {
		for _, p := range td.Partitions {
			led[p.Leader]++
		}
	}
	r.victim = -1
	for _, sb := range c.brokers {
		if sb.id != ctrl && (r.victim < 0 || led[sb.id] > led[r.victim]) {
			r.victim = sb.id
		}
	}
	r.victimLed = led[r.victim]
	victim := c.broker(b, r.victim)
	integration.SyncDisks()
	r.shutdown = timed(func() {
		if err := victim.term(10 * time.Minute); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
	})
	r.leadersMoved = timed(func() { integration.WaitScale(b, c.addrs(r.victim), r.victim, total, false) })
	r.victimRejoin = timed(func() { victim.restart(); waitFull() })

	if os.Getenv("KBROKER_BENCH_CLUSTER_ROLLING") != "0" {
		w := integration.StartAckWatch(b, c.addrs(-1), integration.ScaleTopicNames(1)[0])
		if steady > 0 {
			// The same producer with no restart, to compare the
			// rolling restart's rate with each cluster's own.
			waitFor(b, time.Minute, c.name+"'s first acknowledgement", func() bool { return w.Acked() > 0 })
			a0, t0 := w.Acked(), time.Now()
			time.Sleep(steady)
			r.steadyAcked, r.steady = w.Acked()-a0, time.Since(t0)
		}
		before := w.Acked()
		r.rolling = timed(func() {
			for _, sb := range c.brokers {
				if err := sb.term(10 * time.Minute); err != nil {
					b.Fatalf("%s: %v", c.name, err)
				}
				sb.restart()
				waitFull()
			}
		})
		r.acked, r.failed, r.ackGap = w.Stop(b)
		r.acked -= before
		if r.failed > 0 && c.name == "kbroker" {
			b.Fatalf("kbroker: %d acks=all records failed during the rolling restart", r.failed)
		}
	}
	r.loadAfter = loadAvg()

	s := func(d time.Duration) float64 { return d.Seconds() }
	b.ReportMetric(s(r.create), "create-s")
	b.ReportMetric(s(r.failover), "failover-s")
	b.ReportMetric(s(r.shutdown), "shutdown-s")
	if r.rolling > 0 {
		b.ReportMetric(s(r.rolling), "rolling-s")
	}
	return r
}

// scaleReport prints each cluster's figures in a column and, with both,
// kbroker's ratio to Kafka 3.9 (below 1: kbroker takes less time).
func scaleReport(names []string, results map[string]scaleResult, topics, perTopic, session int, heap string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nBenchmarkKafkaClusterScale: 3 brokers, %d topics x %d partitions = %d partitions at RF 3, zookeeper.session.timeout.ms=%d, Kafka 3.9 heap %s\n",
		topics, perTopic, topics*perTopic, session, heap)
	fmt.Fprintf(&sb, "%-58s", "seconds")
	for _, n := range names {
		fmt.Fprintf(&sb, " %10s", n)
	}
	ratio := len(names) == 2 && names[0] == "kbroker" && names[1] == "kafka39"
	if ratio {
		fmt.Fprintf(&sb, " %16s", "kbroker/kafka39")
	}
	sb.WriteString("\n")
	row := func(what string, f func(r scaleResult) time.Duration) {
		fmt.Fprintf(&sb, "%-58s", what)
		for _, n := range names {
			fmt.Fprintf(&sb, " %10.2f", f(results[n]).Seconds())
		}
		if kb, k := f(results["kbroker"]), f(results["kafka39"]); ratio && kb > 0 && k > 0 {
			fmt.Fprintf(&sb, " %15.2fx", kb.Seconds()/k.Seconds())
		}
		sb.WriteString("\n")
	}
	row("CreateTopics answered", func(r scaleResult) time.Duration { return r.createAcked })
	row("  every ISR full in every broker's Metadata", func(r scaleResult) time.Duration { return r.create })
	row("kill -9 of the controller: every partition led", func(r scaleResult) time.Duration { return r.failover })
	row("  of it: until a survivor holds /controller", func(r scaleResult) time.Duration { return r.controllerMoved })
	row("  of it: the rest (new controller's failover)", func(r scaleResult) time.Duration { return r.failover - r.controllerMoved })
	row("  its restart until it is back in every ISR", func(r scaleResult) time.Duration { return r.rejoin })
	row("controlled shutdown (SIGTERM to exit)", func(r scaleResult) time.Duration { return r.shutdown })
	row("  then every partition led by a live broker", func(r scaleResult) time.Duration { return r.leadersMoved })
	row("  its restart until it is back in every ISR", func(r scaleResult) time.Duration { return r.victimRejoin })
	row("rolling restart under acks=all (each: stop, start, ISRs)", func(r scaleResult) time.Duration { return r.rolling })
	row("  the producer's longest gap between acks", func(r scaleResult) time.Duration { return r.ackGap.Len })
	for _, n := range names {
		r := results[n]
		fmt.Fprintf(&sb, "%s: killed controller %d; shut down broker %d, which led %d partitions; open files per broker %v; load average %s before, %s after\n",
			n, r.dead, r.victim, r.victimLed, r.openFiles, r.loadBefore, r.loadAfter)
		if r.rolling > 0 {
			fmt.Fprintf(&sb, "%s: rolling restart: %d records acked (%.0f a second), %d failed, longest gap between acks %v\n",
				n, r.acked, float64(r.acked)/r.rolling.Seconds(), r.failed, r.ackGap)
			if r.steady > 0 {
				fmt.Fprintf(&sb, "%s: steady state before it, same producer: %d records acked in %.1f s (%.0f a second)\n",
					n, r.steadyAcked, r.steady.Seconds(), float64(r.steadyAcked)/r.steady.Seconds())
			}
		} else {
			fmt.Fprintf(&sb, "%s: rolling restart skipped (KBROKER_BENCH_CLUSTER_ROLLING=0)\n", n)
		}
	}
	return sb.String()
}
