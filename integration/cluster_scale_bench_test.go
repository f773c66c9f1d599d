package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkClusterScale measures a 3-broker cluster holding many
// partitions at RF 3 (issue 26: 30,000): KBROKER_BENCH_CLUSTER_TOPICS
// topics (default 300) of KBROKER_BENCH_PARTITIONS partitions (default
// 100), with Kafka's default zookeeper.session.timeout.ms (18 s, set
// KBROKER_BENCH_ZK_SESSION_MS to change it). It reports:
//
//   - create time, until every broker's Metadata shows a full ISR;
//
//   - controller failover: kill -9 of the controller until a surviving
//     broker's Metadata names a live leader for every partition (the
//     ZooKeeper session timeout is part of it: the controller's znode
//     goes only when its session expires), and the time for the killed
//     broker to rejoin every ISR after its restart;
//
//   - controlled shutdown: SIGTERM of a broker that is not the controller
//     (the one killed above, unless it became the controller again) until
//     it exits, and whether every partition then has a live leader;
//
//   - a rolling restart (SIGTERM, start, full ISR, next broker) under an
//     acks=all idempotent producer: its duration, the producer's longest
//     gap between acknowledgements, and that nothing failed.
//
//     go test ./integration/ -run '^$' -bench BenchmarkClusterScale -benchtime 1x -timeout 60m
//
// KBROKER_BENCH_CLUSTER_ROLLING=0 skips the rolling restart (to iterate on
// the other figures); KBROKER_BENCH_LOG_DIR=dir keeps each broker's whole
// log there as broker-<id>.log, KBROKER_BENCH_ACK_LOG=1 (or debug) logs the
// rolling restart's producer (integration.StartAckWatch),
// KBROKER_BENCH_BROKER_LOG_LEVEL sets the brokers' log.level.
func BenchmarkClusterScale(b *testing.B) {
	topics := EnvInt(b, "KBROKER_BENCH_CLUSTER_TOPICS", 300)
	perTopic := EnvInt(b, "KBROKER_BENCH_PARTITIONS", 100)
	session := EnvInt(b, "KBROKER_BENCH_ZK_SESSION_MS", 18000)
	total := topics * perTopic

	z := StartZooKeeper(b)
	props := map[string]string{
		"zookeeper.session.timeout.ms": strconv.Itoa(session),
		"min.insync.replicas":          "2",
		"default.replication.factor":   "3",
		"http.pprof.enable":            "true", // for profiling a run by hand
	}
	if level := os.Getenv("KBROKER_BENCH_BROKER_LOG_LEVEL"); level != "" {
		props["log.level"] = level
	}
	bs := StartCluster(b, z, 3, props)
	logDir := os.Getenv("KBROKER_BENCH_LOG_DIR")
	if logDir != "" {
		defer func() {
			for _, bp := range bs {
				path := filepath.Join(logDir, fmt.Sprintf("broker-%d.log", bp.ID))
				if err := os.WriteFile(path, []byte(bp.Log()), 0o644); err != nil {
					b.Errorf("keeping broker %d's log: %v", bp.ID, err)
				}
			}
		}()
	}
	ctrl := waitClusterFormed(b, bs, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[0].Addr(), bs[1].Addr(), bs[2].Addr()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	names := ScaleTopicNames(topics)

	t0 := time.Now()
	if err := CreateScaleTopics(ctx, kadm.NewClient(cl), names, perTopic); err != nil {
		b.Fatal(err)
	}
	createAcked := time.Since(t0)
	waitScaleState(b, bs, nil, total, true)
	createTook := time.Since(t0)

	// Controller failover.
	var dead *BrokerProc
	for _, bp := range bs {
		if bp.ID == ctrl {
			dead = bp
		}
	}
	t0 = time.Now()
	fmt.Fprintf(os.Stderr, "BenchmarkClusterScale: kill -9 of controller %d at %s\n", dead.ID, t0.UTC().Format("15:04:05.000"))
	dead.Kill()
	waitScaleState(b, bs, dead, total, false)
	failover := time.Since(t0)
	t0 = time.Now()
	dead.Restart()
	waitScaleState(b, bs, nil, total, true)
	rejoin := time.Since(t0)

	// Controlled shutdown of a broker that is not the controller: the one
	// just killed and restarted if it is not (the worst case: its close
	// follows the recovery of every log), so that runs compare alike.
	ctrl = waitClusterFormed(b, bs, 3)
	victim := dead
	for _, bp := range bs {
		if victim.ID == ctrl && bp.ID != ctrl {
			victim = bp
		}
	}
	fmt.Fprintf(os.Stderr, "BenchmarkClusterScale: controlled shutdown of broker %d (killed and restarted: %v)\n", victim.ID, victim == dead)
	SyncDisks()
	t0 = time.Now()
	if err := victim.Term(5 * time.Minute); err != nil {
		b.Fatal(err)
	}
	shutdown := time.Since(t0)
	t0 = time.Now()
	waitScaleState(b, bs, victim, total, false)
	leadersAfterShutdown := time.Since(t0)
	victim.Restart()
	waitScaleState(b, bs, nil, total, true)

	s := func(d time.Duration) float64 { return d.Seconds() }
	report := func(rolling string) {
		fmt.Fprintf(os.Stderr, `
BenchmarkClusterScale: 3 brokers, %d topics x %d partitions = %d partitions at RF 3
  CreateTopics answered                    %8.1f s
  every ISR full in every broker's cache   %8.1f s
  kill -9 of controller %d: every partition led by a live broker after %.1f s (zookeeper.session.timeout.ms=%d)
  its restart until every ISR is full      %8.1f s
  controlled shutdown (SIGTERM to exit)    %8.1f s, then every partition led after %.2f s more
  %s
%s`, topics, perTopic, total, s(createAcked), s(createTook), dead.ID, s(failover), session, s(rejoin),
			s(shutdown), s(leadersAfterShutdown), rolling, controllerTimings(bs))
	}
	if os.Getenv("KBROKER_BENCH_CLUSTER_ROLLING") == "0" {
		report("rolling restart skipped (KBROKER_BENCH_CLUSTER_ROLLING=0)")
		return
	}

	// Rolling restart under an acks=all idempotent producer.
	w := StartAckWatch(b, []string{bs[0].Addr(), bs[1].Addr(), bs[2].Addr()}, names[0])
	t0 = time.Now()
	if logDir != "" {
		stop := make(chan struct{})
		var dumps sync.WaitGroup
		dumps.Go(func() { dumpOnAckGap(b, logDir, bs, w, stop) })
		defer dumps.Wait()
		defer close(stop)
	}
	stamp := func() string { return time.Now().UTC().Format("15:04:05.000") }
	for _, bp := range bs {
		fmt.Fprintf(os.Stderr, "BenchmarkClusterScale: rolling restart: SIGTERM to broker %d at %s\n", bp.ID, stamp())
		if err := bp.Term(5 * time.Minute); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "BenchmarkClusterScale: rolling restart: broker %d exited at %s\n", bp.ID, stamp())
		bp.Restart()
		waitScaleState(b, bs, nil, total, true)
		fmt.Fprintf(os.Stderr, "BenchmarkClusterScale: rolling restart: broker %d back in every ISR at %s\n", bp.ID, stamp())
	}
	rolling := time.Since(t0)
	acked, failed, maxGap := w.Stop(b)
	if failed > 0 {
		b.Fatalf("%d acks=all records failed during the rolling restart", failed)
	}

	b.ReportMetric(s(createTook), "create-s")
	b.ReportMetric(s(failover), "failover-s")
	b.ReportMetric(s(shutdown), "shutdown-s")
	b.ReportMetric(s(rolling), "rolling-s")
	report(fmt.Sprintf("rolling restart of all three brokers     %8.1f s under acks=all: %d acked, 0 failed, longest gap between acks %v",
		s(rolling), acked, maxGap))
}

// dumpOnAckGap writes every running broker's goroutines
// (/debug/pprof/goroutine?debug=2) and a 3-s CPU profile to dir each time
// w's producer has gone 3 s without an acknowledgement (once per gap),
// until stop: what the brokers were doing while the rolling restart held
// the producer up.
func dumpOnAckGap(b *testing.B, dir string, bs []*BrokerProc, w *AckWatch, stop <-chan struct{}) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	dumped := false
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if w.SinceAck() < 3*time.Second {
			dumped = false
			continue
		}
		if dumped {
			continue
		}
		dumped = true
		at := time.Now().UTC().Format("150405.000")
		var profiles sync.WaitGroup
		for _, bp := range bs {
			if !bp.Running() {
				continue
			}
			save := func(query, name string) {
				if err := saveProfile(bp, query, filepath.Join(dir, fmt.Sprintf("gap-%s-broker-%d.%s", at, bp.ID, name))); err != nil {
					b.Logf("broker %d: %s: %v", bp.ID, query, err)
				}
			}
			save("goroutine?debug=2", "txt")
			profiles.Go(func() { save("profile?seconds=3", "cpu") })
		}
		profiles.Wait()
	}
}

// controllerTimings returns the brokers' log lines of each controller
// failover's own work (zkcontroller's "controller failover"), which the
// failover figure holds besides the ZooKeeper session expiry, and of each
// controlled shutdown's steps.
func controllerTimings(bs []*BrokerProc) string {
	var out strings.Builder
	for _, bp := range bs {
		for _, line := range strings.Split(bp.Log(), "\n") {
			if strings.Contains(line, "controller failover") || strings.Contains(line, "became controller") ||
				strings.Contains(line, "shutting down") || strings.Contains(line, "controlled shutdown") || strings.Contains(line, "broker stopped") ||
				strings.Contains(line, "kbroker started") {
				fmt.Fprintf(&out, "  broker %d: %s\n", bp.ID, line)
			}
		}
	}
	return out.String()
}

// waitScaleState waits until a running broker's Metadata (each running
// broker's, with fullISR) names total partitions of the scale-* topics,
// each led by a live broker other than down, with all three replicas in
// the ISR when fullISR.
func waitScaleState(b testing.TB, bs []*BrokerProc, down *BrokerProc, total int, fullISR bool) {
	b.Helper()
	downID, addrs := int32(-1), []string{}
	for _, bp := range bs {
		switch {
		case bp == down:
			downID = bp.ID
		case bp.Running():
			addrs = append(addrs, bp.Addr())
		}
	}
	WaitScale(b, addrs, downID, total, fullISR)
}
