package storage

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fdLimitChildEnv makes the test binary run the body of
// TestManyPartitionsUnderDescriptorLimit in a child process, whose
// descriptor limit it may lower without harming the other tests.
const fdLimitChildEnv = "KBROKER_STORAGE_FDLIMIT_CHILD"

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count descriptors: %v", err)
	}
	return len(ents)
}

// TestManyPartitionsUnderDescriptorLimit creates many partitions of several
// segments each under a low RLIMIT_NOFILE (in a child process), reads them
// all, closes, and reopens cleanly and after a crash: the descriptors held
// stay near one per partition plus log.segment.open.files.max, where Kafka
// would hold three per segment. Then, under a limit too low to pin every
// partition's active segment, the dir opens and serves every partition
// within the limit; and more partitions than the limit has descriptors
// are created, written and read, and the dir opens again under it.
func TestManyPartitionsUnderDescriptorLimit(t *testing.T) {
	if os.Getenv(fdLimitChildEnv) == "1" {
		manyPartitionsChild(t)
		return
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/self/fd")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestManyPartitionsUnderDescriptorLimit$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), fdLimitChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "descriptors") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

// fdScaleEnv, set to "<limit>,<partitions>,<cache max>" (e.g.
// "20000,10000,1000"), runs the child at that scale instead: a measurement
// for the 10,000 partitions under a limit of 20,000, too slow for
// every run.
const fdScaleEnv = "KBROKER_STORAGE_FDLIMIT_SCALE"

func manyPartitionsChild(t *testing.T) {
	limit, partitions, cacheMax := 512, 300, 40
	if v := os.Getenv(fdScaleEnv); v != "" {
		if _, err := fmt.Sscanf(v, "%d,%d,%d", &limit, &partitions, &cacheMax); err != nil {
			t.Fatalf("%s=%q: %v", fdScaleEnv, v, err)
		}
	}
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	setLimit := func(n uint64) {
		t.Helper()
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: orig.Max}); err != nil {
			t.Fatal(err)
		}
	}
	setLimit(uint64(limit))
	path := t.TempDir()
	// The baseline after a first open and close: the runtime keeps a few
	// descriptors (the poller) once files were used.
	if d, err := OpenDirConfig(t.TempDir(), DirConfig{Logger: quiet}); err != nil {
		t.Fatal(err)
	} else if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	base := openFDs(t)
	cfg := DirConfig{
		ConfigFor:           func(string, int32) Config { return Config{SegmentBytes: 400} },
		Logger:              quiet,
		SegmentOpenFilesMax: cacheMax,
	}
	d, err := OpenDirConfig(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Counting descriptors lists /proc/self/fd: sample it, not every step.
	peak, sample := 0, max(1, partitions/300)
	leo := map[TopicPartition]int64{}
	for i := range partitions {
		tp := TopicPartition{Topic: fmt.Sprintf("t%d", i/100), Partition: int32(i % 100)}
		if i > 0 && i%1000 == 0 {
			t.Logf("descriptors: %d partitions created, %d open", i, openFDs(t))
		}
		l, err := d.Create(tp, Config{SegmentBytes: 400})
		if err != nil {
			t.Fatalf("create partition %d of %d: %v", i, partitions, err)
		}
		for j := range 4 { // 4 segments each
			mustAppend(t, l, 0, batchOf(3, int64(j), 80))
		}
		leo[tp] = l.LogEndOffset()
		if i%sample == 0 {
			peak = max(peak, openFDs(t))
		}
	}
	readEvery := func(d *Dir) {
		i := 0
		for tp, want := range leo {
			l := d.Log(tp)
			if l == nil {
				t.Fatalf("%v missing", tp)
			}
			if got := l.LogEndOffset(); got != want {
				t.Fatalf("%v: log end %d, want %d", tp, got, want)
			}
			checkDense(t, readAll(t, l, 0), 0, want)
			if i++; i%sample == 0 {
				peak = max(peak, openFDs(t))
			}
		}
	}
	readEvery(d)
	bound := base + partitions + cacheMax + 16
	t.Logf("descriptors: %d partitions of 4 segments, peak %d open (baseline %d, bound %d, limit %d)", partitions, peak, base, bound, limit)
	if peak > bound {
		t.Fatalf("peak %d descriptors, want at most %d", peak, bound)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n > base {
		t.Fatalf("%d descriptors after close, %d before open", n, base)
	}

	// Clean reopen, then reopen as after a crash (no clean shutdown marker).
	for _, crash := range []bool{false, true} {
		if crash {
			if err := os.Remove(path + "/" + CleanShutdownFile); err != nil {
				t.Fatal(err)
			}
		}
		d, err := OpenDirConfig(path, cfg)
		if err != nil {
			t.Fatalf("reopen (crash %v): %v", crash, err)
		}
		readEvery(d)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// A limit too low to pin every partition's active segment: the dir
	// opens all the same, the partitions past the pin budget are opened on
	// demand through the cache, and the descriptors stay under the limit.
	low := base + partitions/2 + cacheMax
	setLimit(uint64(low))
	d, err = OpenDirConfig(path, cfg)
	if err != nil {
		t.Fatalf("open under a limit of %d for %d partitions: %v", low, partitions, err)
	}
	peak = 0
	readEvery(d)
	if peak > low {
		t.Fatalf("peak %d descriptors under a limit of %d", peak, low)
	}
	t.Logf("descriptors: %d partitions open under a limit of %d, peak %d", partitions, low, peak)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	setLimit(uint64(limit))
	start := time.Now()
	d, err = OpenDirConfig(path, cfg)
	if err != nil {
		t.Fatalf("open after raising the limit: %v", err)
	}
	t.Logf("descriptors: clean open of %d partitions took %v, %d open", partitions, time.Since(start), openFDs(t))

	// Create as many partitions again as the limit has descriptors, each
	// written twice (a roll in between): none is refused, every one reads
	// back, the descriptors stay under the limit, and the dir opens again
	// under that same limit.
	more := limit
	for i := 0; i < more; i++ {
		tp := TopicPartition{Topic: "more", Partition: int32(i)}
		l, err := d.Create(tp, Config{SegmentBytes: 400})
		if err != nil {
			t.Fatalf("create partition %d of %d more under a limit of %d: %v", i, more, limit, err)
		}
		mustAppend(t, l, 0, batchOf(3, 0, 150))
		mustAppend(t, l, 0, batchOf(3, 1, 150))
		leo[tp] = l.LogEndOffset()
		if i%sample == 0 {
			peak = max(peak, openFDs(t))
		}
	}
	readEvery(d)
	if peak > limit {
		t.Fatalf("peak %d descriptors under a limit of %d", peak, limit)
	}
	t.Logf("descriptors: %d partitions under a limit of %d, peak %d", len(leo), limit, peak)
	if err := d.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	d, err = OpenDirConfig(path, cfg)
	if err != nil {
		t.Fatalf("reopen under the same limit: %v", err)
	}
	readEvery(d)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
