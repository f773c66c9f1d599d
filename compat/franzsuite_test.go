package compat

// TestFranzGoSuite runs franz-go's own integration tests (pkg/kgo of the
// franz-go release kbroker is built against) against a kbroker process.
// Those tests are written for a real Kafka cluster: they create topics, run
// ETL chains through consumer groups with every balancer, and check that no
// record is lost or duplicated.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// franzModule is the franz-go release whose tests run here; keep it equal to
// the version in go.mod.
const (
	franzModule  = "github.com/twmb/franz-go"
	franzVersion = "v1.22.3"
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

const (
	// franzBuildTimeout bounds downloading and compiling the suite.
	franzBuildTimeout = 6 * time.Minute
	// franzRunTimeout bounds the suite's run (a manual run takes 3-4 min).
	franzRunTimeout = 10 * time.Minute
)

// testEvent is one line of `go test -json` (test2json) output.
type testEvent struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

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
	src := franzSource(t, work)
	for _, name := range pendingTxnTests {
		if !sourceDefinesTest(t, filepath.Join(src, "pkg", "kgo"), name) {
			t.Fatalf("pendingTxnTests names %s, which franz-go %s no longer defines: drop it from the list", name, franzVersion)
		}
	}

	bin := filepath.Join(work, "kgo.test")
	buildCtx, cancel := context.WithTimeout(context.Background(), franzBuildTimeout)
	defer cancel()
	if out, err := runGoTool(buildCtx, src, "test", "-c", "-o", bin, "./pkg/kgo"); err != nil {
		t.Fatalf("go test -c ./pkg/kgo in franz-go %s: %v (ctx: %v)\n%s", franzVersion, err, buildCtx.Err(), out)
	}
	t.Logf("franz-go %s pkg/kgo compiled in %v", franzVersion, time.Since(start).Round(time.Second))

	// A PLAINTEXT listener for the suite and a SASL_PLAINTEXT one with a
	// SCRAM-SHA-256 user for its SCRAM tests and OAUTHBEARER (the unsecured
	// JWS validator, Kafka's default) for TestOAuthAuth.
	b, saslAddr := startSASLBroker(t, "group.initial.rebalance.delay.ms=0",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER")
	active := activeSkips(t, b.Addr())
	events, stderrTail, runErr := runFranzBinary(t, bin, filepath.Join(src, "pkg", "kgo"), b.Addr(), saslAddr)

	// Final action per test (top-level and subtests) and each test's output.
	final := map[string]string{}
	output := map[string]*strings.Builder{}
	var order []string
	for _, ev := range events {
		if ev.Test == "" {
			continue
		}
		if _, ok := output[ev.Test]; !ok {
			output[ev.Test] = &strings.Builder{}
			order = append(order, ev.Test)
		}
		switch ev.Action {
		case "output":
			if output[ev.Test].Len() < 64<<10 {
				output[ev.Test].WriteString(ev.Output)
			}
		case "pass", "fail", "skip":
			final[ev.Test] = ev.Action
		}
	}
	var passed, failed, skipped, unfinished []string
	for _, name := range order {
		switch final[name] {
		case "pass":
			passed = append(passed, name)
		case "fail":
			failed = append(failed, name)
		case "skip":
			skipped = append(skipped, name)
		default:
			unfinished = append(unfinished, name)
		}
	}
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
				name, lastLines(output[name].String(), 3)))
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
		t.Errorf("franz-go test %s did not finish:\n%s", name, lastLines(output[name].String(), 40))
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

// franzSource finds franz-go's source through the module cache (downloading
// it through the module proxy if needed) and copies it into a writable
// directory under work, returning that directory.
func franzSource(t *testing.T, work string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), franzBuildTimeout)
	defer cancel()
	// Outside any module, so this module's go.mod and go.sum stay as they are.
	out, err := runGoTool(ctx, work, "mod", "download", "-json", franzModule+"@"+franzVersion)
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v\n%s", franzModule, franzVersion, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Fatalf("go mod download -json %s@%s: unexpected output (%v, %s):\n%s", franzModule, franzVersion, err, info.Error, out)
	}
	dst := filepath.Join(work, "franz-go")
	if err := copyTree(info.Dir, dst); err != nil {
		t.Fatalf("copying %s: %v", info.Dir, err)
	}
	return dst
}

// copyTree copies the regular files and directories under src to dst with
// writable permissions (the module cache is read-only).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// sourceDefinesTest reports whether a _test.go file in dir declares
// func name(.
func sourceDefinesTest(t *testing.T, dir, name string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	needle := []byte("func " + name + "(")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, needle) {
			return true
		}
	}
	return false
}

// runGoTool runs the go command in dir, outside any workspace, with its own
// process group killed when ctx ends, and returns its combined output.
func runGoTool(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.SysProcAttr = groupProcAttr()
	cmd.Cancel = func() error { return killProcGroup(cmd) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.Bytes(), err
}

// runFranzBinary runs the compiled franz-go test binary in dir against the
// broker at addr (its SCRAM tests at saslAddr), its verbose output converted by `go tool test2json`, and
// returns the parsed events, the tail of the binary's stderr (the clients'
// logs), and the binary's error. Both processes are killed when the run
// exceeds franzRunTimeout or the test ends.
func runFranzBinary(t *testing.T, bin, dir, addr, saslAddr string) ([]testEvent, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), franzRunTimeout)
	defer cancel()

	args := []string{"-test.v=test2json", "-test.count=1", "-test.timeout", (franzRunTimeout - 30*time.Second).String()}
	if len(pendingTxnTests) > 0 {
		args = append(args, "-test.skip", "^("+strings.Join(pendingTxnTests, "|")+")$")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+addr,
		"KGO_TEST_RF=1",
		"KGO_TEST_SCRAM_SEEDS="+saslAddr,
		"KGO_TEST_SCRAM="+saslUser+":"+saslScramPass+":256",
		"KGO_TEST_OAUTH_SEEDS="+saslAddr,
	)
	cmd.SysProcAttr = groupProcAttr()
	cmd.Cancel = func() error { return killProcGroup(cmd) }
	cmd.WaitDelay = 10 * time.Second
	stderr := &tailBuffer{max: 512 << 10}
	cmd.Stderr = stderr

	conv := exec.CommandContext(ctx, "go", "tool", "test2json", "-t", "-p", franzModule+"/pkg/kgo")
	conv.SysProcAttr = groupProcAttr()
	conv.Cancel = func() error { return killProcGroup(conv) }
	conv.WaitDelay = 10 * time.Second
	conv.Stderr = stderr
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	conv.Stdin = pr
	jsonOut, err := conv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.Start(); err != nil {
		t.Fatalf("go tool test2json: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	var binErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		binErr = cmd.Wait()
		pw.Close()
	}()

	var events []testEvent
	sc := bufio.NewScanner(jsonOut)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev testEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Errorf("test2json line %q: %v", sc.Text(), err)
			continue
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		t.Errorf("reading test2json output: %v", err)
	}
	_ = conv.Wait()
	wg.Wait()
	if ctx.Err() != nil {
		t.Errorf("franz-go suite did not finish within %v; killed", franzRunTimeout)
	}
	return events, stderr.String(), binErr
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
	cut bool
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
		b.cut = true
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cut {
		return "[... earlier output cut ...]\n" + string(b.buf)
	}
	return string(b.buf)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
