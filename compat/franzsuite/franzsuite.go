// Package franzsuite runs franz-go's own integration tests (pkg/kgo of the
// franz-go release kbroker is built against) against brokers a caller
// started: it fetches the module's source through the module cache, builds
// the test binary, runs it with the KGO_* environment its tests read, and
// returns the outcome of every test from `go tool test2json`. The compat
// tests run it against one broker (compat/franzsuite_test.go), the
// integration tests against a replicated cluster
// (integration/franzsuite_test.go).
package franzsuite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Module and Version name the franz-go release whose tests run; keep
// Version equal to the one in go.mod.
const (
	Module  = "github.com/twmb/franz-go"
	Version = "v1.22.3"
)

// BuildTimeout bounds downloading and compiling the suite.
const BuildTimeout = 6 * time.Minute

// Event is one line of `go test -json` (test2json) output.
type Event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// Source finds franz-go's source through the module cache (downloading it
// through the module proxy if needed) and copies it into a writable
// directory under work, which it returns.
func Source(ctx context.Context, work string) (string, error) {
	// Outside any module, so the caller's go.mod and go.sum stay as they are.
	out, err := goTool(ctx, work, "mod", "download", "-json", Module+"@"+Version)
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w\n%s", Module, Version, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download -json %s@%s: unexpected output (%v, %s):\n%s", Module, Version, err, info.Error, out)
	}
	dst := filepath.Join(work, "franz-go")
	if err := copyTree(info.Dir, dst); err != nil {
		return "", fmt.Errorf("copying %s: %w", info.Dir, err)
	}
	return dst, nil
}

// Build compiles src's pkg/kgo tests into bin.
func Build(ctx context.Context, src, bin string) error {
	if out, err := goTool(ctx, src, "test", "-c", "-o", bin, "./pkg/kgo"); err != nil {
		return fmt.Errorf("go test -c ./pkg/kgo in franz-go %s: %w (ctx: %v)\n%s", Version, err, ctx.Err(), out)
	}
	return nil
}

// KgoDir is the directory the compiled tests run in (their testdata).
func KgoDir(src string) string { return filepath.Join(src, "pkg", "kgo") }

// DefinesTest reports whether a _test.go file of pkg/kgo under src
// declares func name(.
func DefinesTest(src, name string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(KgoDir(src), "*_test.go"))
	if err != nil {
		return false, err
	}
	needle := []byte("func " + name + "(")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		if bytes.Contains(data, needle) {
			return true, nil
		}
	}
	return false, nil
}

// RunConfig is one run of the compiled suite.
type RunConfig struct {
	Bin, Src string
	// Env is added to the process environment: KGO_SEEDS, KGO_TEST_RF,
	// KGO_TEST_SCRAM_SEEDS, ...
	Env []string
	// Skip are test names (anchored) left out with -test.skip.
	Skip []string
	// Run, when set, is the -test.run pattern (a subset of the suite).
	Run string
	// Timeout bounds the run; both processes are killed when it passes.
	Timeout time.Duration
}

// ErrTimeout reports a run killed at its Timeout.
var ErrTimeout = errors.New("franz-go suite did not finish in time; killed")

// Run runs the compiled suite, its verbose output converted by `go tool
// test2json`, and returns the parsed events, the tail of the binary's
// stderr (the clients' logs) and the binary's error (ErrTimeout when it
// was killed).
func Run(cfg RunConfig) ([]Event, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	args := []string{"-test.v=test2json", "-test.count=1", "-test.timeout", (cfg.Timeout - 30*time.Second).String()}
	if cfg.Run != "" {
		args = append(args, "-test.run", cfg.Run)
	}
	if len(cfg.Skip) > 0 {
		args = append(args, "-test.skip", "^("+strings.Join(cfg.Skip, "|")+")$")
	}
	cmd := exec.CommandContext(ctx, cfg.Bin, args...)
	cmd.Dir = KgoDir(cfg.Src)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.SysProcAttr = GroupProcAttr()
	cmd.Cancel = func() error { return KillProcGroup(cmd) }
	cmd.WaitDelay = 10 * time.Second
	stderr := &tailBuffer{max: 512 << 10}
	cmd.Stderr = stderr

	conv := exec.CommandContext(ctx, "go", "tool", "test2json", "-t", "-p", Module+"/pkg/kgo")
	conv.SysProcAttr = GroupProcAttr()
	conv.Cancel = func() error { return KillProcGroup(conv) }
	conv.WaitDelay = 10 * time.Second
	conv.Stderr = stderr
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	conv.Stdin = pr
	jsonOut, err := conv.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := conv.Start(); err != nil {
		return nil, "", fmt.Errorf("go tool test2json: %w", err)
	}
	if err := cmd.Start(); err != nil {
		pw.Close()
		_ = conv.Wait()
		return nil, "", fmt.Errorf("starting %s: %w", cfg.Bin, err)
	}
	var binErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		binErr = cmd.Wait()
		pw.Close()
	}()

	var events []Event
	var parseErrs []error
	sc := bufio.NewScanner(jsonOut)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			parseErrs = append(parseErrs, fmt.Errorf("test2json line %q: %w", sc.Text(), err))
			continue
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		parseErrs = append(parseErrs, fmt.Errorf("reading test2json output: %w", err))
	}
	_ = conv.Wait()
	wg.Wait()
	if ctx.Err() != nil {
		binErr = errors.Join(ErrTimeout, binErr)
	}
	return events, stderr.String(), errors.Join(append([]error{binErr}, parseErrs...)...)
}

// Results is the outcome of every test of a run (top-level and subtests).
type Results struct {
	// Final is each test's last action: pass, fail or skip ("" unfinished).
	Final map[string]string
	// Output is each test's output, up to 64 KiB, without the lines of
	// franz-go's test logger (clientLogLine): the suite's tests run in
	// parallel and their clients' log lines, attributed to whichever test
	// last started, would crowd out the failing test's own messages.
	Output map[string]*strings.Builder
	// Order lists the tests as they started.
	Order                               []string
	Passed, Failed, Skipped, Unfinished []string
}

// Summarize sorts the events of a run by test.
func Summarize(events []Event) Results {
	r := Results{Final: map[string]string{}, Output: map[string]*strings.Builder{}}
	for _, ev := range events {
		if ev.Test == "" {
			continue
		}
		if _, ok := r.Output[ev.Test]; !ok {
			r.Output[ev.Test] = &strings.Builder{}
			r.Order = append(r.Order, ev.Test)
		}
		switch ev.Action {
		case "output":
			if r.Output[ev.Test].Len() < 64<<10 && !clientLogLine.MatchString(ev.Output) {
				r.Output[ev.Test].WriteString(ev.Output)
			}
		case "pass", "fail", "skip":
			r.Final[ev.Test] = ev.Action
		}
	}
	for _, name := range r.Order {
		switch r.Final[name] {
		case "pass":
			r.Passed = append(r.Passed, name)
		case "fail":
			r.Failed = append(r.Failed, name)
		case "skip":
			r.Skipped = append(r.Skipped, name)
		default:
			r.Unfinished = append(r.Unfinished, name)
		}
	}
	return r
}

// clientLogLine matches a line of franz-go's test logger ("[15:04:05.000
// 12][INFO] ...").
var clientLogLine = regexp.MustCompile(`^\s*\[\d\d:\d\d:\d\d\.\d+ \d+\]\[[A-Z]+\] `)

// LastLines is the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// goTool runs the go command in dir, outside any workspace, with its own
// process group killed when ctx ends, and returns its combined output.
func goTool(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.SysProcAttr = GroupProcAttr()
	cmd.Cancel = func() error { return KillProcGroup(cmd) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.Bytes(), err
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
