package compat

// BenchmarkFixedRate measures latency at a fixed offered load, the way the
// OpenMessaging Benchmark does, against kbroker, franz-go's kfake (with its
// DataDir persistence) and Apache Kafka 4.4.0 in one run (issue 26):
//
//   - an open-loop producer (franz-go, acks=all, idempotent, linger 1 ms,
//     1 KiB incompressible values) offers records at a set rate. Each record
//     has an intended send time on a fixed schedule, written into its first
//     8 bytes, and every latency is measured from that time, not from the
//     moment Produce was called: a producer held up by a slow broker (a full
//     buffer blocks Produce) falls behind its schedule and the wait counts,
//     so coordinated omission cannot hide a stall;
//   - a consumer tails the topic (assigned partitions, from the start);
//   - publish latency is intended send → acknowledgement, end-to-end latency
//     is intended send → the consumer's poll that returned the record. Both
//     go into HdrHistograms (github.com/HdrHistogram/hdrhistogram-go, 1 µs
//     to 10 min, 3 significant digits) after a warm-up, and into one
//     histogram per second for the latency-over-time plot.
//
// The producer and the consumer run in a process of their own, this test
// binary started again as a load generator (loadgen_bench_test.go) for each
// run, the closed-loop ones included: their collections and the page faults
// of their growing heap no longer land in the process that hosts kfake, and
// they run alike against every target. kfake stays in the test process,
// now alone there (at KBROKER_BENCH_CLIENT_GOGC, as when it shared the
// process with the clients). The test process creates and deletes the
// topics (the side topic of KBROKER_BENCH_DELETE_GB too) and calls
// sync(2); the child reports its histograms back as JSON on its stdout.
//
// Rates come from KBROKER_BENCH_RATES (default "50,200,70%"): MB/s, or a
// percentage of each target's own maximum, which a closed-loop run of the
// same producer and consumer measures first, over KBROKER_BENCH_MAX_SECS
// (default: as long as a fixed-rate run, warm-up included; a 10-second
// maximum, the default before session 21, is a burst the page cache
// absorbs: kbroker's was 546 MB/s where it kept 299 over 60 s). For each
// rate the targets run one after another in an order that rotates from
// rate to rate, each on a new topic, after a sync(2) and a GC of this
// process. Every run prints the percentiles of both latencies, the rate
// reached and the ratios of kbroker to every peer; an SVG plot per rate of
// the p99 and max end-to-end latency of each second is written to
// KBROKER_BENCH_PLOT_DIR (default a new directory under $TMPDIR; its path
// is printed).
//
//	go test ./compat/ -run '^$' -bench BenchmarkFixedRate -benchtime 1x -timeout 2h
//
// Environment:
//   - KBROKER_BENCH_SECS: measured seconds per run (default 60), after
//     KBROKER_BENCH_WARMUP_SECS (default 10) of the same load;
//   - KBROKER_BENCH_LATENCY_PARTITIONS: partitions of each topic (default 16);
//   - KBROKER_BENCH_CLIENT_GOGC: the GOGC of the load generator process,
//     for every target, and of this process, which hosts kfake (default
//     400; Go's default is 100). The load generator's heap is
//     also bounded, for every target, to what it holds after a GC at its
//     start plus KBROKER_BENCH_CLIENT_HEAP_MIB (default 512; Go's soft
//     memory limit), and its producer buffers at most 64 MiB: a producer
//     or consumer that fell behind grew the heap of the test process,
//     which ran them then, by 1.7 GB in 7 s at GOGC 400, every new page a
//     fault that on this virtual machine costs about 2 s of system CPU per
//     GB, which left the brokers no CPU and was the multi-second tail of
//     the 200 MB/s runs (docs/PERFORMANCE.md "The load generator's own
//     tail");
//   - KBROKER_BENCH_KAFKA=0 leaves Apache Kafka out (it needs the JDK and
//     compat/java built, as the Java tests);
//   - KBROKER_BENCH_BASELINE=/path/to/kbroker adds another kbroker build as
//     "baseline", for before/after numbers in one run;
//   - KBROKER_BENCH_PPROF=host:port serves kbroker's /debug/pprof/ there
//     (execution traces, block and mutex profiles: see docs/PERFORMANCE.md);
//   - KBROKER_BENCH_TARGETS: a comma-separated subset of the targets' names;
//   - KBROKER_BENCH_ROTATE=n: start the rotation of the targets' order n
//     places later (another run with another target first);
//   - KBROKER_BENCH_DELETE_GB=n: before each fixed-rate run, another topic
//     of the target is filled with n GB as fast as it takes them, and it is
//     deleted in the middle of the measured window (the targets' delete
//     delay is 1 s): the cost of deleting data under load;
//   - KBROKER_BENCH_TRACE=dir: during each fixed-rate run's measured window
//     an execution trace of the load generator goes to
//     dir/<topic>-client.trace, and one of the broker to
//     dir/<topic>-broker.trace: of this process for kfake, of kbroker with
//     KBROKER_BENCH_PPROF (keep KBROKER_BENCH_SECS short);
//   - KBROKER_BENCH_BALLAST_GIB=n: keep n GiB of the page cache filled
//     (benchBallast), through all runs of the single node, through each
//     cluster's own: the page cache is full from the first second.
//
// Figures from a shared machine: the load average is printed before and
// after every run; compare targets within one run only.

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// latMaxMicros is the largest latency a histogram holds (10 minutes);
// larger values are recorded as this.
const latMaxMicros = 600_000_000

// newLatHist is an empty histogram of latencies in microseconds.
func newLatHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, latMaxMicros, 3) }

// recordLat records d into h, clamped to the histogram's range.
func recordLat(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(d.Microseconds(), 1), latMaxMicros))
}

// fixedRate is one rate asked for: MB/s, or pct percent of a target's own
// maximum when pct > 0.
type fixedRate struct {
	mbps float64
	pct  float64
}

func (r fixedRate) String() string {
	if r.pct > 0 {
		return fmt.Sprintf("%g%% of max", r.pct)
	}
	return fmt.Sprintf("%g MB/s", r.mbps)
}

// parseRates reads a KBROKER_BENCH_RATES list: "50,200,70%".
func parseRates(s string) ([]fixedRate, error) {
	var out []fixedRate
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		pct := strings.HasSuffix(f, "%")
		v, err := strconv.ParseFloat(strings.TrimSuffix(f, "%"), 64)
		if err != nil || v <= 0 || (pct && v > 100) {
			return nil, fmt.Errorf("rate %q: want MB/s or a percentage of the maximum", f)
		}
		if pct {
			out = append(out, fixedRate{pct: v})
		} else {
			out = append(out, fixedRate{mbps: v})
		}
	}
	return out, nil
}

// envSeconds reads a positive number of seconds from env, def when unset.
func envSeconds(b *testing.B, env string, def float64) time.Duration {
	s := os.Getenv(env)
	if s == "" {
		return time.Duration(def * float64(time.Second))
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		b.Fatalf("%s=%q: want seconds", env, s)
	}
	return time.Duration(v * float64(time.Second))
}

// latRun is the outcome of one run of one target at one rate.
type latRun struct {
	target  string
	rate    fixedRate
	round   int     // the rate's place in KBROKER_BENCH_RATES, which may repeat a rate
	offered float64 // MB/s asked for; 0 for a closed-loop run
	// acked and consumed are MB/s over the measured window (records
	// whose intended send time fell in it).
	acked, consumed float64
	publish, e2e    *hdrhistogram.Histogram
	// perSec are histograms of the end-to-end latency of the records
	// intended in each second of the measured window.
	perSec []*hdrhistogram.Histogram
	// missing counts records of the window not acknowledged or not
	// consumed by the end of the drain; they are recorded at the drain's
	// end so they count in the tail.
	missing int64
	load    string
	// from is when the measured window began (wall clock), to match its
	// worst seconds with broker logs, profiles or /proc/meminfo samples.
	from time.Time
}

func BenchmarkFixedRate(b *testing.B) { benchFixedRate(b, "50,200,70%", latencyTargets) }

// benchFixedRate runs the fixed-rate comparison on the targets start
// returns, at the rates of KBROKER_BENCH_RATES (defRates when unset). The
// ratios are those of the first target named kbroker… to every other.
func benchFixedRate(b *testing.B, defRates string, start func(*testing.B) []benchTarget) {
	rates, err := parseRates(cmp.Or(os.Getenv("KBROKER_BENCH_RATES"), defRates))
	if err != nil {
		b.Fatalf("KBROKER_BENCH_RATES: %v", err)
	}
	measure := envSeconds(b, "KBROKER_BENCH_SECS", 60)
	warmup := envSeconds(b, "KBROKER_BENCH_WARMUP_SECS", 10)
	maxSecs := envSeconds(b, "KBROKER_BENCH_MAX_SECS", (warmup + measure).Seconds())
	// The load generator's own collections show in every target's tail
	// (12 a second with a 15–20 MB live heap at 100 MB/s): a larger GOGC
	// for its process, the same for every target.
	clientGOGC := 400
	if s := os.Getenv("KBROKER_BENCH_CLIENT_GOGC"); s != "" {
		if clientGOGC, err = strconv.Atoi(s); err != nil {
			b.Fatalf("KBROKER_BENCH_CLIENT_GOGC=%q: want an integer", s)
		}
	}
	// kfake runs in this process: it keeps the GOGC it had when the
	// clients shared the process (400 by default), so that its figures
	// compare with the runs before the load generator moved out.
	defer debug.SetGCPercent(debug.SetGCPercent(clientGOGC))
	clientHeapMiB := int64(512)
	if s := os.Getenv("KBROKER_BENCH_CLIENT_HEAP_MIB"); s != "" {
		if clientHeapMiB, err = strconv.ParseInt(s, 10, 64); err != nil || clientHeapMiB <= 0 {
			b.Fatalf("KBROKER_BENCH_CLIENT_HEAP_MIB=%q: want a positive number of MiB", s)
		}
	}
	partitions := 16
	if s := os.Getenv("KBROKER_BENCH_LATENCY_PARTITIONS"); s != "" {
		if partitions, err = strconv.Atoi(s); err != nil || partitions <= 0 {
			b.Fatalf("KBROKER_BENCH_LATENCY_PARTITIONS=%q: want a positive integer", s)
		}
	}
	var deleteGB float64
	if s := os.Getenv("KBROKER_BENCH_DELETE_GB"); s != "" {
		if deleteGB, err = strconv.ParseFloat(s, 64); err != nil || deleteGB < 0 {
			b.Fatalf("KBROKER_BENCH_DELETE_GB=%q: want a number of GB", s)
		}
	}
	shift := 0
	if s := os.Getenv("KBROKER_BENCH_ROTATE"); s != "" {
		if shift, err = strconv.Atoi(s); err != nil || shift < 0 {
			b.Fatalf("KBROKER_BENCH_ROTATE=%q: want a non-negative integer", s)
		}
	}
	plotDir := os.Getenv("KBROKER_BENCH_PLOT_DIR")
	if plotDir == "" {
		if plotDir, err = os.MkdirTemp("", "kbroker-fixedrate-"); err != nil {
			b.Fatal(err)
		}
	} else if err := os.MkdirAll(plotDir, 0o755); err != nil {
		b.Fatal(err)
	}

	targets := start(b)
	if targets[0].up == nil {
		benchWarmMemory(b) // bench_warm_test.go
	}
	free0 := benchDiskFree()
	if targets[0].up == nil {
		benchBallast(b) // after free0: benchAwaitDeletes counts it as free
	}
	payload := make([]byte, benchValueSize)
	if _, err := rand.Read(payload); err != nil {
		b.Fatal(err)
	}

	var runs []latRun
	b.Run("runs", func(b *testing.B) {
		if b.N > 1 {
			b.Skip("one pass per benchmark: run with -benchtime 1x")
		}
		maxMBps := map[string]float64{}
		hasPct := slices.ContainsFunc(rates, func(r fixedRate) bool { return r.pct > 0 })
		// maxRun measures t's closed-loop maximum, for the rates given
		// as a share of it.
		maxRun := func(b *testing.B, t benchTarget) {
			benchAwaitDeletes(b, free0)
			r := latencyRun(b, t, "max-"+latTopic(t.name), partitions, 0, min(2*time.Second, maxSecs/2), maxSecs, payload, 0, clientGOGC, clientHeapMiB)
			maxMBps[t.name] = r.acked
			fmt.Printf("%s: closed-loop maximum %.1f MB/s acked, %.1f MB/s consumed (load %s)\n", t.name, r.acked, r.consumed, r.load)
		}
		// rateRun measures t at rates[i].
		rateRun := func(b *testing.B, t benchTarget, i int) {
			rate := rates[i]
			offered := rate.mbps
			if rate.pct > 0 {
				offered = maxMBps[t.name] * rate.pct / 100
			}
			benchAwaitDeletes(b, free0)
			r := latencyRun(b, t, fmt.Sprintf("rate-%d-%s", i, latTopic(t.name)), partitions, offered, warmup, measure, payload, deleteGB, clientGOGC, clientHeapMiB)
			r.rate, r.round = rate, i
			runs = append(runs, r)
			fmt.Print(latencyRunLine(r))
		}
		report := func(i int) {
			fmt.Print(latencyReport(targets, runsAt(runs, i), rates[i]))
			path := filepath.Join(plotDir, fmt.Sprintf("fixedrate-%d.svg", i))
			if err := writeLatencyPlot(path, rates[i], runsAt(runs, i)); err != nil {
				b.Errorf("plot: %v", err)
			} else {
				fmt.Printf("plot: %s\n", path)
			}
		}
		if targets[0].up == nil {
			// Every target is up for the whole benchmark: each rate
			// goes round them all, in another order each time.
			if hasPct {
				for _, t := range targets {
					maxRun(b, t)
				}
			}
			for i := range rates {
				for j := range targets {
					rateRun(b, targets[(i+j+shift)%len(targets)], i)
				}
				report(i)
			}
			return
		}
		// Each target is started for its own runs, alone on the machine,
		// and stopped after them: every rate on it, in order.
		for j := range targets {
			t := targets[(j+shift)%len(targets)]
			n := len(runs)
			if !b.Run(latTopic(t.name), func(b *testing.B) {
				benchAwaitDeletes(b, free0)
				warmPageCache(b) // bench_warm_test.go
				benchBallast(b)  // kept until this target's runs end
				t := t.up(b)
				if hasPct {
					maxRun(b, t)
				}
				for i := range rates {
					rateRun(b, t, i)
				}
			}) {
				b.FailNow()
			}
			if len(runs) != n+len(rates) { // skipped: a tool it needs is missing
				b.Fatalf("%s: its runs did not happen (run with -v for why)", t.name)
			}
		}
		for i := range rates {
			report(i)
		}
	})
	if len(runs) > 0 {
		fmt.Printf("\n== all rates (%s, %d partitions, %v measured after %v warm-up per run; shared machine: compare within this run)\n",
			runtime.Version(), partitions, measure, warmup)
		for i, rate := range rates {
			fmt.Print(latencyReport(targets, runsAt(runs, i), rate))
		}
	}
}

// benchDeleteDelayMs is the delete delay of every target that has one
// (Kafka's log.segment.delete.delay.ms, kbroker's file.delete.delay.ms,
// which builds before session 21 read as well; kfake deletes at once): a
// run's topic, deleted after it, is gone from the disk within seconds,
// and benchAwaitDeletes waits for that before the next run.
const benchDeleteDelayMs = "1000"

// benchAwaitDeletes waits, up to 3 minutes, until the file system of the
// targets' data has free again all but 1 GiB of the space it had before
// the first run (free0; 0 if unknown: no wait; benchBallast's file is
// counted as free), so that no run carries the
// deletion of an earlier run's topic. On a disk mounted with `discard` a
// deletion is not free: an unlink of 10 GB held a concurrent 200 MB/s
// writer back 931 ms on this machine (docs/PERFORMANCE.md "Deleting files
// in steps"), and Kafka's 60-second delay put each run's deletion into the
// next target's measured window.
func benchAwaitDeletes(b *testing.B, free0 uint64) {
	if free0 == 0 {
		return
	}
	const slack = 1 << 30
	start := time.Now()
	free := func() uint64 { return benchDiskFree() + uint64(benchBallastHeld.Load()) }
	for free()+slack < free0 {
		if time.Since(start) > 3*time.Minute {
			fmt.Printf("disk: %.1f GB less free than before the first run after 3 minutes; going on\n", float64(free0-free())/1e9)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	if waited := time.Since(start); waited > time.Second {
		fmt.Printf("disk: waited %v for earlier runs' files to be deleted\n", waited.Round(100*time.Millisecond))
	}
}

// latTopic is a target's name as part of a topic name ("kbroker x3" →
// "kbroker-x3").
func latTopic(name string) string { return strings.ReplaceAll(name, " ", "-") }

// benchTargetWanted reports whether KBROKER_BENCH_TARGETS (a comma-separated
// list of target names; unset: all) names the target called name.
func benchTargetWanted(name string) bool {
	list := os.Getenv("KBROKER_BENCH_TARGETS")
	for _, n := range strings.Split(list, ",") {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return strings.TrimSpace(list) == ""
}

// latencyTargets starts the brokers BenchmarkFixedRate compares.
func latencyTargets(b *testing.B) []benchTarget {
	use := benchTargetWanted
	var targets []benchTarget
	if use("kbroker") {
		var overrides []string
		if addr := os.Getenv("KBROKER_BENCH_PPROF"); addr != "" {
			overrides = append(overrides, "http.listeners=http://"+addr, "http.pprof.enable=true")
		}
		kb := startBroker(b, b.TempDir(), append(overrides, "file.delete.delay.ms="+benchDeleteDelayMs)...)
		targets = append(targets, benchTarget{name: "kbroker", addr: kb.Addr(), pid: kb.Pid()})
	}
	if bin := os.Getenv("KBROKER_BENCH_BASELINE"); bin != "" && use("baseline") {
		base := startBrokerBin(b, bin, b.TempDir(), "file.delete.delay.ms="+benchDeleteDelayMs)
		targets = append(targets, benchTarget{name: "baseline", addr: base.Addr(), pid: base.Pid()})
	}
	if use("kfake") {
		kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(b.TempDir()))
		if err != nil {
			b.Fatalf("kfake: %v", err)
		}
		b.Cleanup(kf.Close)
		targets = append(targets, benchTarget{name: "kfake", addr: kf.ListenAddrs()[0], inProcess: true})
	}
	if os.Getenv("KBROKER_BENCH_KAFKA") != "0" && use("kafka") {
		k := startKafka(b, "log.segment.delete.delay.ms="+benchDeleteDelayMs)
		targets = append(targets, benchTarget{name: "kafka", addr: k.Addr()})
	}
	if len(targets) == 0 {
		b.Fatal("KBROKER_BENCH_TARGETS names no target")
	}
	return targets
}

// latencyRun creates topic on t (replication factor t.rf, and
// min.insync.replicas=2 when replicated), then has a load generator process
// (loadgen_bench_test.go, GOGC gogc, its heap bounded to heapMiB over what it
// holds at its start) offer records at offered MB/s (as fast as its producer
// goes when 0) for warmup+measure while a consumer tails the topic, and
// returns the latencies of the records intended during the measured window.
// With deleteGB > 0 another topic holding that many GB is deleted in the
// middle of the window.
func latencyRun(b *testing.B, t benchTarget, topic string, partitions int, offered float64, warmup, measure time.Duration, payload []byte, deleteGB float64, gogc int, heapMiB int64) latRun {
	if len(t.opts) > 0 {
		b.Fatalf("%s: the target has kgo options (benchTarget.opts), which cannot be passed to the load generator process", t.name)
	}
	side := ""
	if deleteGB > 0 {
		side = "side-" + topic
		fillTopic(b, t, side, partitions, deleteGB, payload)
	}
	runtime.GC()
	benchSync()
	load := loadAvg()
	ctx, cancel := context.WithTimeout(context.Background(), warmup+measure+5*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(t.seedList()...))
	if err != nil {
		b.Fatalf("admin client: %v", err)
	}
	defer adm.Close()
	rf, configs := max(t.rf, 1), map[string]*string(nil)
	if rf > 1 {
		two := "2"
		configs = map[string]*string{"min.insync.replicas": &two}
	}
	createBenchTopic(b, ctx, t, adm, topic, partitions, rf, configs)
	// Each run's topic is deleted after it: every target lives for the
	// whole benchmark, and 200 MB/s runs of three targets kept on disk
	// filled this machine's 90 GB before the last rate.
	defer func() {
		if _, err := kadm.NewClient(adm).DeleteTopic(context.Background(), topic); err != nil {
			b.Logf("%s: DeleteTopic %s: %v", t.name, topic, err)
		}
	}()

	spec := loadgenSpec{
		Target: t.name, Seeds: t.seedList(), Topic: topic, Partitions: partitions, OfferedMBps: offered,
		Start: 100 * time.Millisecond, Warmup: warmup, Measure: measure,
		PayloadSize: benchValueSize, GOGC: gogc, HeapMiB: heapMiB,
	}
	traceDir := os.Getenv("KBROKER_BENCH_TRACE")
	if traceDir != "" && offered > 0 {
		if err := os.MkdirAll(traceDir, 0o755); err != nil {
			b.Fatal(err)
		}
		spec.TraceDir = traceDir
	}
	var from time.Time
	// waits are what runs when the child reported its window: the broker's
	// trace and the side topic's deletion, waited for as this run ends.
	var waits []func()
	defer func() {
		for _, wait := range waits {
			wait()
		}
	}()
	res := runLoadgenProc(b, spec, func(f time.Time) {
		from = f
		if spec.TraceDir != "" {
			waits = append(waits, brokerTrace(b, traceDir, t, topic, time.Until(from), measure))
		}
		if side == "" {
			return
		}
		deleted := make(chan struct{})
		mid := from.Add(measure / 2)
		timer := time.AfterFunc(time.Until(mid), func() {
			defer close(deleted)
			if _, err := kadm.NewClient(adm).DeleteTopic(ctx, side); err != nil {
				b.Errorf("%s: DeleteTopic %s: %v", t.name, side, err)
			}
			fmt.Printf("%s: deleted %s (%.1f GB) in %v at second %d of the window\n", t.name, side, deleteGB,
				time.Since(mid).Round(time.Millisecond), measure/2/time.Second)
		})
		waits = append(waits, func() {
			if timer.Stop() {
				close(deleted)
			}
			<-deleted
		})
	})
	if res.Failure != "" {
		b.Fatalf("%s: produce: %v", t.name, res.Failure)
	}
	out, err := res.latRun(t.name, offered, measure)
	if err != nil {
		b.Fatalf("%s: load generator's result: %v", t.name, err)
	}
	fmt.Printf("%s: load generator used %v\n", t.name, res.Usage)
	out.from = from
	out.load = load + " → " + loadAvg()
	return out
}

// createBenchTopic creates topic on t through cl, or fails the benchmark.
func createBenchTopic(b *testing.B, ctx context.Context, t benchTarget, cl *kgo.Client, topic string, partitions int, rf int16, configs map[string]*string) {
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), rf, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatalf("%s: CreateTopic %s: %v", t.name, topic, err)
	}
}

// fillTopic creates topic on t and produces gb GB of payload into it as
// fast as t acknowledges them (acks=all, idempotent).
func fillTopic(b *testing.B, t benchTarget, topic string, partitions int, gb float64, payload []byte) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(t.seedList()...),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}, t.opts...)...)
	if err != nil {
		b.Fatalf("%s: filling %s: %v", t.name, topic, err)
	}
	defer cl.Close()
	ctx := context.Background()
	createBenchTopic(b, ctx, t, cl, topic, partitions, max(t.rf, 1), nil)
	var failed atomic.Pointer[error]
	for range int64(gb * 1e9 / float64(len(payload))) {
		cl.Produce(ctx, &kgo.Record{Value: payload}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatalf("%s: filling %s: %v", t.name, topic, err)
	}
	if e := failed.Load(); e != nil {
		b.Fatalf("%s: filling %s: %v", t.name, topic, *e)
	}
}

// brokerTrace starts, after delay, an execution trace of t's broker for d
// into dir/<topic>-broker.trace: of kbroker through /debug/pprof/trace with
// KBROKER_BENCH_PPROF, of this process for kfake, which runs in it (the
// load generator traces itself). The returned func waits for it to end.
func brokerTrace(b *testing.B, dir string, t benchTarget, topic string, delay, d time.Duration) func() {
	path := filepath.Join(dir, topic+"-broker.trace")
	var wg sync.WaitGroup
	if t.inProcess {
		wg.Go(func() {
			time.Sleep(delay)
			if err := traceFor(path, d); err != nil {
				b.Error(err)
			}
		})
	}
	if addr := os.Getenv("KBROKER_BENCH_PPROF"); addr != "" && t.pid != 0 {
		wg.Go(func() {
			time.Sleep(delay)
			url := fmt.Sprintf("http://%s/debug/pprof/trace?seconds=%d", addr, int(d.Seconds()))
			resp, err := http.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(path)
			if err != nil {
				b.Error(err)
				return
			}
			defer f.Close()
			if _, err := io.Copy(f, resp.Body); err != nil {
				b.Error(err)
			}
		})
	}
	return wg.Wait
}

// loadAvg is the first three fields of /proc/loadavg ("?" elsewhere).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// runsAt are the runs of the round-th rate.
func runsAt(runs []latRun, round int) []latRun {
	var out []latRun
	for _, r := range runs {
		if r.round == round {
			out = append(out, r)
		}
	}
	return out
}

// latQuantiles are the percentiles reported, with their column names.
var latQuantiles = []struct {
	name string
	q    float64
}{{"p50", 50}, {"p99", 99}, {"p99.9", 99.9}, {"p99.99", 99.99}, {"max", 100}}

// latMs is the q-th percentile of h in milliseconds (q 100: the maximum).
func latMs(h *hdrhistogram.Histogram, q float64) float64 {
	if q >= 100 {
		return float64(h.Max()) / 1000
	}
	return float64(h.ValueAtQuantile(q)) / 1000
}

// latencyRunLine is the summary printed as each run ends, with the seconds
// of the measured window whose end-to-end maximum was largest (where to
// look in a trace).
func latencyRunLine(r latRun) string {
	secs := make([]int, len(r.perSec))
	for i := range secs {
		secs[i] = i
	}
	slices.SortStableFunc(secs, func(a, b int) int { return cmp.Compare(r.perSec[b].Max(), r.perSec[a].Max()) })
	var worst []string
	for _, s := range secs[:min(3, len(secs))] {
		worst = append(worst, fmt.Sprintf("%ds %.1f ms", s, latMs(r.perSec[s], 100)))
	}
	return fmt.Sprintf("%-10s at %-12s offered %6.1f MB/s, acked %6.1f, consumed %6.1f; e2e p99 %.1f ms, p99.9 %.1f ms, max %.1f ms (worst seconds: %s, measured from %s UTC); load %s\n",
		r.target, r.rate, r.offered, r.acked, r.consumed, latMs(r.e2e, 99), latMs(r.e2e, 99.9), latMs(r.e2e, 100), strings.Join(worst, ", "),
		r.from.UTC().Format("15:04:05.000"), r.load)
}

// latencyReport is the table of the runs of one round (runsAt), at rate:
// per target the rates and both latencies' percentiles, then the
// reference's ratio to every peer. The reference is the first target whose
// name starts with "kbroker" ("kbroker", "kbroker x3"); without one there
// are no ratios.
func latencyReport(targets []benchTarget, at []latRun, rate fixedRate) string {
	if len(at) == 0 {
		return ""
	}
	byName := map[string]latRun{}
	for _, r := range at {
		byName[r.target] = r
	}
	w, ref := 9, ""
	for _, t := range targets {
		w = max(w, len(t.name))
		if _, ok := byName[t.name]; ok && ref == "" && strings.HasPrefix(t.name, "kbroker") {
			ref = t.name
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nfixed rate %s: latency in ms (publish: intended send → ack; e2e: intended send → consumer poll)\n", rate)
	fmt.Fprintf(&sb, "%-*s %8s %8s %8s", w, "target", "offered", "acked", "consumed")
	for _, kind := range []string{"pub", "e2e"} {
		for _, q := range latQuantiles {
			fmt.Fprintf(&sb, " %9s", kind+" "+q.name)
		}
	}
	fmt.Fprintf(&sb, " %8s  %s\n", "missing", "load before → after")
	for _, t := range targets {
		r, ok := byName[t.name]
		if !ok {
			continue
		}
		fmt.Fprintf(&sb, "%-*s %8.1f %8.1f %8.1f", w, t.name, r.offered, r.acked, r.consumed)
		for _, h := range []*hdrhistogram.Histogram{r.publish, r.e2e} {
			for _, q := range latQuantiles {
				fmt.Fprintf(&sb, " %9.2f", latMs(h, q.q))
			}
		}
		fmt.Fprintf(&sb, " %8d  %s\n", r.missing, r.load)
	}
	k, ok := byName[ref]
	if !ok {
		return sb.String()
	}
	for _, t := range targets {
		o, ok := byName[t.name]
		if !ok || t.name == ref {
			continue
		}
		fmt.Fprintf(&sb, "%s / %-8s", ref, t.name)
		for _, kind := range []struct {
			name string
			k, o *hdrhistogram.Histogram
		}{{"pub", k.publish, o.publish}, {"e2e", k.e2e, o.e2e}} {
			for _, q := range latQuantiles {
				fmt.Fprintf(&sb, " %s %s %s", kind.name, q.name, ratio(latMs(kind.k, q.q), latMs(kind.o, q.q)))
			}
		}
		fmt.Fprintf(&sb, "  acked MB/s %s\n", ratio(k.acked, o.acked))
	}
	return sb.String()
}

// ratio is a/b as "0.42x", or "-" when b is 0.
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
