package compat

// BenchmarkJavaPerfTools: Kafka's own benchmark tools against Apache Kafka
// 4.4.0, kbroker and kfake on this machine, one after the other:
// kafka-producer-perf-test with 1 KiB records and acks=all, uncompressed and
// with lz4, then kafka-consumer-perf-test reading the uncompressed topic. It
// prints MB/s, records/s and the producer's p50/p99/p99.9 latencies for
// each, and kbroker's ratios to Kafka (the system users would pick instead).
// Not a timed test: the tools measure themselves, whatever b.N is.
//
//	go test ./compat/ -run '^$' -bench BenchmarkJavaPerfTools -benchtime 1x
//
// KBROKER_BENCH_RECORDS sets the record count (default 200000). Each broker
// gets the same two three-partition topics, created up front.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// perfResult is one tool run's numbers.
type perfResult struct {
	recPerSec, mbPerSec float64
	p50, p99, p999      float64 // ms; producer only
}

var (
	// "200000 records sent, 51234.5 records/sec (50.03 MB/sec), 300.2 ms avg
	// latency, 900.0 ms max latency, 280 ms 50th, 800 ms 95th, 880 ms 99th,
	// 899 ms 99.9th."
	producerPerfRE = regexp.MustCompile(`(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\).*?(\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th`)
)

func parseProducerPerf(out string) (perfResult, error) {
	m := producerPerfRE.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return perfResult{}, fmt.Errorf("no summary line in kafka-producer-perf-test output:\n%s", tail(out, 2000))
	}
	last := m[len(m)-1]
	f := func(i int) float64 { v, _ := strconv.ParseFloat(last[i], 64); return v }
	return perfResult{recPerSec: f(2), mbPerSec: f(3), p50: f(4), p99: f(5), p999: f(6)}, nil
}

// parseConsumerPerf reads the data line of kafka-consumer-perf-test:
// start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
// nMsg.sec, ...
func parseConsumerPerf(out string, want int) (perfResult, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, ", ")
		if len(f) < 6 || strings.HasPrefix(line, "start.time") {
			continue
		}
		n, err1 := strconv.Atoi(strings.TrimSpace(f[4]))
		mbps, err2 := strconv.ParseFloat(strings.TrimSpace(f[3]), 64)
		rps, err3 := strconv.ParseFloat(strings.TrimSpace(f[5]), 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		if n < want {
			return perfResult{}, fmt.Errorf("consumed %d records, want %d", n, want)
		}
		return perfResult{recPerSec: rps, mbPerSec: mbps}, nil
	}
	return perfResult{}, fmt.Errorf("no data line in kafka-consumer-perf-test output:\n%s", tail(out, 2000))
}

func BenchmarkJavaPerfTools(b *testing.B) {
	ensureJava(b)
	records := 200000
	if s := os.Getenv("KBROKER_BENCH_RECORDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("KBROKER_BENCH_RECORDS=%q: %v", s, err)
		}
		records = n
	}
	benchWarmMemory(b) // bench_warm_test.go
	bin := filepath.Join(javaDir(b), "bin")
	type target struct{ name, addr string }
	var targets []target
	k := startKafka(b)
	targets = append(targets, target{"Apache Kafka 4.4.0", k.Addr()})
	kb := startBroker(b, b.TempDir(), matrixOverrides...)
	targets = append(targets, target{"kbroker", kb.Addr()})
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(b.TempDir()))
	if err != nil {
		b.Fatalf("kfake: %v", err)
	}
	defer kf.Close()
	targets = append(targets, target{"kfake", kf.ListenAddrs()[0]})

	type row struct {
		target, test string
		r            perfResult
	}
	var rows []row
	n := strconv.Itoa(records)
	for _, tg := range targets {
		// kfake does not auto-create topics; every broker gets the same
		// three-partition topics up front.
		adm := newAdmin(b, tg.addr)
		for _, codec := range []string{"none", "lz4"} {
			createTopic(b, adm, "perf-"+codec, 3, nil)
		}
		for _, codec := range []string{"none", "lz4"} {
			topic := "perf-" + codec
			out := runTool(bin, "kafka-producer-perf-test.sh", "", []string{"--topic", topic, "--num-records", n,
				"--record-size", "1024", "--throughput", "-1", "--producer-props", "bootstrap.servers=" + tg.addr,
				"acks=all", "compression.type=" + codec})
			if out.err != nil || out.code != 0 {
				b.Fatalf("%s: producer perf test (%s): %s", tg.name, codec, out)
			}
			r, err := parseProducerPerf(out.stdout)
			if err != nil {
				b.Fatalf("%s: %v", tg.name, err)
			}
			rows = append(rows, row{tg.name, "produce 1 KiB acks=all " + codec, r})
			b.Logf("%s: produce %s: %.2f MB/s, p99 %.0f ms", tg.name, codec, r.mbPerSec, r.p99)
		}
		out := runTool(bin, "kafka-consumer-perf-test.sh", "", []string{"--bootstrap-server", tg.addr,
			"--topic", "perf-none", "--messages", n, "--timeout", "60000"})
		if out.err != nil || out.code != 0 {
			b.Fatalf("%s: consumer perf test: %s", tg.name, out)
		}
		r, err := parseConsumerPerf(out.stdout, records)
		if err != nil {
			b.Fatalf("%s: %v", tg.name, err)
		}
		rows = append(rows, row{tg.name, "consume", r})
	}

	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d records of 1 KiB per run (kafka-producer-perf-test / kafka-consumer-perf-test 4.4.0)\n", records)
	fmt.Fprintf(&sb, "%-20s %-28s %10s %12s %8s %8s %8s\n", "broker", "test", "MB/s", "records/s", "p50 ms", "p99 ms", "p99.9 ms")
	kafkaBy := map[string]perfResult{}
	for _, r := range rows {
		if r.target == targets[0].name {
			kafkaBy[r.test] = r.r
		}
		fmt.Fprintf(&sb, "%-20s %-28s %10.2f %12.0f %8.0f %8.0f %8.0f\n", r.target, r.test, r.r.mbPerSec, r.r.recPerSec, r.r.p50, r.r.p99, r.r.p999)
	}
	sb.WriteString("kbroker / Kafka:\n")
	for _, r := range rows {
		if r.target != "kbroker" {
			continue
		}
		kr := kafkaBy[r.test]
		ratio := func(a, b float64) string {
			if b == 0 {
				return "n/a"
			}
			return fmt.Sprintf("%.2fx", a/b)
		}
		fmt.Fprintf(&sb, "  %-28s throughput %s, p50 %s, p99 %s, p99.9 %s\n", r.test, ratio(r.r.mbPerSec, kr.mbPerSec),
			ratio(r.r.p50, kr.p50), ratio(r.r.p99, kr.p99), ratio(r.r.p999, kr.p999))
	}
	fmt.Print(sb.String())
	kb.Alive()
}
