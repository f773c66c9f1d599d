package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// On a freshly booted virtual machine the first touch of each page of
// guest memory costs a fault in the hypervisor: measured here, writing
// 1 GiB into the page cache took 3.1 s of system CPU the first time and
// 0.3 s once the pages had been touched and freed (dd to a new file, then
// again after rm). A benchmark whose targets grow the page cache then
// charges whichever target first touches new memory, and numbers from a
// new machine are not those of one that has run for a while: the
// single-broker produce of kbroker measured 276 MB/s at 3.4 CPU-s/GB of
// broker time cold, and 657 MB/s at 0.89 warm, in two runs of one build.
// benchWarmMemory writes and removes a file once per test process, before
// the first round, so every target's appends land in pages the guest has
// touched before. Where the balloon reports free memory to the host at
// once (session 27's VM) the removal undoes that within seconds;
// benchBallast keeps the pages in use instead.

// benchWarmEnv sets the GiB benchWarmMemory writes (default 8; 0 turns it off).
const benchWarmEnv = "KBROKER_BENCH_WARM_GIB"

var benchWarmOnce sync.Once

// benchWarmMemory writes KBROKER_BENCH_WARM_GIB GiB (default 8, at most a
// quarter of the machine's available memory) of zeros to a file in a
// temporary directory, fsyncs and removes it, once per process, and logs
// the rate.
func benchWarmMemory(b *testing.B) { benchWarmOnce.Do(func() { warmPageCache(b) }) }

// warmPageCache is benchWarmMemory's write, every time it is called:
// BenchmarkClusterLatency warms before each cluster it starts, so that
// each begins where the one before it found the machine.
func warmPageCache(b *testing.B) {
	size := benchGiB(b, benchWarmEnv, 8)
	if avail := memAvailable(); avail > 0 && size > avail/4 {
		size = avail / 4
	}
	if size <= 0 {
		return
	}
	dir, err := os.MkdirTemp("", "kbroker-bench-warm")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "warm")
	took := writeZeros(b, path, size)
	if err := os.Remove(path); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("warmed %.1f GiB of page cache in %v (%.0f MB/s; %s=0 skips it)\n",
		float64(size)/(1<<30), took.Round(time.Millisecond), float64(size)/1e6/took.Seconds(), benchWarmEnv)
}

// benchGiB is the size in bytes that the environment variable name gives
// in GiB, def GiB when it is unset.
func benchGiB(b *testing.B, name string, def int64) int64 {
	s := os.Getenv(name)
	if s == "" {
		return def << 30
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a number of GiB", name, s)
	}
	return n << 30
}

// writeZeros creates path with size bytes of zeros (rounded up to MiB),
// fsyncs and closes it, and returns how long that took.
func writeZeros(b *testing.B, path string, size int64) time.Duration {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	start := time.Now()
	for n := int64(0); n < size; n += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			b.Fatalf("filling the page cache: %v", err)
		}
	}
	if err := f.Sync(); err != nil {
		b.Fatalf("filling the page cache: %v", err)
	}
	return time.Since(start)
}

// benchBallastEnv sets the GiB of page cache benchBallast keeps filled.
const benchBallastEnv = "KBROKER_BENCH_BALLAST_GIB"

// benchBallastHeld is the size of the ballast file that exists now: disk
// space benchAwaitDeletes must not wait for.
var benchBallastHeld atomic.Int64

// benchBallast fills KBROKER_BENCH_BALLAST_GIB GiB of the page cache (0 or
// unset: nothing; at most the available memory less 3 GiB) with a clean
// file it keeps until the benchmark ends, so the targets' appends are
// made by reclaiming its pages: the steady state of a machine whose page
// cache is full, as a long-running broker's is. Without it, each new page
// on this VM costs a fault in the hypervisor, because the balloon driver
// hands free memory back to the host in 2 MiB blocks as soon as they are
// free (free page reporting: written, removed and written again 30 s
// later, 1 GiB took 2.3–2.5 CPU-s instead of 0.26), and that cost, the
// same for every broker per byte written, is most of each one's produce
// CPU.
func benchBallast(b *testing.B) {
	size := benchGiB(b, benchBallastEnv, 0)
	if avail := memAvailable() - 3<<30; size > avail {
		size = avail
	}
	if size <= 0 {
		return
	}
	// Both this and TempDir's removal of the file run when b ends, before
	// a later sub-benchmark waits on the disk.
	benchBallastHeld.Add(size)
	b.Cleanup(func() { benchBallastHeld.Add(-size) })
	took := writeZeros(b, filepath.Join(b.TempDir(), "ballast"), size)
	fmt.Printf("filled %.1f GiB of page cache in %v with a file kept to the end (%s)\n",
		float64(size)/(1<<30), took.Round(time.Millisecond), benchBallastEnv)
}

// memAvailable is MemAvailable of /proc/meminfo in bytes, 0 if unknown.
func memAvailable() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb int64
	for _, line := range strings.Split(string(data), "\n") {
		if _, err := fmt.Sscanf(line, "MemAvailable: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 0
}
