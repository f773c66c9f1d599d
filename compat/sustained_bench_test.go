package compat

// BenchmarkSustained writes more than fits comfortably in the page cache
// through kbroker while a consumer tails the topic (issue 26), beside `dd`
// writing the same number of bytes to the same disk in the same run:
//
//   - dd if=/dev/zero bs=1M, buffered (what the page cache and writeback
//     take without an fsync), its rate as dd prints it;
//   - kbroker: a closed-loop franz-go producer (acks=all, idempotent, 1 KiB
//     incompressible values, 4 partitions) until the total is acknowledged,
//     and a consumer reading from the start; MB/s acknowledged per 5-second
//     window, the longest gap between two acknowledgements (a stall), and
//     the consumer's largest lag behind the acknowledged bytes.
//
// KBROKER_BENCH_SUSTAINED_GB sets the total (default 20); check free space
// first (it needs the total twice: dd's file is removed before kbroker
// runs, kbroker's log stays until the end). KBROKER_BENCH_BASELINE adds
// another kbroker build, run after the first on its own topic
// (KBROKER_BENCH_BASELINE_FIRST=1: before it).
//
//	KBROKER_BENCH_SUSTAINED_GB=20 go test ./compat/ -run '^$' -bench BenchmarkSustained -benchtime 1x -timeout 2h

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sustainedWindow is the width of one throughput window.
const sustainedWindow = 5 * time.Second

func BenchmarkSustained(b *testing.B) {
	gb := 20.0
	if s := os.Getenv("KBROKER_BENCH_SUSTAINED_GB"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			b.Fatalf("KBROKER_BENCH_SUSTAINED_GB=%q: want a positive number", s)
		}
		gb = v
	}
	total := int64(gb * 1e9)
	dir := b.TempDir()
	benchWarmMemory(b) // bench_warm_test.go

	type target struct{ name, addr string }
	var targets []target
	kb := startBroker(b, filepath.Join(dir, "kbroker"))
	targets = append(targets, target{"kbroker", kb.Addr()})
	if bin := os.Getenv("KBROKER_BENCH_BASELINE"); bin != "" {
		base := startBrokerBin(b, bin, filepath.Join(dir, "baseline"))
		targets = append(targets, target{"baseline", base.Addr()})
		if os.Getenv("KBROKER_BENCH_BASELINE_FIRST") != "" {
			slices.Reverse(targets) // the other order, to see what the order costs
		}
	}
	b.Run("run", func(b *testing.B) {
		if b.N > 1 {
			b.Skip("one pass per benchmark: run with -benchtime 1x")
		}
		fmt.Printf("\nsustained load: %.1f GB, disk of %s (load %s)\n", float64(total)/1e9, dir, loadAvg())
		benchSync()
		ddMBps, err := sustainedDD(filepath.Join(dir, "dd.out"), total)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Printf("%-9s buffered write %.1f MB/s (load %s)\n", "dd", ddMBps, loadAvg())
		for _, t := range targets {
			benchSync()
			r := sustainedRun(b, t.name, t.addr, total)
			fmt.Print(r.report(ddMBps))
		}
	})
}

// sustainedDD runs dd of total bytes of zeros into path (buffered, no
// fsync), removes the file, and returns dd's rate in MB/s.
func sustainedDD(path string, total int64) (float64, error) {
	count := total >> 20
	out, err := exec.Command("dd", "if=/dev/zero", "of="+path, "bs=1M", "count="+strconv.FormatInt(count, 10)).CombinedOutput()
	os.Remove(path)
	if err != nil {
		return 0, fmt.Errorf("dd: %v\n%s", err, out)
	}
	// "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 1.2 s, 894 MB/s"
	m := regexp.MustCompile(`(\d+) bytes .* copied, ([\d.]+) s`).FindStringSubmatch(string(out))
	if m == nil {
		return 0, fmt.Errorf("dd printed %q", out)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	s, _ := strconv.ParseFloat(m[2], 64)
	return n / 1e6 / s, nil
}

// sustainedResult is one target's run.
type sustainedResult struct {
	name                string
	mbps                float64
	windows             []float64 // MB/s acknowledged per window
	longestStall        time.Duration
	maxLagBytes         int64
	loadBefore, loadEnd string
}

func (r sustainedResult) report(ddMBps float64) string {
	var sb strings.Builder
	minW, maxW := 0.0, 0.0
	for i, w := range r.windows {
		if i == 0 || w < minW {
			minW = w
		}
		maxW = max(maxW, w)
	}
	fmt.Fprintf(&sb, "%-9s %.1f MB/s acknowledged (%.0f%% of dd), 5-s windows %.0f-%.0f MB/s, longest stall %v, consumer lag at most %.1f MB (load %s → %s)\n",
		r.name, r.mbps, 100*r.mbps/ddMBps, minW, maxW, r.longestStall.Round(time.Millisecond), float64(r.maxLagBytes)/1e6, r.loadBefore, r.loadEnd)
	var ws []string
	for _, w := range r.windows {
		ws = append(ws, fmt.Sprintf("%.0f", w))
	}
	fmt.Fprintf(&sb, "%-9s windows: %s\n", "", strings.Join(ws, " "))
	return sb.String()
}

// sustainedRun produces total bytes to a new topic on addr as fast as they
// are acknowledged while a consumer tails it.
func sustainedRun(b *testing.B, name, addr string, total int64) sustainedResult {
	r := sustainedResult{name: name, loadBefore: loadAvg()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	pool := make([]byte, 64<<20)
	if _, err := rand.Read(pool); err != nil {
		b.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerLinger(time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(20_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	const topic, partitions = "sustained", 4
	resp, err := kadm.NewClient(prod).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatalf("%s: CreateTopic: %v", name, err)
	}
	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(64<<20), kgo.FetchMaxPartitionBytes(16<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()

	var acked, consumed, lastAck atomic.Int64
	var failed atomic.Pointer[error]
	start := time.Now()
	lastAck.Store(int64(time.Since(start)))
	var mu sync.Mutex
	stall := time.Duration(0)
	consDone := make(chan struct{})
	go func() {
		defer close(consDone)
		for consumed.Load() < total && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			fs.EachRecord(func(rec *kgo.Record) { consumed.Add(int64(len(rec.Value))) })
		}
	}()
	// The sampler: acknowledged bytes per window, the consumer's lag.
	sampDone := make(chan struct{})
	var windows []float64
	go func() {
		defer close(sampDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		prev, next := int64(0), start.Add(sustainedWindow)
		for now := range tick.C {
			a, c := acked.Load(), consumed.Load()
			mu.Lock()
			r.maxLagBytes = max(r.maxLagBytes, a-c)
			mu.Unlock()
			if !now.Before(next) {
				windows = append(windows, float64(a-prev)/1e6/sustainedWindow.Seconds())
				prev, next = a, next.Add(sustainedWindow)
			}
			if a >= total {
				return
			}
		}
	}()
	var sent int64
	for off := 0; sent < total && ctx.Err() == nil; off = (off + benchValueSize) % (len(pool) - benchValueSize) {
		sent += benchValueSize
		prod.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[off : off+benchValueSize]}, func(rec *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
				return
			}
			now := int64(time.Since(start))
			if gap := time.Duration(now - lastAck.Swap(now)); gap > 0 {
				mu.Lock()
				stall = max(stall, gap)
				mu.Unlock()
			}
			acked.Add(int64(len(rec.Value)))
		})
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatalf("%s: flush: %v", name, err)
	}
	if e := failed.Load(); e != nil {
		b.Fatalf("%s: produce: %v", name, *e)
	}
	elapsed := time.Since(start)
	<-sampDone
	<-consDone
	mu.Lock()
	defer mu.Unlock()
	r.mbps = float64(acked.Load()) / 1e6 / elapsed.Seconds()
	r.windows, r.longestStall, r.loadEnd = windows, stall, loadAvg()
	return r
}
