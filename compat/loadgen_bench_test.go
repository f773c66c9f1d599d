package compat

// The load generator of BenchmarkFixedRate and BenchmarkClusterLatency
// (fixedrate_bench_test.go) runs as a process of its own: the test binary
// started again with KBROKER_BENCH_LOADGEN set to a loadgenSpec in JSON,
// which runMain (harness_test.go) checks before anything else. Its garbage
// collections and the page faults of its growing heap then no longer land
// in the process that hosts kfake, and its GOGC and memory limit are the
// same for every target.
//
// The child writes two JSON documents to its stdout, one after the other:
// a loadgenStart as soon as its window is scheduled, then a loadgenResult
// when the run is over. Its logs go to stderr, which the parent keeps for
// its failure messages.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// loadgenEnv is the environment variable that makes the test binary a load
// generator; its value is a loadgenSpec in JSON.
const loadgenEnv = "KBROKER_BENCH_LOADGEN"

// loadgenSpec is one run of the load generator: an open-loop producer
// offering OfferedMBps (a closed loop when 0) to Topic and a consumer
// tailing it.
type loadgenSpec struct {
	Target      string   `json:"target"` // the target's name, for messages
	Seeds       []string `json:"seeds"`
	Topic       string   `json:"topic"`
	Partitions  int      `json:"partitions"`
	OfferedMBps float64  `json:"offered_mbps"`
	// Start is the first intended send time as an offset from the moment
	// the child's clients are ready; the measured window follows Warmup
	// later and lasts Measure. The child keeps these times on its own
	// monotonic clock (latNow), which the producer and the consumer share.
	Start   time.Duration `json:"start_ns"`
	Warmup  time.Duration `json:"warmup_ns"`
	Measure time.Duration `json:"measure_ns"`
	// PayloadSize is the size of every value; the child fills one with
	// random bytes and writes each record's intended send time into its
	// first 8.
	PayloadSize int `json:"payload_size"`
	// GOGC is the child's GC percent and HeapMiB what its memory limit
	// allows over what it holds after a GC at its start.
	GOGC    int   `json:"gogc"`
	HeapMiB int64 `json:"heap_mib"`
	// TraceDir, when set, receives an execution trace of the child over
	// the measured window as <Topic>-client.trace.
	TraceDir string `json:"trace_dir,omitempty"`
}

// from and until bound the measured window, offsets from the child's clients
// being ready.
func (s loadgenSpec) from() time.Duration  { return s.Start + s.Warmup }
func (s loadgenSpec) until() time.Duration { return s.from() + s.Measure }

// loadgenStart is the child's first message: when its measured window
// begins, on the wall clock the parent shares.
type loadgenStart struct {
	From time.Time `json:"from"`
}

// loadgenResult is the child's last message.
type loadgenResult struct {
	Sent, Acked, Seen int64
	// Measured counts the records intended in the window, AckedBytes and
	// ConsumedBytes their values acknowledged and consumed.
	Measured, AckedBytes, ConsumedBytes int64
	// Missing counts records of the window not acknowledged or not
	// consumed by the end of the drain; Publish and E2E hold them at the
	// drain's end already.
	Missing int64
	// Failure is the first produce error, if any.
	Failure string `json:",omitempty"`
	// The histograms of latRun, exported by exportLatHist.
	Publish, E2E *hdrhistogram.Snapshot
	PerSec       []*hdrhistogram.Snapshot
	// Usage is what the load generator itself cost, over its whole run:
	// a load generator short of CPU or memory shows in every target's
	// tail.
	Usage loadgenUsage
}

// loadgenUsage is the load generator's own cost.
type loadgenUsage struct {
	// CPUSeconds is its user and system CPU (0 where not measured),
	// GCSeconds the runtime's estimate of the part its collector took.
	CPUSeconds, GCSeconds float64
	GCCycles              uint64
	// SysMiB is what the runtime held from the OS at the end, LimitMiB
	// its soft memory limit.
	SysMiB, LimitMiB int64
}

func (u loadgenUsage) String() string {
	return fmt.Sprintf("%.1f cpu-s (GC %.1f, %d cycles), %d MiB from the OS (limit %d MiB)", u.CPUSeconds, u.GCSeconds, u.GCCycles, u.SysMiB, u.LimitMiB)
}

// measure fills u from the runtime's metrics and the process's CPU
// time since cpu0.
func (u *loadgenUsage) measure(cpu0 time.Duration) {
	if cpu, ok := selfCPU(); ok {
		u.CPUSeconds = (cpu - cpu0).Seconds()
	}
	ms := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(ms)
	if ms[0].Value.Kind() == metrics.KindFloat64 {
		u.GCSeconds = ms[0].Value.Float64()
	}
	if ms[1].Value.Kind() == metrics.KindUint64 {
		u.GCCycles = ms[1].Value.Uint64()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	u.SysMiB = int64(m.Sys-m.HeapReleased) >> 20
	u.LimitMiB = debug.SetMemoryLimit(-1) >> 20
}

// exportLatHist is h as a snapshot without its trailing zero counts (most
// of the 21,504 of a latency histogram: Import leaves missing ones zero).
func exportLatHist(h *hdrhistogram.Histogram) *hdrhistogram.Snapshot {
	s := h.Export()
	n := len(s.Counts)
	for n > 0 && s.Counts[n-1] == 0 {
		n--
	}
	s.Counts = s.Counts[:n]
	return s
}

// importLatHist is the histogram s holds, or an error if s is not a valid
// snapshot.
func importLatHist(s *hdrhistogram.Snapshot) (*hdrhistogram.Histogram, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return hdrhistogram.Import(s), nil
}

// latRun rebuilds the run of target at offered MB/s that r reports,
// measured over measure; the caller adds the rate, round and load.
func (r *loadgenResult) latRun(target string, offered float64, measure time.Duration) (latRun, error) {
	out := latRun{target: target, offered: offered, missing: r.Missing}
	var err error
	if out.publish, err = importLatHist(r.Publish); err != nil {
		return latRun{}, fmt.Errorf("publish histogram: %w", err)
	}
	if out.e2e, err = importLatHist(r.E2E); err != nil {
		return latRun{}, fmt.Errorf("e2e histogram: %w", err)
	}
	if want := int((measure + time.Second - 1) / time.Second); len(r.PerSec) != want {
		return latRun{}, fmt.Errorf("%d histograms of seconds, want %d", len(r.PerSec), want)
	}
	for i, s := range r.PerSec {
		h, err := importLatHist(s)
		if err != nil {
			return latRun{}, fmt.Errorf("histogram of second %d: %w", i, err)
		}
		out.perSec = append(out.perSec, h)
	}
	secs := measure.Seconds()
	out.acked = float64(r.AckedBytes) / 1e6 / secs
	out.consumed = float64(r.ConsumedBytes) / 1e6 / secs
	return out, nil
}

// runLoadgenProc runs spec in a child process (this test binary with
// loadgenEnv set) and returns its result. started is called with the
// measured window's start as soon as the child reports it. The child is
// killed, with its whole process group, if it has not finished within
// warm-up + measured window + 5 minutes; that, an exit other than 0 or a
// report that does not decode fails the benchmark with the end of the
// child's stderr.
func runLoadgenProc(b *testing.B, spec loadgenSpec, started func(from time.Time)) *loadgenResult {
	exe, err := os.Executable()
	if err != nil {
		b.Fatalf("load generator: %v", err)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		b.Fatalf("load generator: %v", err)
	}
	timeout := spec.Warmup + spec.Measure + 5*time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), loadgenEnv+"="+string(js))
	cmd.SysProcAttr = groupProcAttr()
	cmd.Cancel = func() error { return killProcGroup(cmd) }
	cmd.WaitDelay = 10 * time.Second
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatalf("load generator: %v", err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("load generator: %v", err)
	}
	// fail kills the child if it still runs, reaps it and fails the
	// benchmark.
	fail := func(what string, err error) {
		_ = killProcGroup(cmd)
		werr := cmd.Wait()
		if ctx.Err() != nil {
			werr = fmt.Errorf("killed after %v: %w", timeout, werr)
		}
		b.Fatalf("%s: load generator: %s: %v (process: %v)\n--- its stderr (last 4000 bytes) ---\n%s",
			spec.Target, what, err, werr, tail(stderr.String(), 4000))
	}
	dec := json.NewDecoder(stdout)
	var st loadgenStart
	if err := dec.Decode(&st); err != nil {
		fail("reading its start", err)
	}
	started(st.From)
	var res loadgenResult
	if err := dec.Decode(&res); err != nil {
		fail("reading its result", err)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: load generator: %v\n--- its stderr (last 4000 bytes) ---\n%s", spec.Target, err, tail(stderr.String(), 4000))
	}
	if s := stderr.String(); s != "" {
		b.Logf("%s: load generator's stderr:\n%s", spec.Target, tail(s, 4000))
	}
	return &res
}

// loadgenMain is the test binary run as a load generator: it runs the spec
// in specJSON, writes the start and the result to stdout and returns the
// exit code.
func loadgenMain(specJSON string) int {
	var spec loadgenSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "load generator: %s: %v\n", loadgenEnv, err)
		return 2
	}
	enc := json.NewEncoder(os.Stdout)
	// Anything else printed goes to the logs, not into the report.
	os.Stdout = os.Stderr
	res, err := runLoadgen(spec, func(from time.Time) error { return enc.Encode(loadgenStart{From: from}) })
	if err == nil {
		err = enc.Encode(res)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "load generator (topic %q): %v\n", spec.Topic, err)
		return 1
	}
	return 0
}

// latEpoch is the origin of the load generator's monotonic clock, latNow,
// on which the intended send times written into values are nanoseconds.
var latEpoch = time.Now()

func latNow() int64 { return int64(time.Since(latEpoch)) }

// runLoadgen offers records at spec.OfferedMBps (as fast as the producer
// goes when 0) from spec.Start to the end of the measured window while a
// consumer tails the topic, and returns the latencies of the records
// intended during the window. started gets the window's start as soon as
// it is scheduled. A produce error ends up in the result's Failure; an
// error is returned for everything else that went wrong.
func runLoadgen(spec loadgenSpec, started func(from time.Time) error) (*loadgenResult, error) {
	if spec.PayloadSize < 8 || spec.Measure <= 0 || spec.Partitions <= 0 || len(spec.Seeds) == 0 {
		return nil, fmt.Errorf("spec %+v: want a payload of 8 bytes or more, a measured window, partitions and seeds", spec)
	}
	payload := make([]byte, spec.PayloadSize)
	if _, err := rand.Read(payload); err != nil {
		return nil, err
	}
	cpu0, _ := selfCPU()
	debug.SetGCPercent(spec.GOGC)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// What the memory limit counts: all the runtime holds from the OS and
	// has not released.
	debug.SetMemoryLimit(int64(ms.Sys-ms.HeapReleased) + spec.HeapMiB<<20)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	offered := spec.OfferedMBps
	perSecRecords := 1e6 / float64(spec.PayloadSize) * max(offered, 1)
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(spec.Seeds...),
		kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(max(10_000, int(perSecRecords))),
		kgo.MaxBufferedBytes(64<<20),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	defer prod.Close()
	offsets := map[int32]kgo.Offset{}
	for p := range int32(spec.Partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(spec.Seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.Topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(8<<20),
	)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	defer cons.Close()

	start := latNow() + int64(spec.Start)
	from := start + int64(spec.Warmup)
	until := from + int64(spec.Measure)
	if err := started(time.Now().Add(time.Duration(from - latNow()))); err != nil {
		return nil, err
	}
	window := func(intended int64) int { return int((intended - from) / int64(time.Second)) }
	publish, e2e := newLatHist(), newLatHist()
	perSec := make([]*hdrhistogram.Histogram, int((spec.Measure+time.Second-1)/time.Second))
	for i := range perSec {
		perSec[i] = newLatHist()
	}

	var (
		mu                sync.Mutex // guards the histograms
		sent, acked, seen atomic.Int64
		measured          atomic.Int64 // records intended in the window
		ackedBytes        atomic.Int64
		failed            atomic.Pointer[error]
	)
	var pool sync.Pool
	pool.New = func() any { v := slices.Clone(payload); return &v }

	// Consumer: every record's end-to-end latency at the poll that
	// returned it.
	consDone := make(chan struct{})
	var consumedBytes atomic.Int64
	go func() {
		defer close(consDone)
		for ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := latNow()
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) < 8 {
					return
				}
				intended := int64(binary.BigEndian.Uint64(r.Value))
				seen.Add(1)
				if intended >= from && intended < until {
					d := time.Duration(now - intended)
					recordLat(e2e, d)
					recordLat(perSec[window(intended)], d)
					consumedBytes.Add(int64(len(r.Value)))
				}
			})
			mu.Unlock()
		}
	}()

	// Producer: record i is intended at start + i*interval; records due
	// are produced at once, and a producer that fell behind (Produce
	// blocked on a full buffer) catches up in a burst, its lateness
	// counted in every latency.
	interval := int64(0)
	if offered > 0 {
		interval = int64(float64(spec.PayloadSize) / (offered * 1e6) * 1e9)
	}
	produce := func(intended int64) {
		vp := pool.Get().(*[]byte)
		binary.BigEndian.PutUint64(*vp, uint64(intended))
		sent.Add(1)
		in := intended >= from && intended < until
		if in {
			measured.Add(1)
		}
		prod.Produce(ctx, &kgo.Record{Topic: spec.Topic, Value: *vp}, func(r *kgo.Record, err error) {
			now := latNow()
			pool.Put(vp)
			if err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
			acked.Add(1)
			if in {
				ackedBytes.Add(int64(len(r.Value)))
				mu.Lock()
				recordLat(publish, time.Duration(now-intended))
				mu.Unlock()
			}
		})
	}
	for now := latNow(); now < start; now = latNow() {
		time.Sleep(time.Duration(start - now))
	}
	var traced sync.WaitGroup
	var traceErr error
	if spec.TraceDir != "" {
		traced.Go(func() {
			time.Sleep(time.Duration(from - latNow()))
			traceErr = traceFor(filepath.Join(spec.TraceDir, spec.Topic+"-client.trace"), spec.Measure)
		})
	}
	if interval > 0 {
		for i := int64(0); ; i++ {
			intended := start + i*interval
			if intended >= until {
				break
			}
			if d := intended - latNow(); d > 0 {
				time.Sleep(time.Duration(d))
			}
			produce(intended)
		}
	} else {
		// Closed loop: as fast as Produce returns (it blocks while the
		// buffer is full); the intended time is the call's.
		for now := latNow(); now < until; now = latNow() {
			produce(now)
		}
	}

	// Drain: up to 30 s for the last acknowledgements and records.
	drain, drainCancel := context.WithTimeout(ctx, 30*time.Second)
	_ = prod.Flush(drain)
	for drain.Err() == nil && seen.Load() < acked.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	drainCancel()
	end := latNow()
	cancel()
	<-consDone
	traced.Wait()
	if traceErr != nil {
		return nil, fmt.Errorf("client trace: %w", traceErr)
	}
	mu.Lock()
	defer mu.Unlock()
	res := &loadgenResult{
		Sent: sent.Load(), Acked: acked.Load(), Seen: seen.Load(), Measured: measured.Load(),
		AckedBytes: ackedBytes.Load(), ConsumedBytes: consumedBytes.Load(),
	}
	if e := failed.Load(); e != nil {
		res.Failure = (*e).Error()
	}
	late := min(time.Duration(end-until).Microseconds(), latMaxMicros)
	if missing := res.Measured - publish.TotalCount(); missing > 0 {
		res.Missing += missing
		_ = publish.RecordValues(late, missing)
	}
	if missing := res.Measured - e2e.TotalCount(); missing > 0 {
		res.Missing = max(res.Missing, missing)
		_ = e2e.RecordValues(late, missing)
	}
	res.Usage.measure(cpu0)
	res.Publish, res.E2E = exportLatHist(publish), exportLatHist(e2e)
	for _, h := range perSec {
		res.PerSec = append(res.PerSec, exportLatHist(h))
	}
	return res, nil
}

// traceFor writes an execution trace of this process over the next d to
// path.
func traceFor(path string, d time.Duration) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := trace.Start(f); err != nil {
		return errors.Join(err, f.Close())
	}
	time.Sleep(d)
	trace.Stop()
	return f.Close()
}
