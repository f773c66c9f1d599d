package compat

// Apache Kafka's console tools (compat/java/bin/*.sh, the classes of
// kafka-tools and kafka_2.13 4.4.0) as their users type them, against
// kbroker and against Apache Kafka 4.4.0 (java_kafka_test.go) in lockstep:
// every step runs on both, and what the user sees (stdout, stderr without
// log lines and stack frames, the exit code) must be the same once the
// values that naturally differ are masked (toolMasks). Steps whose output
// cannot match by nature (benchmarks, the ApiVersions table, features only
// a KRaft cluster has) are checked on their own instead (noDiff).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// toolTimeout bounds one console tool run.
const toolTimeout = 90 * time.Second

// toolRun is what one tool run showed its user.
type toolRun struct {
	stdout, stderr string
	code           int
	err            error // the tool could not be run or timed out
}

// toolStep is one command of the console-tools scenario.
type toolStep struct {
	name  string
	tool  string   // script in compat/java/bin
	args  []string // "{B}" is the bootstrap address, "{DIR}" a scratch directory
	stdin string
	// do is a setup action run instead of a tool, on each broker in turn.
	do func(t *testing.T, addr string)
	// masks are applied after toolMasks, for this step's own variable values.
	masks []toolMask
	// noDiff says why this step's output is not compared with Kafka's.
	noDiff string
	// check is an assertion on one broker's run; kafka tells which.
	check func(t *testing.T, r toolRun, kafka bool)
}

// toolMask replaces what re matches with repl; a nil re with drop=true
// removes matching lines instead.
type toolMask struct {
	re   *regexp.Regexp
	repl string
	drop bool
}

func mask(re, repl string) toolMask { return toolMask{re: regexp.MustCompile(re), repl: repl} }
func dropLines(re string) toolMask  { return toolMask{re: regexp.MustCompile(re), drop: true} }

// toolMasks are the values that differ between any two brokers, and only
// those: every other difference fails the step.
var toolMasks = []toolMask{
	// Log lines of the tool's own logger (timestamps, thread names) are
	// not its answer to the user.
	dropLines(`^\[\d{4}-\d\d-\d\d [\d:,]+\] (TRACE|DEBUG|INFO|WARN|ERROR) `),
	// The JVM's own warnings (unified logging), e.g. a perf-data file
	// another JVM started at the same moment holds.
	dropLines(`^\[\d+\.\d+s\]\[warning\]`),
	// Stack frames of a printed exception: the JVM's, not the broker's.
	dropLines(`^\s+at [\w.$]+\(`),
	dropLines(`^\s+\.\.\. \d+ more$`),
	// Each broker listens on its own loopback port.
	mask(`127\.0\.0\.1:\d+`, "<host:port>"),
	// Topic and cluster ids are random per cluster.
	mask(`TopicId:\s*\S+`, "TopicId: <topic-id>"),
	// Member and client ids carry random UUIDs.
	mask(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`, "<uuid>"),
	// Log directories are each broker's own; the bytes a partition takes
	// on disk depend on the storage format and on segment rolls.
	mask(`"logDir":"[^"]*"`, `"logDir":"<dir>"`),
	mask(`"size":\d+`, `"size":<bytes>`),
	// Wall-clock times in milliseconds.
	mask(`\b1\d{12}\b`, "<ms>"),
}

// maskNumbers masks every number, and the column padding after it: for
// tables of producer ids, epochs and durations, whose columns are as wide
// as their widest value (one more digit of a duration on a loaded broker
// would otherwise show as one more space).
var maskNumbers = mask(`\b\d+\b[ \t]*`, "<n> ")

// normalizeToolOutput applies the masks and sorts the lines: several tools
// print partitions in hash-map order, which is no part of their contract.
func normalizeToolOutput(s string, extra []toolMask) string {
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimRight(line, " \t\r")
		keep := true
		for _, m := range append(append([]toolMask{}, toolMasks...), extra...) {
			if m.drop {
				if m.re.MatchString(line) {
					keep = false
					break
				}
				continue
			}
			line = m.re.ReplaceAllString(line, m.repl)
		}
		if keep && strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// runTool runs compat/java/bin/TOOL with args and stdin.
func runTool(bin, tool, stdin string, args []string) toolRun {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, tool), args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.SysProcAttr = groupProcAttr()
	cmd.Cancel = func() error { return killProcGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := toolRun{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.err = fmt.Errorf("timed out after %v", toolTimeout)
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	case err != nil:
		r.err = err
	}
	return r
}

func (r toolRun) String() string {
	return fmt.Sprintf("exit %d (err %v)\n--- stdout ---\n%s\n--- stderr ---\n%s", r.code, r.err, tail(r.stdout, 8000), tail(r.stderr, 8000))
}

// toolTarget is one broker the scenario runs against.
type toolTarget struct {
	name  string
	addr  string
	dir   string // scratch directory for files the tools read
	kafka bool
}

func (tt toolTarget) expand(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.NewReplacer("{B}", tt.addr, "{DIR}", tt.dir).Replace(a)
	}
	return out
}

// runToolScenario runs steps against kbroker and Kafka in lockstep, one
// subtest per step; the two runs of a tool step go concurrently. The
// differences listed in explained are accepted (each exactly: a line more
// or less fails the step); an entry whose difference did not show fails
// the scenario.
func runToolScenario(t *testing.T, kb, kafka toolTarget, steps []toolStep, explained []toolExplanation) {
	bin := filepath.Join(javaDir(t), "bin")
	used := make([]bool, len(explained))
	defer func() {
		for i, e := range explained {
			if !used[i] && !t.Failed() {
				t.Errorf("step %s: the explained %s difference is gone; remove it from the list: Kafka only %q, kbroker only %q",
					e.step, e.part, e.kafkaOnly, e.kbrokerOnly)
			}
		}
	}()
	// explain reports whether the difference between k and b (masked,
	// sorted lines) of part is listed for step.
	explain := func(step, part string, k, b []string) bool {
		ko, bo := lineDiff(k, b)
		for i, e := range explained {
			if e.step == step && e.part == part && slices.Equal(e.kafkaOnly, ko) && slices.Equal(e.kbrokerOnly, bo) {
				used[i] = true
				return true
			}
		}
		return false
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.do != nil {
				st.do(t, kafka.addr)
				st.do(t, kb.addr)
				return
			}
			var runs [2]toolRun
			var wg sync.WaitGroup
			for i, tt := range []toolTarget{kafka, kb} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					runs[i] = runTool(bin, st.tool, st.stdin, tt.expand(st.args))
				}()
			}
			wg.Wait()
			kr, br := runs[0], runs[1]
			cmdline := st.tool + " " + strings.Join(st.args, " ")
			if kr.err != nil {
				t.Fatalf("%s against Apache Kafka: %v\n%s", cmdline, kr.err, kr)
			}
			if br.err != nil {
				t.Fatalf("%s against kbroker: %v\n%s", cmdline, br.err, br)
			}
			if st.check != nil {
				st.check(t, kr, true)
				st.check(t, br, false)
			}
			if st.noDiff != "" {
				return
			}
			for _, part := range []struct{ what, k, b string }{
				{"stdout", kr.stdout, br.stdout},
				{"stderr", kr.stderr, br.stderr},
			} {
				kn, bn := normalizeToolOutput(part.k, st.masks), normalizeToolOutput(part.b, st.masks)
				if kn != bn && !explain(st.name, part.what, splitLines(kn), splitLines(bn)) {
					t.Errorf("%s: %s differs from Apache Kafka's (masked, lines sorted)\n--- Apache Kafka ---\n%s\n--- kbroker ---\n%s",
						cmdline, part.what, kn, bn)
				}
			}
			if kr.code != br.code && !explain(st.name, "exit", []string{fmt.Sprint(kr.code)}, []string{fmt.Sprint(br.code)}) {
				t.Errorf("%s: exit code %d, Apache Kafka's %d\n--- kbroker ---\n%s", cmdline, br.code, kr.code, br)
			}
		})
	}
}

// toolExplanation is one accepted difference of a console-tools step:
// the masked lines of part ("stdout", "stderr", or "exit" for the exit
// codes) that only Apache Kafka printed and those only kbroker printed.
type toolExplanation struct {
	step, part             string
	kafkaOnly, kbrokerOnly []string
	why                    string
}

// splitLines splits normalizeToolOutput's result ("" is no lines).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// lineDiff returns the lines only in a and only in b (sorted inputs,
// multiset difference), nil for none.
func lineDiff(a, b []string) (onlyA, onlyB []string) {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	for _, l := range a {
		if count[l] > 0 {
			onlyA = append(onlyA, l)
			count[l]--
		}
	}
	for _, l := range b {
		if count[l] < 0 {
			onlyB = append(onlyB, l)
			count[l]++
		}
	}
	return onlyA, onlyB
}

// wantOutput is a check that stdout+stderr contains every one of subs.
func wantOutput(subs ...string) func(t *testing.T, r toolRun, kafka bool) {
	return func(t *testing.T, r toolRun, kafka bool) {
		t.Helper()
		all := r.stdout + r.stderr
		for _, s := range subs {
			if !strings.Contains(all, s) {
				t.Errorf("%s output lacks %q\n%s", brokerName(kafka), s, r)
			}
		}
	}
}

// wantExit is a check of the exit code.
func wantExit(code int) func(t *testing.T, r toolRun, kafka bool) {
	return func(t *testing.T, r toolRun, kafka bool) {
		t.Helper()
		if r.code != code {
			t.Errorf("%s: exit code %d, want %d\n%s", brokerName(kafka), r.code, code, r)
		}
	}
}

// both combines checks.
func both(checks ...func(t *testing.T, r toolRun, kafka bool)) func(t *testing.T, r toolRun, kafka bool) {
	return func(t *testing.T, r toolRun, kafka bool) {
		t.Helper()
		for _, c := range checks {
			c(t, r, kafka)
		}
	}
}

// onlyKbroker applies check to kbroker's run only.
func onlyKbroker(check func(t *testing.T, r toolRun, kafka bool)) func(t *testing.T, r toolRun, kafka bool) {
	return func(t *testing.T, r toolRun, kafka bool) {
		t.Helper()
		if !kafka {
			check(t, r, kafka)
		}
	}
}

func brokerName(kafka bool) string {
	if kafka {
		return "Apache Kafka"
	}
	return "kbroker"
}

// countRecords is a check that the console consumer printed n records
// (lines starting with print.partition's "Partition:").
func countRecords(n int) func(t *testing.T, r toolRun, kafka bool) {
	return func(t *testing.T, r toolRun, kafka bool) {
		t.Helper()
		got := 0
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "Partition:") {
				got++
			}
		}
		if got != n {
			t.Errorf("%s: %d records printed, want %d\n%s", brokerName(kafka), got, n, r)
		}
	}
}

// hangTransaction leaves a hanging transaction on partition 0 of topic: a
// transactional Java producer writes n records and its JVM halts.
func hangTransaction(topic, txnID string, n int) func(t *testing.T, addr string) {
	return func(t *testing.T, addr string) {
		ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
		defer cancel()
		args := append(append([]string{}, javaOpts...), "-cp", javaClasspath(t, javaMod44),
			"kbroker.compat.Client", "hang", addr, topic, txnID, fmt.Sprint(n))
		cmd := exec.CommandContext(ctx, "java", args...)
		cmd.SysProcAttr = groupProcAttr()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("java hang against %s: %v\n%s", addr, err, out)
		}
		if got := strings.Count(string(out), `"k":"hang-`); got != n {
			t.Fatalf("java hang against %s: %d records acknowledged, want %d\n%s", addr, got, n, out)
		}
	}
}

// writeFile is a setup step that writes the scratch file name in both
// targets' directories.
func writeScratch(dirs []string, name, content string) func(t *testing.T, addr string) {
	return func(t *testing.T, addr string) {
		for _, d := range dirs {
			if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestJavaConsoleTools(t *testing.T) {
	ensureJava(t)
	b := startBroker(t, t.TempDir(), matrixOverrides...)
	k := startKafka(t)
	kb := toolTarget{name: "kbroker", addr: b.Addr(), dir: t.TempDir()}
	kf := toolTarget{name: "Apache Kafka", addr: k.Addr(), dir: t.TempDir(), kafka: true}
	start := time.Now()
	runToolScenario(t, kb, kf, consoleToolSteps([]string{kb.dir, kf.dir}), consoleToolsExplained)
	t.Logf("console-tool scenario on both brokers in %v", time.Since(start).Round(time.Millisecond))
	b.Alive()
}
