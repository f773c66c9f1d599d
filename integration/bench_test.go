package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkProduceAcksAll measures acks=all produce of 1 KiB incompressible
// records with an idempotent franz-go producer, on three brokers with RF=3
// and min.insync.replicas=2 and, in the same run, on one broker without
// ZooKeeper: MB/s and the p50/p99 latency of a record's produce, with at
// most ProduceInFlight records unacknowledged. compat's
// BenchmarkClusterAcksAll runs the same producer beside a three-node Apache
// Kafka (scripts/bench.sh runs it).
//
//	go test -run '^$' -bench BenchmarkProduceAcksAll -benchtime 20000x ./integration/
func BenchmarkProduceAcksAll(b *testing.B) {
	z := StartZooKeeper(b)
	cluster := StartCluster(b, z, 3, map[string]string{"min.insync.replicas": "2", "default.replication.factor": "3"})
	b.Run("cluster-rf3", func(b *testing.B) {
		waitFor(b, 60*time.Second, "the cluster", func() (bool, error) {
			r, err := describeCluster(cluster[0].Addr())
			return err == nil && len(r.Brokers) == 3, err
		})
		createTopic(b, cluster[0].Addr(), "bench", 3, 3, true)
		produceBench(b, addrsOf(cluster), "bench")
	})
	b.Run("single", func(b *testing.B) {
		single := startSingle(b)
		createTopic(b, single.Addr(), "bench", 3, 1, true)
		produceBench(b, []string{single.Addr()}, "bench")
	})
}

// startSingle starts one kbroker without ZooKeeper.
func startSingle(b testing.TB) *BrokerProc {
	port, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	p := &BrokerProc{ID: 0, Port: port, Dir: b.TempDir(), t: b, Props: map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:" + strconv.Itoa(port),
	}}
	p.Props["log.dirs"] = filepath.Join(p.Dir, "data")
	p.start(buildKbroker(b))
	b.Cleanup(p.Kill)
	waitFor(b, 30*time.Second, "the single broker", func() (bool, error) {
		_, err := describeCluster(p.Addr())
		return err == nil, err
	})
	return p
}

// produceBench runs ProduceAcksAll over b.N records and reports MB/s and
// the p50/p99 latency of a record's produce.
func produceBench(b *testing.B, seeds []string, topic string) {
	values, err := IncompressibleValues(b.N, 1024)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(1024)
	b.ResetTimer()
	r, err := ProduceAcksAll(context.Background(), seeds, topic, values)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.MBps(), "MB/s")
	b.ReportMetric(float64(r.P50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(r.P99.Microseconds())/1000, "p99-ms")
	if os.Getenv("KBROKER_BENCH_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "%s: %d records in %v\n", b.Name(), b.N, r.Elapsed)
	}
}
