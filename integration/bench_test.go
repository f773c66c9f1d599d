package integration

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceAcksAll measures acks=all produce of 1 KiB incompressible
// records with an idempotent franz-go producer, on three brokers with RF=3
// and min.insync.replicas=2 and, in the same run, on one broker without
// ZooKeeper: MB/s and the p50/p99 latency of a record's produce, with at
// most inFlight records unacknowledged.
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

// inFlight bounds the records awaiting their acknowledgement, so latency
// is that of a loaded producer, not of a queue of b.N records.
const inFlight = 256

func produceBench(b *testing.B, seeds []string, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	val := make([]byte, 1024)
	_, _ = rand.Read(val)
	ctx := context.Background()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: val}).FirstErr(); err != nil { // warm up metadata
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	b.SetBytes(1024)
	b.ResetTimer()
	start := time.Now()
	sem := make(chan struct{}, inFlight)
	for i := 0; i < b.N; i++ {
		sem <- struct{}{}
		wg.Add(1)
		t0 := time.Now()
		i := i
		cl.Produce(ctx, &kgo.Record{Value: val}, func(_ *kgo.Record, err error) {
			lat[i] = time.Since(t0)
			<-sem
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(b.N)*1024/el.Seconds()/1e6, "MB/s")
	b.ReportMetric(float64(lat[b.N/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[b.N*99/100].Microseconds())/1000, "p99-ms")
	if os.Getenv("KBROKER_BENCH_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "%s: %d records in %v\n", b.Name(), b.N, el)
	}
}
