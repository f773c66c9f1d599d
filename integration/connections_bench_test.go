package integration

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkManyConnections measures one broker holding many client
// connections (issue 26: 10,000), most idle and a few producing. It opens
// KBROKER_BENCH_CONNECTIONS idle connections (default 10000; each sends
// a Metadata request, as a client does, then stays quiet) and runs
// KBROKER_BENCH_PRODUCERS acks=all producers (default 10) that each send
// one 1 KiB record at a time, for KBROKER_BENCH_SECS seconds (default 20)
// — first with no idle connections, then with all of them, in the same
// run. It reports the broker's RSS and descriptors in both phases and the
// producers' p50/p99/max produce latency, with the ratio of the loaded to
// the unloaded p99.
//
//	go test ./integration/ -run '^$' -bench BenchmarkManyConnections -benchtime 1x
func BenchmarkManyConnections(b *testing.B) {
	conns := EnvInt(b, "KBROKER_BENCH_CONNECTIONS", 10000)
	producers := EnvInt(b, "KBROKER_BENCH_PRODUCERS", 10)
	secs := EnvInt(b, "KBROKER_BENCH_SECS", 20)
	p := startSingleHTTP(b)
	createTopic(b, p.Addr(), "conns", int32(producers), 1, false)

	phase := func() ([]time.Duration, int, int) {
		lat := produceLatencies(b, p.Addr(), producers, time.Duration(secs)*time.Second)
		rss, fds := procStats(b, p)
		return lat, rss, fds
	}
	quiet, rssQuiet, fdsQuiet := phase()

	idle := make([]*kconn.Conn, 0, conns)
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	t0 := time.Now()
	for i := 0; i < conns; i++ {
		c, err := kconn.Dial(context.Background(), p.Addr(), kconn.Options{ClientID: fmt.Sprintf("idle-%d", i), DialTimeout: 10 * time.Second})
		if err != nil {
			b.Fatalf("idle connection %d: %v", i, err)
		}
		idle = append(idle, c)
		if _, err := c.RoundTrip(kmsg.NewPtrMetadataRequest(), 30*time.Second); err != nil {
			b.Fatalf("idle connection %d: Metadata: %v", i, err)
		}
	}
	opened := time.Since(t0)
	rssIdle, _ := procStats(b, p)
	loaded, rssLoaded, fdsLoaded := phase()

	pct := func(l []time.Duration, q float64) float64 {
		return float64(l[int(float64(len(l)-1)*q)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(loaded, 0.99), "p99-ms")
	b.ReportMetric(float64(rssLoaded)/1024, "rss-MB")
	fmt.Fprintf(os.Stderr, `
BenchmarkManyConnections: one broker, %d producers (acks=all, 1 KiB, one at a time), %d s per phase
  opening %d idle connections (a Metadata request each): %.1f s
                         records   p50 ms   p99 ms   max ms   broker RSS MB   fds
  no idle connections   %8d %8.2f %8.2f %8.2f %15.1f %5d
  %5d idle            %8d %8.2f %8.2f %8.2f %15.1f %5d   (RSS with them idle, before the phase: %.1f MB)
  p99 loaded/unloaded: %.2f
`, producers, secs, conns, opened.Seconds(),
		len(quiet), pct(quiet, 0.5), pct(quiet, 0.99), pct(quiet, 1), float64(rssQuiet)/1024, fdsQuiet,
		conns, len(loaded), pct(loaded, 0.5), pct(loaded, 0.99), pct(loaded, 1), float64(rssLoaded)/1024, fdsLoaded, float64(rssIdle)/1024,
		pct(loaded, 0.99)/pct(quiet, 0.99))
}

// produceLatencies runs n producers, each with its own client and
// partition, sending one record at a time for d, and returns every
// produce latency, sorted.
func produceLatencies(b testing.TB, addr string, n int, d time.Duration) []time.Duration {
	var (
		mu  sync.Mutex
		all []time.Duration
		wg  sync.WaitGroup
	)
	errs := make(chan error, n)
	deadline := time.Now().Add(d)
	for i := 0; i < n; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("conns"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func(part int32) {
			defer wg.Done()
			defer cl.Close()
			var mine []time.Duration
			value := make([]byte, 1024)
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Partition: part, Value: value}).FirstErr(); err != nil {
					errs <- err
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}(int32(i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) == 0 {
		b.Fatal("no record produced")
	}
	return all
}
