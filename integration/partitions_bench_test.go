package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkManyPartitions measures one broker without ZooKeeper holding
// many partitions (issue 13: 10,000 on one node). It creates
// KBROKER_BENCH_TOPICS topics (default 100) of KBROKER_BENCH_PARTITIONS
// partitions (default 100), produces one record to every partition, and
// reports, next to the targets:
//
//   - the latency of a Metadata request for all topics (p50/p99 over
//     KBROKER_BENCH_METADATA_REQUESTS requests, default 200), both through
//     kgo's Client.Request (which also decodes and caches the answer) and
//     sent straight to the broker (Broker.Request);
//   - the broker's RSS (VmRSS) and open descriptors after the load;
//   - the start-up time after SIGTERM (a clean stop) and after SIGKILL (the
//     logs written since the last recovery-point checkpoint are recovered):
//     from exec to /readyz answering 200.
//
// With KBROKER_BENCH_PPROF set to a directory, the broker's heap profile
// after the load and a CPU profile of the Metadata loop are written there.
// The setup runs once; run it with -benchtime 1x:
//
//	go test ./integration/ -run '^$' -bench BenchmarkManyPartitions -benchtime 1x
func BenchmarkManyPartitions(b *testing.B) {
	topics := EnvInt(b, "KBROKER_BENCH_TOPICS", 100)
	perTopic := EnvInt(b, "KBROKER_BENCH_PARTITIONS", 100)
	requests := EnvInt(b, "KBROKER_BENCH_METADATA_REQUESTS", 200)
	profDir := os.Getenv("KBROKER_BENCH_PPROF")
	total := topics * perTopic

	p := startSingleHTTP(b)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()

	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("many-%04d", i)
	}
	t0 := time.Now()
	adm := kadm.NewClient(cl)
	const perRequest = 10
	for i := 0; i < len(names); i += perRequest {
		resp, err := adm.CreateTopics(ctx, int32(perTopic), 1, nil, names[i:min(i+perRequest, len(names))]...)
		if err != nil {
			b.Fatal(err)
		}
		if err := resp.Error(); err != nil {
			b.Fatal(err)
		}
	}
	createTook := time.Since(t0)

	t0 = time.Now()
	produceEveryPartition(b, cl, names, perTopic, "first")
	produceTook := time.Since(t0)

	b.ResetTimer()
	viaClient, direct := metadataLatencies(b, cl, requests, total)
	b.StopTimer()
	listOffsets := listOffsetsLatencies(b, cl, names, perTopic, requests/10+1)
	if profDir != "" {
		profileMetadata(b, p, cl, filepath.Join(profDir, "cpu-metadata.pprof"))
	}

	rss, fds := procStats(b, p)
	if profDir != "" {
		if err := saveProfile(p, "heap", filepath.Join(profDir, "heap.pprof")); err != nil {
			b.Fatal(err)
		}
	}

	t0 = time.Now()
	if err := p.Term(60 * time.Second); err != nil {
		b.Fatal(err)
	}
	stopTook := time.Since(t0)
	cleanStart := restartUntilReady(b, p)
	rssClean, _ := procStats(b, p)

	// Unflushed appends to every partition, then a crash: the restart
	// recovers every log from its last checkpointed recovery point.
	cl.ForceMetadataRefresh()
	produceEveryPartition(b, cl, names, perTopic, "second")
	p.Kill()
	killStart := restartUntilReady(b, p)
	rssKill, fdsKill := procStats(b, p)
	checkPartitions(b, cl, total)

	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(viaClient[len(viaClient)/2]), "meta-p50-ms")
	b.ReportMetric(ms(viaClient[len(viaClient)*99/100]), "meta-p99-ms")
	b.ReportMetric(ms(listOffsets[len(listOffsets)*99/100]), "listoffsets-p99-ms")
	b.ReportMetric(float64(rss)/1024, "rss-MB")
	b.ReportMetric(ms(cleanStart), "start-clean-ms")
	b.ReportMetric(ms(killStart), "start-kill9-ms")
	b.ReportMetric(float64(fds), "fds")

	fmt.Fprintf(os.Stderr, `
BenchmarkManyPartitions: %d topics x %d partitions = %d partitions, one broker
  create topics                %8.0f ms
  produce 1 record/partition   %8.0f ms
  Metadata (all topics), %d requests:
    via kgo Client.Request     p50 %7.2f ms  p99 %7.2f ms   (target < 50 ms)
    straight to the broker     p50 %7.2f ms  p99 %7.2f ms
  ListOffsets (latest, every partition in one request), %d requests:
                               p50 %7.2f ms  p99 %7.2f ms
  RSS after load               %8.1f MB                     (target < 200 MB)
  RSS after clean restart      %8.1f MB
  RSS after kill -9 restart    %8.1f MB
  open fds after load          %8d   after kill -9 restart %d
  SIGTERM to exit              %8.0f ms
  start-up after SIGTERM       %8.0f ms                     (target < 2000 ms)
  start-up after SIGKILL       %8.0f ms                     (target < 10000 ms)
`, topics, perTopic, total, ms(createTook), ms(produceTook), requests,
		ms(viaClient[len(viaClient)/2]), ms(viaClient[len(viaClient)*99/100]),
		ms(direct[len(direct)/2]), ms(direct[len(direct)*99/100]),
		len(listOffsets), ms(listOffsets[len(listOffsets)/2]), ms(listOffsets[len(listOffsets)*99/100]),
		float64(rss)/1024, float64(rssClean)/1024, float64(rssKill)/1024, fds, fdsKill,
		ms(stopTook), ms(cleanStart), ms(killStart))
}

// startSingleHTTP starts one kbroker without ZooKeeper, with its HTTP
// listener (/readyz, /debug/pprof/) on.
func startSingleHTTP(b testing.TB) *BrokerProc {
	port, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	hport, err := freePort()
	if err != nil {
		b.Fatal(err)
	}
	p := &BrokerProc{ID: 0, Host: "127.0.0.1", Port: port, HTTPPort: hport, Dir: b.TempDir(), t: b, Props: map[string]string{
		"listeners":                 "PLAINTEXT://127.0.0.1:" + strconv.Itoa(port),
		"http.listeners":            fmt.Sprintf("http://127.0.0.1:%d", hport),
		"schema.registry.listeners": "",
		"rest.proxy.listeners":      "",
		"http.pprof.enable":         "true",
	}}
	p.Props["log.dirs"] = filepath.Join(p.Dir, "data")
	p.start(buildKbroker(b))
	b.Cleanup(func() {
		p.Kill()
		if b.Failed() {
			b.Logf("broker log (last 8 KiB):\n%s", lastBytes(p.Log(), 8<<10))
		}
	})
	waitFor(b, 30*time.Second, "the single broker", func() (bool, error) {
		code, _, err := p.Readyz()
		return code == http.StatusOK, err
	})
	return p
}

// restartUntilReady starts the stopped broker again and returns the time
// from exec to /readyz answering 200, polled every 2 ms.
func restartUntilReady(b testing.TB, p *BrokerProc) time.Duration {
	t0 := time.Now()
	p.Restart()
	deadline := t0.Add(120 * time.Second)
	for {
		if code, _, _ := p.Readyz(); code == http.StatusOK {
			return time.Since(t0)
		}
		if !p.Running() {
			b.Fatalf("the broker exited while starting:\n%s", lastBytes(p.Log(), 4000))
		}
		if time.Now().After(deadline) {
			b.Fatalf("the broker was not ready within %v", deadline.Sub(t0))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// lastBytes returns the last n bytes of s.
func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// produceEveryPartition writes one small record to every partition and
// waits for all of them.
func produceEveryPartition(b testing.TB, cl *kgo.Client, names []string, perTopic int, value string) {
	var recs []*kgo.Record
	for _, n := range names {
		for i := 0; i < perTopic; i++ {
			recs = append(recs, &kgo.Record{Topic: n, Partition: int32(i), Value: []byte(value)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
}

// metadataLatencies sends n Metadata requests for all topics through the
// client and n straight to the broker, checks that each names total
// partitions, and returns both sets of latencies, sorted.
func metadataLatencies(b testing.TB, cl *kgo.Client, n, total int) (viaClient, direct []time.Duration) {
	ctx := context.Background()
	count := func(resp kmsg.Response) {
		m := resp.(*kmsg.MetadataResponse)
		got := 0
		for _, t := range m.Topics {
			if t.ErrorCode != 0 {
				b.Fatalf("metadata: topic %v: error %d", t.Topic, t.ErrorCode)
			}
			got += len(t.Partitions)
		}
		if got != total {
			b.Fatalf("metadata names %d partitions, want %d", got, total)
		}
	}
	req := kmsg.NewPtrMetadataRequest() // Topics nil: all topics
	timed := func(send func(context.Context, kmsg.Request) (kmsg.Response, error)) []time.Duration {
		var lat []time.Duration
		for i := 0; i < n; i++ {
			t0 := time.Now()
			resp, err := send(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			count(resp)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return lat
	}
	viaClient = timed(cl.Request)
	direct = timed(cl.Broker(0).Request)
	return viaClient, direct
}

// listOffsetsLatencies times n ListOffsets requests for the latest offset
// of every partition (one request, as a consumer group's lag check sends
// it), sent straight to the broker, and checks each answer: every
// partition holds the one record produceEveryPartition wrote.
func listOffsetsLatencies(b testing.TB, cl *kgo.Client, names []string, perTopic, n int) []time.Duration {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, name := range names {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = name
		for p := 0; p < perTopic; p++ {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = int32(p)
			rp.Timestamp = -1 // latest
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	var lat []time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		resp, err := cl.Broker(0).Request(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		got := 0
		for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Offset != 1 {
					b.Fatalf("ListOffsets %s/%d: error %d, offset %d; want offset 1", t.Topic, p.Partition, p.ErrorCode, p.Offset)
				}
				got++
			}
		}
		if got != len(names)*perTopic {
			b.Fatalf("ListOffsets answered %d partitions, want %d", got, len(names)*perTopic)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

// checkPartitions fails unless Metadata names total partitions, each with
// a leader.
func checkPartitions(b testing.TB, cl *kgo.Client, total int) {
	resp, err := cl.Request(context.Background(), kmsg.NewPtrMetadataRequest())
	if err != nil {
		b.Fatal(err)
	}
	got := 0
	for _, t := range resp.(*kmsg.MetadataResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				b.Fatalf("after restart: %v/%d: error %d leader %d", t.Topic, p.Partition, p.ErrorCode, p.Leader)
			}
			got++
		}
	}
	if got != total {
		b.Fatalf("after restart metadata names %d partitions, want %d", got, total)
	}
}

// procStats returns the broker's VmRSS in KiB and its open descriptors.
func procStats(b testing.TB, p *BrokerProc) (rssKiB, fds int) {
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKiB, err = strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatal(err)
	}
	return rssKiB, len(ents)
}

// saveProfile writes the broker's /debug/pprof/<name> to path.
func saveProfile(p *BrokerProc, name, path string) error {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/%s", net.JoinHostPort(p.Host, strconv.Itoa(p.HTTPPort)), name))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileMetadata writes a 5 s CPU profile of the broker answering
// Metadata requests for all topics back to back.
func profileMetadata(b testing.TB, p *BrokerProc, cl *kgo.Client, path string) {
	done := make(chan error, 1)
	go func() { done <- saveProfile(p, "profile?seconds=5", path) }()
	br := cl.Broker(0)
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatal(err)
			}
			return
		default:
		}
		if _, err := br.Request(context.Background(), kmsg.NewPtrMetadataRequest()); err != nil {
			b.Fatal(err)
		}
	}
}
