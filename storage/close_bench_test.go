package storage

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// benchEnvInt reads a positive integer from the environment, or def.
func benchEnvInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// BenchmarkDirClose measures Dir.Close of a dir of many logs (issue 26:
// a broker with tens of thousands of partitions took most of a minute to
// exit). "written": every log got one small record since it was opened,
// as on a broker that served traffic; "idle": the dir was closed cleanly
// and reopened with nothing written since. KBROKER_BENCH_CLOSE_LOGS logs (default 3,000),
// KBROKER_BENCH_CLOSE_THREADS close threads (default 2, Kafka's
// num.recovery.threads.per.data.dir). What is timed is a broker's
// shutdown of the dir (closeWithSnapshots); ms/log is its time per log.
func BenchmarkDirClose(b *testing.B) {
	n := benchEnvInt(b, "KBROKER_BENCH_CLOSE_LOGS", 3000)
	threads := benchEnvInt(b, "KBROKER_BENCH_CLOSE_THREADS", DefaultRecoveryThreads)
	rec := batchOf(1, 1, 100)
	for _, written := range []bool{true, false} {
		name := "idle"
		if written {
			name = "written"
		}
		b.Run(fmt.Sprintf("%s/logs=%d/threads=%d", name, n, threads), func(b *testing.B) {
			var total time.Duration
			for range b.N {
				b.StopTimer()
				path := b.TempDir()
				cfg := DirConfig{Logger: quiet, RecoveryThreads: threads}
				d, err := OpenDirConfig(path, cfg)
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					l, err := d.Create(TopicPartition{"bench", int32(i)}, Config{})
					if err != nil {
						b.Fatal(err)
					}
					if written {
						mustAppend(b, l, 0, append([]byte(nil), rec...))
					}
				}
				if !written {
					if err := closeWithSnapshots(d, threads); err != nil {
						b.Fatal(err)
					}
					if d, err = OpenDirConfig(path, cfg); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				b.StartTimer()
				if err := closeWithSnapshots(d, threads); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				total += time.Since(start)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N*n), "ms/log")
		})
	}
}

// closeWithSnapshots closes d as the broker's replica manager does: a
// producer snapshot (empty state) at each log's end, threads at a time,
// then Dir.Close.
func closeWithSnapshots(d *Dir, threads int) error {
	logs := slices.Collect(maps.Values(d.Logs()))
	err := inParallel(len(logs), threads, func(i int) error {
		return logs[i].WriteProducerSnapshotAtClose(logs[i].LogEndOffset(), nil)
	})
	return errors.Join(err, d.Close())
}
