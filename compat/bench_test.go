package compat

// BenchmarkProduceConsume compares produce-then-consume throughput of 1 KiB
// incompressible values, uncompressed, through franz-go: kbroker (a real
// process, data in a temp dir), franz-go's in-process kfake with its DataDir
// persistence on, optionally Apache Kafka 4.4.0 (compat/java) and another
// kbroker build, and the raw loopback TCP limit of one stream. Every target
// is started once; each round then runs every target once, in an order that
// rotates from round to round, so a noisy neighbour on a shared machine hits
// them alike. At the end it prints, per target, the median produce MB/s,
// consume MB/s and produce p99 latency over the rounds (the first round is
// a warm-up and left out when there are more), and kbroker's ratio to each.
//
//	go test ./compat/ -run '^$' -bench BenchmarkProduceConsume -benchtime 5x
//
// Environment:
//   - KBROKER_BENCH_MIB: MiB moved per round and target (default 64).
//   - KBROKER_BENCH_KAFKA=1: include Apache Kafka (needs the JDK and
//     compat/java built, as the Java tests).
//   - KBROKER_BENCH_BASELINE=/path/to/kbroker: include another kbroker
//     build as "baseline", for before/after numbers in one run.
//   - KBROKER_BENCH_TLS=1: include kbroker over an SSL listener as
//     "kbroker-tls" (no sendfile there: records are copied through TLS).
//   - KBROKER_BENCH_PPROF=host:port: serve kbroker's /debug/pprof/ there,
//     for a CPU or allocation profile taken during the run
//     (curl host:port/debug/pprof/profile?seconds=20 > cpu.pprof).
//   - KBROKER_BENCH_BALLAST_GIB=n: keep n GiB of the page cache filled
//     through the run, so appends recycle reclaimed pages (benchBallast).
//
// Produce MB/s is the round's payload over the time from the first Produce
// to the end of Flush (acks=all, idempotent); consume MB/s is the payload
// over the time a fresh consumer takes to read it all back; p99 is of the
// per-record time from Produce to its acknowledgement. Before each target's
// round the test process collects its garbage and sync(2) writes dirty pages
// back, so no target pays for another's writeback (an A/A run of one build
// in two slots differed by up to 50% in broker CPU per GB without it, and
// by under 10% with it). The CPU table gives,
// per GB of payload, the CPU seconds this test process (the client) and the
// broker process used in each phase: on a 2-core machine a phase whose two
// figures add up to about 2 / (GB/s) is CPU-bound, and the larger figure
// names the side that limits it.

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchValueSize is the size of one record value.
const benchValueSize = 1024

// benchPartitions is the partition count of each benchmark topic.
const benchPartitions = 4

// benchMiB is the payload per round, from KBROKER_BENCH_MIB.
func benchMiB(b *testing.B) int {
	s := os.Getenv("KBROKER_BENCH_MIB")
	if s == "" {
		return 64
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("KBROKER_BENCH_MIB=%q: want a positive integer", s)
	}
	return n
}

// benchTarget is one broker (or cluster) under test; opts are the clients'
// extra options (TLS).
type benchTarget struct {
	name, addr string
	opts       []kgo.Opt
	// pid is the broker's process, whose CPU time is measured; 0 for
	// in-process kfake.
	pid int
	// seeds are a cluster's brokers (addr alone when empty) and rf the
	// replication factor of its topics (1 when 0); topics with rf > 1
	// get min.insync.replicas=2 (BenchmarkClusterLatency).
	seeds []string
	rf    int16
	// inProcess is set for kfake, which runs in this process:
	// BenchmarkFixedRate's KBROKER_BENCH_TRACE traces this process as
	// its broker.
	inProcess bool
	// up, when set, starts the target and returns it with its
	// addresses. BenchmarkFixedRate calls it in a sub-benchmark of the
	// target's own and runs every rate on it there; the sub-benchmark's
	// end stops what up started and removes its directories. A target
	// without up lives for the whole benchmark. All targets of a
	// benchmark have up, or none.
	up func(b *testing.B) benchTarget
}

// seedList is the bootstrap list of t's clients.
func (t benchTarget) seedList() []string {
	if len(t.seeds) > 0 {
		return t.seeds
	}
	return []string{t.addr}
}

// benchResult is one round of one target. The CPU figures are seconds of
// CPU per GB of payload: the client's (this test process: producer or
// consumer, and kfake when it is the target) and the broker process's,
// in all and in user space alone (-1 when not measured).
type benchResult struct {
	produceMBps, consumeMBps, p99ms float64

	produce, consume phaseCPU
}

// phaseCPU is the CPU seconds per GB of one phase (-1 when not measured).
// brokerUser is the part of broker spent in user space: the rest is the
// kernel's, mostly copying records into and out of the page cache and
// sockets, which every broker that writes through the page cache pays
// alike.
type phaseCPU struct{ client, broker, brokerUser float64 }

// cpuMark is the CPU time used so far by this process and by the broker.
type cpuMark struct {
	client, broker, brokerUser time.Duration
	ok                         bool
}

// markCPU reads the CPU times of this process and of the broker process pid.
func markCPU(pid int) cpuMark {
	c, ok1 := selfCPU()
	if pid == 0 {
		return cpuMark{client: c, ok: ok1}
	}
	u, s, ok2 := procCPU(pid)
	return cpuMark{client: c, broker: u + s, brokerUser: u, ok: ok1 && ok2}
}

// cpuPerGB is the CPU seconds per GB of total bytes between marks a and b.
func cpuPerGB(a, b cpuMark, pid int, total int64) phaseCPU {
	gb := float64(total) / 1e9
	p := phaseCPU{-1, -1, -1}
	if a.ok && b.ok {
		p.client = (b.client - a.client).Seconds() / gb
		if pid != 0 {
			p.broker = (b.broker - a.broker).Seconds() / gb
			p.brokerUser = (b.brokerUser - a.brokerUser).Seconds() / gb
		}
	}
	return p
}

func BenchmarkProduceConsume(b *testing.B) {
	mib := benchMiB(b)
	pool := make([]byte, mib<<20)
	if _, err := rand.Read(pool); err != nil {
		b.Fatalf("crypto/rand: %v", err)
	}
	values := make([][]byte, 0, len(pool)/benchValueSize)
	for off := 0; off+benchValueSize <= len(pool); off += benchValueSize {
		values = append(values, pool[off:off+benchValueSize])
	}

	var overrides []string
	if addr := os.Getenv("KBROKER_BENCH_PPROF"); addr != "" {
		overrides = append(overrides, "http.listeners=http://"+addr, "http.pprof.enable=true", "schema.registry.listeners=")
	}
	kb := startBroker(b, b.TempDir(), overrides...)
	targets := []benchTarget{{name: "kbroker", addr: kb.Addr(), pid: kb.Pid()}}
	if os.Getenv("KBROKER_BENCH_TLS") != "" {
		tb := startTLSBroker(b)
		targets = append(targets, benchTarget{name: "kbroker-tls", addr: tb.ssl, opts: []kgo.Opt{kgo.DialTLSConfig(tb.tlsConf(nil))}})
	}
	if bin := os.Getenv("KBROKER_BENCH_BASELINE"); bin != "" {
		base := startBrokerBin(b, bin, b.TempDir())
		targets = append(targets, benchTarget{name: "baseline", addr: base.Addr(), pid: base.Pid()})
	}
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(b.TempDir()))
	if err != nil {
		b.Fatalf("kfake: %v", err)
	}
	defer kf.Close()
	targets = append(targets, benchTarget{name: "kfake", addr: kf.ListenAddrs()[0]})
	if os.Getenv("KBROKER_BENCH_KAFKA") != "" {
		k := startKafka(b)
		// kafka-server-start.sh execs the JVM: the process is Kafka's.
		targets = append(targets, benchTarget{name: "kafka", addr: k.Addr(), pid: k.cmd.Process.Pid})
	}

	benchWarmMemory(b) // bench_warm_test.go
	benchBallast(b)
	results := map[string][]benchResult{}
	var loop []float64
	round := 0
	b.Run("rounds", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			loop = append(loop, benchLoopback(b, int64(len(pool))))
			for j := range targets {
				t := targets[(round+j)%len(targets)]
				topic := fmt.Sprintf("bench-%d", round)
				// Start every target from the same state: the previous
				// target's garbage (kfake's is in this process) collected
				// and its dirty pages written back, so neither is paid for
				// during this target's round (a writer that finds many
				// dirty pages is throttled into writeback work).
				runtime.GC()
				benchSync()
				results[t.name] = append(results[t.name], benchKafka(b, t, topic, values))
			}
			round++
		}
	})
	if round == 0 {
		return
	}
	fmt.Print(benchReport(targets, results, loop, mib))
	kb.Alive()
}

// benchReport formats the medians of every target and kbroker's ratios.
func benchReport(targets []benchTarget, results map[string][]benchResult, loop []float64, mib int) string {
	skip := 0
	if len(loop) > 1 {
		skip = 1 // the first round warms up
	}
	med := func(xs []float64) float64 { return benchMedian(xs[skip:]) }
	pick := func(rs []benchResult, f func(benchResult) float64) float64 {
		xs := make([]float64, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return med(xs)
	}
	type row struct {
		produce, consume, p99  float64
		produceCPU, consumeCPU phaseCPU
	}
	phase := func(rs []benchResult, f func(benchResult) phaseCPU) phaseCPU {
		return phaseCPU{
			client:     pick(rs, func(r benchResult) float64 { return f(r).client }),
			broker:     pick(rs, func(r benchResult) float64 { return f(r).broker }),
			brokerUser: pick(rs, func(r benchResult) float64 { return f(r).brokerUser }),
		}
	}
	rows := map[string]row{}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d MiB of 1 KiB records per round, %d partitions, %d rounds (medians of %d)\n", mib, benchPartitions, len(loop), len(loop)-skip)
	fmt.Fprintf(&sb, "%-10s %12s %12s %12s\n", "target", "produce MB/s", "consume MB/s", "produce p99")
	for _, t := range targets {
		rs := results[t.name]
		r := row{pick(rs, func(r benchResult) float64 { return r.produceMBps }),
			pick(rs, func(r benchResult) float64 { return r.consumeMBps }),
			pick(rs, func(r benchResult) float64 { return r.p99ms }),
			phase(rs, func(r benchResult) phaseCPU { return r.produce }),
			phase(rs, func(r benchResult) phaseCPU { return r.consume })}
		rows[t.name] = r
		fmt.Fprintf(&sb, "%-10s %12.1f %12.1f %9.0f ms\n", t.name, r.produce, r.consume, r.p99)
	}
	fmt.Fprintf(&sb, "CPU seconds per GB (client: this process, with kfake when it is the target; broker: its process, of which user space)\n")
	fmt.Fprintf(&sb, "%-10s %15s %20s %15s %20s\n", "target", "produce client", "produce broker/user", "consume client", "consume broker/user")
	cpu := func(x float64) string {
		if x < 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", x)
	}
	for _, t := range targets {
		r := rows[t.name]
		fmt.Fprintf(&sb, "%-10s %15s %20s %15s %20s\n", t.name,
			cpu(r.produceCPU.client), cpu(r.produceCPU.broker)+" / "+cpu(r.produceCPU.brokerUser),
			cpu(r.consumeCPU.client), cpu(r.consumeCPU.broker)+" / "+cpu(r.consumeCPU.brokerUser))
	}
	lo := med(loop)
	fmt.Fprintf(&sb, "%-10s %12.1f   (one TCP stream, the ceiling)\n", "loopback", lo)
	k := rows["kbroker"]
	for _, t := range targets[1:] {
		o := rows[t.name]
		fmt.Fprintf(&sb, "kbroker / %-8s produce %.2fx, consume %.2fx, p99 %.2fx", t.name, k.produce/o.produce, k.consume/o.consume, k.p99/o.p99)
		kp, kc, op, oc := k.produceCPU, k.consumeCPU, o.produceCPU, o.consumeCPU
		if kp.broker >= 0 && op.broker > 0 && oc.broker > 0 {
			fmt.Fprintf(&sb, ", broker CPU per GB produce %.2fx, consume %.2fx", kp.broker/op.broker, kc.broker/oc.broker)
		}
		if kp.brokerUser >= 0 && op.brokerUser > 0 && oc.brokerUser > 0 {
			fmt.Fprintf(&sb, " (user space %.2fx, %.2fx)", kp.brokerUser/op.brokerUser, kc.brokerUser/oc.brokerUser)
		}
		sb.WriteString("\n")
	}
	fmt.Fprintf(&sb, "kbroker / loopback produce %.2fx, consume %.2fx\n", k.produce/lo, k.consume/lo)
	return sb.String()
}

// benchMedian is the median of xs (which it leaves as they are).
func benchMedian(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// benchKafka runs one produce-then-consume round of values against the
// broker at addr on a new topic.
func benchKafka(b *testing.B, t benchTarget, topic string, values [][]byte) benchResult {
	addr := t.addr
	total := int64(len(values)) * benchValueSize
	prod, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(len(values) + 1),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	}, t.opts...)...)
	if err != nil {
		b.Fatalf("producer: %v", err)
	}
	defer prod.Close()
	adm := kadm.NewClient(prod)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, benchPartitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		b.Fatalf("%s: CreateTopic: %v / %v", addr, err, resp.Err)
	}

	lat := make([]time.Duration, len(values))
	var mu sync.Mutex
	var failed atomic.Pointer[error]
	cpu0 := markCPU(t.pid)
	start := time.Now()
	for i, v := range values {
		sent := time.Now()
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
			mu.Lock()
			lat[i] = time.Since(sent)
			mu.Unlock()
		})
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatalf("flush: %v", err)
	}
	if e := failed.Load(); e != nil {
		b.Fatalf("produce: %v", *e)
	}
	mid := time.Now()
	cpu1 := markCPU(t.pid)
	got := benchConsume(b, ctx, t, topic, total)
	end := time.Now()
	cpu2 := markCPU(t.pid)
	if got != total {
		b.Fatalf("consumed %d bytes, want %d", got, total)
	}
	slices.Sort(lat)
	mb := float64(total) / 1e6
	r := benchResult{
		produceMBps: mb / mid.Sub(start).Seconds(),
		consumeMBps: mb / end.Sub(mid).Seconds(),
		p99ms:       float64(lat[len(lat)*99/100]) / float64(time.Millisecond),
	}
	r.produce = cpuPerGB(cpu0, cpu1, t.pid, total)
	r.consume = cpuPerGB(cpu1, cpu2, t.pid, total)
	return r
}

// benchConsume reads every partition of topic from the start until total
// value bytes arrived, and returns the byte count.
func benchConsume(b *testing.B, ctx context.Context, t benchTarget, topic string, total int64) int64 {
	offsets := make(map[int32]kgo.Offset, benchPartitions)
	for p := int32(0); p < benchPartitions; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(t.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(50 << 20),
		kgo.FetchMaxPartitionBytes(16 << 20),
		kgo.FetchMaxWait(100 * time.Millisecond),
	}, t.opts...)...)
	if err != nil {
		b.Fatalf("consumer: %v", err)
	}
	defer cons.Close()
	var got int64
	for got < total {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("consume: %v after %d of %d bytes", ctx.Err(), got, total)
		}
		if err := fs.Err0(); err != nil {
			b.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
	}
	return got
}

// benchLoopback moves total bytes through one 127.0.0.1 TCP connection
// in 1 MiB writes and returns the MB/s reached.
func benchLoopback(b *testing.B, total int64) float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatalf("dial: %v", err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		b.Fatalf("accept failed")
	}
	defer server.Close()

	chunk := make([]byte, 1<<20)
	if _, err := rand.Read(chunk); err != nil {
		b.Fatalf("crypto/rand: %v", err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1<<20)
		_, err := io.CopyBuffer(io.Discard, io.LimitReader(onlyReader{server}, total), buf)
		done <- err
	}()
	for sent := int64(0); sent < total; sent += int64(len(chunk)) {
		n := min(int64(len(chunk)), total-sent)
		if _, err := client.Write(chunk[:n]); err != nil {
			b.Fatalf("write: %v", err)
		}
	}
	if err := <-done; err != nil {
		b.Fatalf("read: %v", err)
	}
	return float64(total) / 1e6 / time.Since(start).Seconds()
}

// onlyReader hides everything but Read, so io.CopyBuffer uses the given
// 1 MiB buffer instead of the destination's ReaderFrom.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
