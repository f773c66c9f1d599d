package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/compat/franzsuite"
)

// clusterSuiteSkips are the franz-go tests expected to skip themselves
// against the cluster: the suite runs without SASL listeners here
// (compat's TestFranzGoSuite covers SCRAM and OAUTHBEARER against one
// broker). Its share-group tests run: the cluster serves share groups with
// Kafka's split (broker/api/share_cluster.go).
var clusterSuiteSkips = regexp.MustCompile(`^(TestSCRAMAuth|TestSCRAMAuthBadCredentials|TestOAuthAuth)$`)

// clusterSuiteRunEnv, when set, is a -test.run pattern that runs only
// those franz-go tests (to chase one failure without the whole suite).
const clusterSuiteRunEnv = "KBROKER_KGO_SUITE_RUN"

// clusterSuiteRecords is the suite's record count per ETL test
// (KGO_TEST_RECORDS; franz-go's default is 500000, which compat's
// single-broker run keeps). Here three RF=3 brokers, ZooKeeper and the
// clients share two cores, and the three ETL tests (TestGroupETL,
// TestTxnEtl, TestShareGroupETL) run two at a time: TestShareGroupETL,
// which franz-go bounds by 4 minutes, took 35 s alone, 100 s beside
// TestGroupETL and once over 240 s in the whole suite. Every phase of
// those tests is a fraction of the count, so a fifth of it exercises the
// same paths.
const clusterSuiteRecords = "100000"

// clusterSuiteTimeout bounds the suite's run on a cluster.
const clusterSuiteTimeout = 25 * time.Minute

// TestFranzGoSuiteOnCluster runs franz-go's own pkg/kgo integration tests
// against three brokers with KGO_TEST_RF=3, so every topic they create is
// replicated three ways, consumer groups and transactions have their
// coordinators spread over the brokers, and transaction markers cross
// brokers. Every test must pass (or skip for a listed reason).
func TestFranzGoSuiteOnCluster(t *testing.T) {
	runFranzSuiteOnCluster(t, 3, 3, clusterSuiteRecords)
}

// TestFranzGoSuiteOnFiveBrokers runs the suite as the third-party suites'
// own compose files shape a cluster: five brokers and KGO_TEST_RF=2, so a
// group's or transaction's coordinator, and the broker a client asks,
// often host no replica of the partitions involved (Kafka answers from the
// cluster's metadata, not from local replicas). The ETL tests run with a
// fifth of the three-broker count: here they check the paths, not the
// volume.
func TestFranzGoSuiteOnFiveBrokers(t *testing.T) {
	runFranzSuiteOnCluster(t, 5, 2, "20000")
}

// franzSuiteBuild is franz-go's pkg/kgo test binary, compiled once for
// every cluster run of the test binary (removed by TestMain).
var franzSuiteBuild struct {
	once     sync.Once
	dir      string
	src, bin string
	err      error
}

// franzSuiteBinary compiles the suite on first use.
func franzSuiteBinary(t *testing.T) (src, bin string) {
	t.Helper()
	b := &franzSuiteBuild
	b.once.Do(func() {
		start := time.Now()
		if b.dir, b.err = os.MkdirTemp("", "kgo-suite-"); b.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), franzsuite.BuildTimeout)
		defer cancel()
		if b.src, b.err = franzsuite.Source(ctx, b.dir); b.err != nil {
			return
		}
		b.bin = filepath.Join(b.dir, "kgo.test")
		b.err = franzsuite.Build(ctx, b.src, b.bin)
		t.Logf("franz-go %s pkg/kgo compiled in %v", franzsuite.Version, time.Since(start).Round(time.Second))
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.src, b.bin
}

// removeFranzSuiteBinary removes what franzSuiteBinary built.
func removeFranzSuiteBinary() {
	if franzSuiteBuild.dir != "" {
		os.RemoveAll(franzSuiteBuild.dir)
	}
}

// runFranzSuiteOnCluster runs the suite against n brokers with
// KGO_TEST_RF=rf and KGO_TEST_RECORDS=records. Every test must pass (or
// skip for a listed reason).
func runFranzSuiteOnCluster(t *testing.T, n int, rf int, records string) {
	if testing.Short() {
		t.Skip("-short: the franz-go suite takes many minutes")
	}
	src, bin := franzSuiteBinary(t)
	z := StartZooKeeper(t)
	// Kafka's session and lag defaults: this test is about clients on a
	// healthy cluster, and a loaded two-core machine can stall a broker
	// past the failover tests' short timeouts.
	bs := StartCluster(t, z, n, map[string]string{"default.replication.factor": fmt.Sprint(rf), "min.insync.replicas": fmt.Sprint(max(1, rf-1)),
		"zookeeper.session.timeout.ms": "18000", "replica.lag.time.max.ms": "30000"})
	waitClusterFormed(t, bs, n)
	runStart := time.Now()
	events, stderrTail, runErr := franzsuite.Run(franzsuite.RunConfig{
		Bin: bin, Src: src, Timeout: clusterSuiteTimeout, Run: os.Getenv(clusterSuiteRunEnv),
		Env: []string{"KGO_SEEDS=" + strings.Join(addrsOf(bs), ","), fmt.Sprintf("KGO_TEST_RF=%d", rf), "KGO_TEST_RECORDS=" + records},
	})
	r := franzsuite.Summarize(events)
	t.Logf("franz-go %s pkg/kgo on %d brokers (RF=%d): %d passed, %d failed, %d unfinished, %d skipped in %v",
		franzsuite.Version, n, rf, len(r.Passed), len(r.Failed), len(r.Unfinished), len(r.Skipped), time.Since(runStart).Round(time.Second))
	t.Logf("slowest franz-go tests: %s", slowest(events, 5))
	for _, name := range r.Failed {
		t.Errorf("franz-go test %s failed:\n%s", name, r.Output[name].String())
	}
	for _, name := range r.Unfinished {
		t.Errorf("franz-go test %s did not finish:\n%s", name, franzsuite.LastLines(r.Output[name].String(), 40))
	}
	for _, name := range r.Skipped {
		if !clusterSuiteSkips.MatchString(name) {
			t.Errorf("unexpected skip of %s: %s", name, franzsuite.LastLines(r.Output[name].String(), 3))
		}
	}
	if errors.Is(runErr, franzsuite.ErrTimeout) {
		t.Errorf("the suite did not finish within %v", clusterSuiteTimeout)
	} else if runErr != nil && len(r.Failed) == 0 {
		t.Errorf("franz-go test binary: %v", runErr)
	}
	if len(r.Passed) == 0 {
		t.Error("the franz-go suite passed no test")
	}
	for _, b := range bs {
		if !b.Running() {
			t.Errorf("broker %d exited during the suite", b.ID)
		}
	}
	if t.Failed() {
		t.Logf("--- franz-go test binary stderr (tail) ---\n%s", franzsuite.LastLines(stderrTail, 200))
	}
}

// slowest lists the n top-level tests of a run that took longest.
func slowest(events []franzsuite.Event, n int) string {
	var done []franzsuite.Event
	for _, ev := range events {
		if (ev.Action == "pass" || ev.Action == "fail") && ev.Test != "" && !strings.Contains(ev.Test, "/") {
			done = append(done, ev)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].Elapsed > done[j].Elapsed })
	var out []string
	for _, ev := range done[:min(n, len(done))] {
		out = append(out, fmt.Sprintf("%s %.0fs (%s)", ev.Test, ev.Elapsed, ev.Action))
	}
	return strings.Join(out, ", ")
}
