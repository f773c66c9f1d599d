package compat

// BenchmarkClusterAcksAll compares acks=all produce on three brokers with
// RF=3 and min.insync.replicas=2 on this machine: three kbroker processes
// joined by a real ZooKeeper (integration's harness) beside a three-node
// Apache Kafka 4.4.0 KRaft cluster (three combined broker+controller
// processes on 127.0.0.1, each with its own ports and data directory) and a
// three-broker Apache Kafka 3.9 cluster in ZooKeeper mode (on the same
// ZooKeeper under the chroot /kafka39), and, in the same run, one kbroker
// and one Kafka 4.4 with RF=1. Every target gets
// the same producer (integration.ProduceAcksAll: franz-go, idempotent,
// acks=all, 1 KiB incompressible values, no compression, no linger, at most
// integration.ProduceInFlight records unacknowledged) on a new topic of
// three partitions each round; rounds rotate the order of the targets so
// that a noisy neighbour hits them alike. It prints, per target, the median
// MB/s (and its range) and p50/p99 latency of a record's produce over the
// rounds (the first is a warm-up and left out when there are more), and the
// ratios that matter: kbroker to each Kafka at each size, and three
// brokers to one.
//
//	go test ./compat/ -run '^$' -bench BenchmarkClusterAcksAll -benchtime 5x
//
// KBROKER_BENCH_CLUSTER_MIB sets the payload per round and target (default
// 64). scripts/bench.sh runs it with the other benchmarks.
//
// BenchmarkClusterLatency runs BenchmarkFixedRate's open-loop latency
// measurement (fixedrate_bench_test.go, same environment knobs, rates
// "50,100" by default; KBROKER_BENCH_TARGETS picks among "kbroker x3",
// "kafka x3" and "kafka39 x3") on the same three clusters: RF 3, acks=all,
// min.insync.replicas=2, one cluster up at a time, and prints kbroker x3's
// ratios to both Kafkas.
//
//	KBROKER_BENCH_SECS=20 KBROKER_BENCH_WARMUP_SECS=5 go test ./compat/ -run '^$' -bench BenchmarkClusterLatency -benchtime 1x -timeout 1h

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration"
	"github.com/twmb/franz-go/pkg/kadm"
)

// clusterBenchPartitions is the partition count of each topic.
const clusterBenchPartitions = 3

// clusterTarget is one broker or cluster under test.
type clusterTarget struct {
	name  string
	seeds []string
	rf    int16
	adm   *kadm.Client
}

func BenchmarkClusterAcksAll(b *testing.B) {
	mib := 64
	if s := os.Getenv("KBROKER_BENCH_CLUSTER_MIB"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("KBROKER_BENCH_CLUSTER_MIB=%q: want a positive integer", s)
		}
		mib = n
	}
	values, err := integration.IncompressibleValues(mib<<20/benchValueSize, benchValueSize)
	if err != nil {
		b.Fatal(err)
	}

	benchWarmMemory(b) // bench_warm_test.go
	targets := startBenchClusters(b)
	single := startBroker(b, b.TempDir(), matrixOverrides...)
	kafka1 := startKafka(b)
	targets = append(targets,
		awaitClusterTarget(b, clusterTarget{name: "kbroker x1", seeds: []string{single.Addr()}, rf: 1}),
		awaitClusterTarget(b, clusterTarget{name: "kafka x1", seeds: []string{kafka1.Addr()}, rf: 1}))

	results := map[string][]integration.ProduceResult{}
	round := 0
	b.Run("rounds", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for j := range targets {
				t := targets[(round+j)%len(targets)]
				results[t.name] = append(results[t.name], clusterBenchRound(b, t, fmt.Sprintf("acks-all-%d", round), values))
			}
			round++
		}
	})
	if round == 0 {
		return
	}
	fmt.Print(clusterBenchReport(targets, results, mib))
	single.Alive()
}

// BenchmarkClusterLatency is BenchmarkFixedRate on the three clusters of
// BenchmarkClusterAcksAll (see the comment at the top of this file), one
// cluster at a time: each is started (with a ZooKeeper of its own, after
// the page cache is warmed again: warmPageCache), runs every rate, and is
// killed before the next starts, so that the idle brokers of the two
// others (three JVMs among them) do not load the machine's two cores.
// KBROKER_BENCH_ROTATE=n starts with another.
func BenchmarkClusterLatency(b *testing.B) {
	benchFixedRate(b, "50,100", func(b *testing.B) []benchTarget {
		var out []benchTarget
		for _, c := range benchClusters {
			if !benchTargetWanted(c.name) {
				continue
			}
			out = append(out, benchTarget{name: c.name, rf: 3, up: func(b *testing.B) benchTarget {
				var z *integration.ZooKeeper
				if c.zk {
					z = integration.StartZooKeeper(b)
				}
				t := c.start(b, z)
				return benchTarget{name: t.name, addr: t.seeds[0], seeds: t.seeds, rf: t.rf}
			}})
		}
		if len(out) == 0 {
			b.Fatal("KBROKER_BENCH_TARGETS names no cluster")
		}
		return out
	})
}

// benchClusters are the three 3-broker clusters compared: kbroker on
// ZooKeeper, Kafka 4.4 KRaft, Kafka 3.9 on ZooKeeper under /kafka39. Each
// has min.insync.replicas=2 and its internal topics at RF 3; start returns
// it once it shows all its brokers, and its processes are killed
// (SIGKILL: a KRaft node stopping after a majority of its quorum waits
// out its shutdown timeout) when b ends. zk says whether start needs a
// ZooKeeper.
var benchClusters = []struct {
	name  string
	zk    bool
	start func(b *testing.B, z *integration.ZooKeeper) clusterTarget
}{
	{"kbroker x3", true, startKbrokerBenchCluster},
	{"kafka x3", false, func(b *testing.B, _ *integration.ZooKeeper) clusterTarget { return startKafkaBenchCluster(b) }},
	{"kafka39 x3", true, startKafka39BenchCluster},
}

// startBenchClusters starts the three clusters of benchClusters on one
// ZooKeeper, all at once.
func startBenchClusters(b *testing.B) []clusterTarget {
	z := integration.StartZooKeeper(b)
	var out []clusterTarget
	for _, c := range benchClusters {
		out = append(out, c.start(b, z))
	}
	return out
}

func startKbrokerBenchCluster(b *testing.B, z *integration.ZooKeeper) clusterTarget {
	// pprof on the brokers' HTTP listeners (http.listeners in their
	// command lines), for profiles during a run; nothing asks for it.
	kbProps := map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3", "http.pprof.enable": "true",
		"file.delete.delay.ms": benchDeleteDelayMs}
	if v := os.Getenv("KBROKER_BENCH_WRITEBACK_BYTES"); v != "" {
		kbProps["log.segment.writeback.bytes"] = v // log.segment.writeback.bytes of the kbrokers
	}
	var seeds []string
	for _, p := range integration.StartCluster(b, z, 3, kbProps) {
		seeds = append(seeds, p.Addr()) // StartCluster kills them at the end
	}
	return awaitClusterTarget(b, clusterTarget{name: "kbroker x3", seeds: seeds, rf: 3})
}

func startKafkaBenchCluster(b *testing.B) clusterTarget {
	var seeds []string
	for _, k := range startKafkaCluster(b, 3) {
		b.Cleanup(func() { // before launchJavaProc's SIGTERM (cleanups run last first)
			_ = killProcGroup(k.cmd)
			<-k.done
		})
		seeds = append(seeds, k.Addr())
	}
	return awaitClusterTarget(b, clusterTarget{name: "kafka x3", seeds: seeds, rf: 3})
}

func startKafka39BenchCluster(b *testing.B, z *integration.ZooKeeper) clusterTarget {
	var seeds []string
	for id := range int32(3) {
		k := startKafka39JVM(b, z, "/kafka39", id+1, filepath.Join(b.TempDir(), "data"), freePort(b), map[string]string{
			"min.insync.replicas":                      "2",
			"default.replication.factor":               "3",
			"offsets.topic.replication.factor":         "3",
			"transaction.state.log.replication.factor": "3",
			"transaction.state.log.min.isr":            "2",
			"log.segment.delete.delay.ms":              benchDeleteDelayMs,
		}, kafka39BenchJVM)
		b.Cleanup(k.kill)
		seeds = append(seeds, k.Addr())
	}
	return awaitClusterTarget(b, clusterTarget{name: "kafka39 x3", seeds: seeds, rf: 3})
}

// awaitClusterTarget gives t an admin client and waits until its metadata
// shows all its seeds as brokers and a controller.
func awaitClusterTarget(b *testing.B, t clusterTarget) clusterTarget {
	t.adm = newAdmin(b, t.seeds[0])
	waitFor(b, 2*time.Minute, t.name+" to show all its brokers", func() bool {
		m, err := t.adm.BrokerMetadata(context.Background())
		return err == nil && len(m.Brokers) == len(t.seeds) && m.Controller >= 0
	})
	return t
}

// clusterBenchRound creates topic on t and produces values to it.
func clusterBenchRound(b *testing.B, t clusterTarget, topic string, values [][]byte) integration.ProduceResult {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var configs map[string]*string
	if t.rf > 1 {
		two := "2"
		configs = map[string]*string{"min.insync.replicas": &two}
	}
	resp, err := t.adm.CreateTopic(ctx, clusterBenchPartitions, t.rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatalf("%s: CreateTopic %s: %v", t.name, topic, err)
	}
	r, err := integration.ProduceAcksAll(ctx, t.seeds, topic, values)
	if err != nil {
		b.Fatalf("%s: %v", t.name, err)
	}
	return r
}

// clusterBenchReport formats the medians of every target and the ratios.
func clusterBenchReport(targets []clusterTarget, results map[string][]integration.ProduceResult, mib int) string {
	type row struct{ mbps, p50, p99 float64 }
	rows := map[string]row{}
	var sb strings.Builder
	n := len(results[targets[0].name])
	skip := 0
	if n > 1 {
		skip = 1 // the first round warms up
	}
	fmt.Fprintf(&sb, "\nacks=all produce: %d MiB of 1 KiB records per round and target, %d partitions, idempotent franz-go producer, %d in flight, %d rounds (medians of %d)\n",
		mib, clusterBenchPartitions, integration.ProduceInFlight, n, n-skip)
	fmt.Fprintf(&sb, "%-11s %3s %9s %13s %9s %9s\n", "target", "RF", "MB/s", "(min-max)", "p50 ms", "p99 ms")
	for _, t := range targets {
		var mbps, p50, p99 []float64
		for _, r := range results[t.name][skip:] {
			mbps = append(mbps, r.MBps())
			p50 = append(p50, float64(r.P50.Microseconds())/1000)
			p99 = append(p99, float64(r.P99.Microseconds())/1000)
		}
		r := row{benchMedian(mbps), benchMedian(p50), benchMedian(p99)}
		rows[t.name] = r
		fmt.Fprintf(&sb, "%-11s %3d %9.1f %13s %9.1f %9.1f\n", t.name, t.rf, r.mbps,
			fmt.Sprintf("(%.1f-%.1f)", slices.Min(mbps), slices.Max(mbps)), r.p50, r.p99)
	}
	for _, pair := range [][2]string{{"kbroker x3", "kafka x3"}, {"kbroker x3", "kafka39 x3"}, {"kbroker x1", "kafka x1"}, {"kbroker x3", "kbroker x1"}, {"kafka x3", "kafka x1"}} {
		a, ok := rows[pair[0]]
		o, ok2 := rows[pair[1]]
		if !ok || !ok2 {
			continue
		}
		fmt.Fprintf(&sb, "%-10s / %-10s MB/s %.2fx, p50 %.2fx, p99 %.2fx\n", pair[0], pair[1], a.mbps/o.mbps, a.p50/o.p50, a.p99/o.p99)
	}
	return sb.String()
}

// startKafkaCluster starts an n-node Apache Kafka 4.4.0 KRaft cluster: n
// combined broker+controller processes (node ids 1..n, all of them voters)
// on loopback ports, each with its own data directory, formatted with one
// cluster id. Kafka's defaults otherwise: internal topics get RF 3 when
// n >= 3. It returns once every node serves clients; the processes are
// stopped at test cleanup.
func startKafkaCluster(t testing.TB, n int) []*kafkaProc {
	t.Helper()
	nodes := make([]*kafkaProc, n)
	var voters []string
	for i := range nodes {
		k := &kafkaProc{port: freePort(t), controllerPort: freePort(t), dir: t.TempDir()}
		nodes[i] = k
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, net.JoinHostPort("127.0.0.1", strconv.Itoa(k.controllerPort))))
	}
	id := randomClusterID(t)
	for i, k := range nodes {
		props := fmt.Sprintf(`process.roles=broker,controller
node.id=%d
controller.quorum.voters=%s
listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d
advertised.listeners=PLAINTEXT://127.0.0.1:%d
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=%s
group.initial.rebalance.delay.ms=0
log.segment.delete.delay.ms=%s
`, i+1, strings.Join(voters, ","), k.port, k.controllerPort, k.port, filepath.Join(k.dir, "data"), benchDeleteDelayMs)
		k.launch(t, props, id)
	}
	// The quorum needs a majority up: every node is launched before any
	// is awaited, and three JVMs start at once on a small machine.
	for _, k := range nodes {
		k.await(t, time.Duration(n)*kafkaStartTimeout)
	}
	return nodes
}

// TestClusterBenchReport: the report leaves out the warm-up round, takes
// medians, and divides kbroker's numbers by the other target's.
func TestClusterBenchReport(t *testing.T) {
	res := func(mbps float64, p50, p99 time.Duration) integration.ProduceResult {
		return integration.ProduceResult{Bytes: int64(mbps * 1e6), Elapsed: time.Second, P50: p50, P99: p99}
	}
	ms := time.Millisecond
	var targets []clusterTarget
	results := map[string][]integration.ProduceResult{}
	for _, name := range []string{"kbroker x3", "kafka x3", "kafka39 x3", "kbroker x1", "kafka x1"} {
		targets = append(targets, clusterTarget{name: name, rf: 1})
		// The warm-up round (1000 MB/s) must not count.
		results[name] = []integration.ProduceResult{res(1000, ms, ms), res(10, 10*ms, 40*ms), res(30, 30*ms, 80*ms), res(20, 20*ms, 60*ms)}
	}
	results["kafka x3"] = []integration.ProduceResult{res(1, ms, ms), res(5, 40*ms, 120*ms), res(5, 40*ms, 120*ms), res(5, 40*ms, 120*ms)}
	results["kafka39 x3"] = []integration.ProduceResult{res(1, ms, ms), res(10, 20*ms, 30*ms), res(10, 20*ms, 30*ms), res(10, 20*ms, 30*ms)}
	got := clusterBenchReport(targets, results, 32)
	for _, want := range []string{
		"4 rounds (medians of 3)",
		"kbroker x3    1      20.0   (10.0-30.0)      20.0      60.0",
		"kafka x3      1       5.0     (5.0-5.0)      40.0     120.0",
		"kbroker x3 / kafka x3   MB/s 4.00x, p50 0.50x, p99 0.50x",
		"kafka39 x3    1      10.0   (10.0-10.0)      20.0      30.0",
		"kbroker x3 / kafka39 x3 MB/s 2.00x, p50 1.00x, p99 2.00x",
		"kbroker x3 / kbroker x1 MB/s 1.00x, p50 1.00x, p99 1.00x",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}
