package compat

// TestFranzGoSuite runs franz-go's own integration tests (pkg/kgo of the
// franz-go release kbroker is built against) against a kbroker process.
// Those tests are written for a real Kafka cluster: they create topics, run
// ETL chains through consumer groups with every balancer, and check that no
// record is lost or duplicated.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/kbroker/kbroker/compat/franzsuite"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franzModule and franzVersion name the franz-go release whose tests run
// (compat/franzsuite, which builds and runs them).
const (
	franzModule  = franzsuite.Module
	franzVersion = franzsuite.Version
)

// pendingTxnTests are franz-go tests that need a transaction coordinator
// (InitProducerId with a transactional id, AddPartitionsToTxn, EndTxn,
// TxnOffsetCommit); without one the test's client retries
// COORDINATOR_NOT_AVAILABLE forever, so they are excluded with -skip. The
// list held TestTxnEtl until kbroker's transaction coordinator landed; it is
// empty now and stays the place to park a test that needs a broker feature
// still being built (the summary line counts them as "excluded").
var pendingTxnTests = []string{}

// expectedFranzSkips are patterns (regexps matched against the whole test
// name, subtests included) of the tests that skip themselves against
// kbroker today, with the reason. Every skip must match an active entry,
// every active entry must match at least one skip, and a test matching an
// active entry must not pass: when kbroker gains the feature, remove the
// line. An entry with untilAPI is active only while the broker does not
// advertise that API key at minVersion or higher (franz-go's tests decide to
// skip on the same ApiVersions answer), so the list stays right on both
// sides of the commit that adds the API.
var expectedFranzSkips = []struct {
	pattern string
	why     string
	// untilAPI: the entry is inactive once the broker advertises every one
	// of these API keys at the given minimum versions.
	untilAPI map[int16]int16
}{}

// franzRunTimeout bounds the suite's run (a manual run takes 3-4 min).
const franzRunTimeout = 10 * time.Minute

func TestFranzGoSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the franz-go suite takes minutes")
	}
	start := time.Now()
	res := &franzSuiteResult{
		Module:   franzModule + "@" + franzVersion,
		Package:  "pkg/kgo",
		Excluded: pendingTxnTests,
		Outcome:  statusFail,
	}
	t.Cleanup(func() {
		if !t.Failed() {
			res.Outcome = statusPass
		}
		res.Seconds = time.Since(start).Round(time.Second).Seconds()
		recordFranzSuite(res)
	})

	work := t.TempDir()
	buildCtx, cancel := context.WithTimeout(context.Background(), franzsuite.BuildTimeout)
	defer cancel()
	src, err := franzsuite.Source(buildCtx, work)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range pendingTxnTests {
		ok, err := franzsuite.DefinesTest(src, name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("pendingTxnTests names %s, which franz-go %s no longer defines: drop it from the list", name, franzVersion)
		}
	}
	bin := filepath.Join(work, "kgo.test")
	if err := franzsuite.Build(buildCtx, src, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("franz-go %s pkg/kgo compiled in %v", franzVersion, time.Since(start).Round(time.Second))

	// A PLAINTEXT listener for the suite and a SASL_PLAINTEXT one with a
	// SCRAM-SHA-256 user for its SCRAM tests and OAUTHBEARER (the unsecured
	// JWS validator, Kafka's default) for TestOAuthAuth.
	b, saslAddr := startSASLBroker(t, "group.initial.rebalance.delay.ms=0",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER")
	active := activeSkips(t, b.Addr())
	events, stderrTail, runErr := franzsuite.Run(franzsuite.RunConfig{
		Bin: bin, Src: src, Skip: pendingTxnTests, Timeout: franzRunTimeout,
		Env: []string{
			"KGO_SEEDS=" + b.Addr(),
			"KGO_TEST_RF=1",
			"KGO_TEST_SCRAM_SEEDS=" + saslAddr,
			"KGO_TEST_SCRAM=" + saslUser + ":" + saslScramPass + ":256",
			"KGO_TEST_OAUTH_SEEDS=" + saslAddr,
		},
	})
	if errors.Is(runErr, franzsuite.ErrTimeout) {
		t.Errorf("franz-go suite did not finish within %v; killed", franzRunTimeout)
	}

	// Final action per test (top-level and subtests) and each test's output.
	r := franzsuite.Summarize(events)
	final, output := r.Final, r.Output
	passed, failed, skipped, unfinished := r.Passed, r.Failed, r.Skipped, r.Unfinished
	res.Passed, res.Failed, res.Skipped = len(passed), len(failed)+len(unfinished), len(skipped)
	res.FailedTests = append(append([]string{}, failed...), unfinished...)

	// Skips against the expected list.
	var problems []string
	matchedPattern := make([]bool, len(expectedFranzSkips))
	expected := 0
	for _, name := range skipped {
		i := matchSkip(name, active)
		if i < 0 {
			problems = append(problems, fmt.Sprintf("unexpected skip %s (not in expectedFranzSkips): %s",
				name, franzsuite.LastLines(output[name].String(), 3)))
			continue
		}
		matchedPattern[i] = true
		expected++
	}
	res.ExpectedSkipped = expected
	for _, name := range passed {
		if i := matchSkip(name, active); i >= 0 {
			problems = append(problems, fmt.Sprintf("%s now passes but expectedFranzSkips lists it (%q: %s): remove that entry",
				name, expectedFranzSkips[i].pattern, expectedFranzSkips[i].why))
		}
	}
	for i, m := range matchedPattern {
		if !m && active[i] {
			problems = append(problems, fmt.Sprintf("expectedFranzSkips entry %q (%s) matched no skipped test: remove it",
				expectedFranzSkips[i].pattern, expectedFranzSkips[i].why))
		}
	}
	for _, name := range pendingTxnTests {
		if _, ran := final[name]; ran {
			problems = append(problems, fmt.Sprintf("%s ran although it is excluded", name))
		}
	}

	res.Summary = fmt.Sprintf("franz-go %s pkg/kgo: %d passed, %d failed, %d skipped (expected %d), %d excluded",
		franzVersion, res.Passed, res.Failed, res.Skipped, expected, len(pendingTxnTests))
	t.Log(res.Summary)
	fmt.Println(res.Summary)

	// franz-go's SCRAM and OAUTHBEARER tests ran against the SASL
	// listener: they are the matrix's SASL cell for franz-go.
	t.Run("SASL", func(t *testing.T) {
		recordCap(t, "franz-go (kgo, kadm)", moduleVersion(franzModule)+" (kadm "+moduleVersion(franzModule+"/pkg/kadm")+")", capSASL)
		for _, name := range []string{"TestSCRAMAuth", "TestSCRAMAuthBadCredentials", "TestOAuthAuth"} {
			if final[name] != "pass" {
				t.Errorf("franz-go %s: %q, want pass", name, final[name])
			}
		}
	})

	for _, name := range failed {
		t.Errorf("franz-go test %s failed:\n%s", name, output[name].String())
	}
	for _, name := range unfinished {
		t.Errorf("franz-go test %s did not finish:\n%s", name, franzsuite.LastLines(output[name].String(), 40))
	}
	for _, p := range problems {
		t.Error(p)
	}
	if runErr != nil && len(failed) == 0 {
		t.Errorf("franz-go test binary: %v", runErr)
	}
	if len(events) == 0 || passed == nil {
		t.Errorf("franz-go suite produced no test results")
	}
	if t.Failed() {
		t.Logf("--- franz-go test binary stderr (tail) ---\n%s", stderrTail)
	}
	b.Alive()
}

// matchSkip is the index of the active expectedFranzSkips entry matching
// the whole name, or -1.
func matchSkip(name string, active []bool) int {
	for i, s := range expectedFranzSkips {
		if active[i] && regexp.MustCompile(`^(?:`+s.pattern+`)$`).MatchString(name) {
			return i
		}
	}
	return -1
}

// activeSkips asks the broker at addr for its ApiVersions and reports which
// expectedFranzSkips entries apply to it.
func activeSkips(t *testing.T, addr string) []bool {
	t.Helper()
	cl := newKgo(t, addr)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	cl.Close()
	max := map[int16]int16{}
	for _, k := range resp.ApiKeys {
		max[k.ApiKey] = k.MaxVersion
	}
	active := make([]bool, len(expectedFranzSkips))
	for i, s := range expectedFranzSkips {
		supported := len(s.untilAPI) > 0
		for key, min := range s.untilAPI {
			if v, ok := max[key]; !ok || v < min {
				supported = false
			}
		}
		active[i] = !supported
		if supported {
			t.Logf("expected skip %q inactive: the broker advertises %v", s.pattern, s.untilAPI)
		}
	}
	return active
}
