package replica

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
)

// BenchmarkAcksAll produces 1 KiB records one at a time with acks=all to a
// leader with two followers in the same process (real TCP, real logs) and
// reports the p50 and p99 latency of a produce.
func BenchmarkAcksAll(b *testing.B) {
	c := newTestCluster(b, 3, ReplicationConfig{FetchWaitMax: 500 * time.Millisecond}, false, 2)
	all := []int32{1, 2, 3}
	c.elect(0, 1, all, all, all...)
	val := make([]byte, 1024)
	rand.Read(val)
	p := c.part(1, 0)
	lat := make([]time.Duration, 0, b.N)
	b.SetBytes(int64(len(val)))
	b.ResetTimer()
	for range b.N {
		batch, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
			[]records.Record{{Value: val}})
		if err != nil {
			b.Fatal(err)
		}
		h, _ := records.ParseHeader(batch)
		start := time.Now()
		if res := c.broker(1).m.Produce(p, batch, h, -1, start.Add(10*time.Second)); res.Err != nil {
			b.Fatal(res.Err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkAcksAllPartitions produces 1 KiB records with acks=all to a
// topic of many partitions at RF 3 on three brokers in this process (real
// TCP, real logs), leaders spread over the brokers as a controller spreads
// them, from 16 producers at once, each to the next partition in turn:
// every produce waits for a replication round of both followers, and each
// round is paid by leader and follower for every partition they share,
// not only the one written (issue 26: the 30,000-partition rolling
// restart). cpu-µs/op is the process's CPU time per produce; p50/p99 the
// latency of one produce. KBROKER_BENCH_CPUPROFILE=file profiles the
// measured part.
func BenchmarkAcksAllPartitions(b *testing.B) {
	for _, n := range []int32{300, 6000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) { benchAcksAllPartitions(b, n, 16) })
	}
}

func benchAcksAllPartitions(b *testing.B, partitions int32, producers int) {
	c := newTestClusterParts(b, 3, partitions, ReplicationConfig{FetchWaitMax: 500 * time.Millisecond}, false, 2)
	all := []int32{1, 2, 3}
	for p := range partitions {
		c.elect(p, 1+p%3, all, all, all...)
	}
	val := make([]byte, 1024)
	rand.Read(val)
	batch, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
		[]records.Record{{Value: val}})
	if err != nil {
		b.Fatal(err)
	}
	h, _ := records.ParseHeader(batch)
	produce := func(p int32) (time.Duration, error) {
		start := time.Now()
		// The leader writes the offsets into the batch it appends: each
		// produce has its own, as each request has.
		res := c.broker(1+p%3).m.Produce(c.part(1+p%3, p), bytes.Clone(batch), h, -1, start.Add(30*time.Second))
		if res.Err != nil {
			return 0, res.Err
		}
		return time.Since(start), nil
	}
	// Every partition once before the timer: the first append writes the
	// leader-epoch checkpoint (an fsync) and the followers' first fetches
	// open their sessions.
	for p := range partitions {
		if _, err := produce(p); err != nil {
			b.Fatalf("partition %d: %v", p, err)
		}
	}
	var next atomic.Int64
	lats := make([][]time.Duration, producers)
	errs := make(chan error, producers)
	b.SetBytes(int64(len(val)))
	if path := os.Getenv("KBROKER_BENCH_CPUPROFILE"); path != "" {
		// The measured part alone (go test -cpuprofile has the set-up's
		// thousands of file creations too).
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	for w := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				d, err := produce(int32(i % int64(partitions)))
				if err != nil {
					errs <- err
					return
				}
				lats[w] = append(lats[w], d)
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	lat := slices.Concat(lats...)
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
