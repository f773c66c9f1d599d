package compat

// This file holds TestMain, which builds cmd/kbroker once, and startBroker,
// which runs one broker process per test; see doc.go.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration"
)

// brokerStartTimeout bounds how long a broker may take to accept connections.
const brokerStartTimeout = 30 * time.Second

// brokerStopTimeout bounds a graceful shutdown after SIGTERM.
const brokerStopTimeout = 30 * time.Second

var (
	// kbrokerBin is the path of the binary built by TestMain.
	kbrokerBin string
	// buildErr is set when the build failed; startBroker reports it per test
	// so that benchmarks which need no broker still run.
	buildErr error
)

// TestMain builds kbroker once (or takes KBROKER_BIN) and runs the tests,
// or runs a benchmark's load generator (KBROKER_BENCH_LOADGEN).
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// The fixed-rate benchmarks run their load generator as this binary
	// started again (loadgen_bench_test.go): no build, no tests.
	if spec := os.Getenv(loadgenEnv); spec != "" {
		return loadgenMain(spec)
	}
	tmp, err := os.MkdirTemp("", "kbroker-compat-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat: temp dir: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	kbrokerBin = filepath.Join(tmp, "kbroker")
	if prebuilt := os.Getenv("KBROKER_BIN"); prebuilt != "" {
		// Test a binary built elsewhere (for example with -race).
		kbrokerBin = prebuilt
	} else {
		buildErr = buildBroker(kbrokerBin)
	}
	if buildErr != nil {
		fmt.Fprintf(os.Stderr, "compat: %v\n", buildErr)
	}
	code := m.Run()
	integration.RemoveKbroker() // the cluster tests' broker binary
	// The results file (results_test.go) is written after full runs, or
	// whenever KBROKER_COMPAT_RESULTS names it explicitly, so that running
	// one test by hand does not overwrite the last full matrix.
	partial := flagSet("test.run") || flagSet("test.skip") || testing.Short()
	if !partial || os.Getenv("KBROKER_COMPAT_RESULTS") != "" {
		if err := writeResults(partial); err != nil {
			fmt.Fprintf(os.Stderr, "compat: writing results: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// flagSet reports whether the test flag name was given a non-empty value.
func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != ""
}

// buildBroker runs `go build -o out ./cmd/kbroker` from the module root.
func buildBroker(out string) error {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	modFile := strings.TrimSpace(string(gomod))
	if modFile == "" || modFile == os.DevNull {
		return errors.New("go env GOMOD: not inside a module")
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/kbroker")
	cmd.Dir = filepath.Dir(modFile)
	if combined, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building kbroker: %w\n%s", err, combined)
	}
	return nil
}

// syncBuffer is a bytes.Buffer safe for concurrent writers (the process's
// stdout and stderr) and readers (the test).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// brokerProc is one kbroker process owned by a test. Its output is kept in
// out and logged when the test fails.
type brokerProc struct {
	t         testing.TB
	dataDir   string
	port      int
	overrides []string
	// bin is the binary to run; kbrokerBin when empty (the benchmark's
	// KBROKER_BENCH_BASELINE runs another build beside it).
	bin string

	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed when cmd.Wait returns
	err  error         // cmd.Wait's result; read only after done is closed
	gen  int           // how many times this broker was started
}

// freePort returns a loopback port that was free a moment ago and that no
// other test of this process was given (integration.FreePort).
func freePort(t testing.TB) int {
	t.Helper()
	port, err := integration.FreePort()
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	return port
}

// startBroker starts kbroker on a fresh loopback port with log.dirs=dataDir
// plus the given overrides ("key=value"), and waits until it accepts TCP
// connections. The process is killed at test cleanup if still running.
func startBroker(t testing.TB, dataDir string, overrides ...string) *brokerProc {
	t.Helper()
	return startBrokerBin(t, "", dataDir, overrides...)
}

// startBrokerBin is startBroker running the binary bin (kbrokerBin if empty).
func startBrokerBin(t testing.TB, bin, dataDir string, overrides ...string) *brokerProc {
	t.Helper()
	if buildErr != nil && bin == "" {
		t.Fatalf("kbroker did not build: %v", buildErr)
	}
	p := &brokerProc{t: t, dataDir: dataDir, port: freePort(t), overrides: overrides, bin: bin}
	t.Cleanup(p.cleanup)
	p.start()
	return p
}

// Addr is the broker's host:port.
func (p *brokerProc) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
}

// Pid is the process id of the broker's current generation.
func (p *brokerProc) Pid() int { return p.cmd.Process.Pid }

// Output is everything the process printed so far, all generations.
func (p *brokerProc) Output() string { return p.out.String() }

// args builds the command line for this broker.
func (p *brokerProc) args() []string {
	args := []string{
		"--override", fmt.Sprintf("listeners=PLAINTEXT://%s", p.Addr()),
		"--override", "log.dirs=" + p.dataDir,
		// No HTTP listener unless a test asks for one: its default port
		// (9644) would collide between brokers running at once.
		"--override", "http.listeners=",
		"--override", "schema.registry.listeners=",
		"--override", "rest.proxy.listeners=",
	}
	for _, o := range p.overrides {
		args = append(args, "--override", o)
	}
	return args
}

// start launches the process and waits for readiness, failing the test if
// the process exits first or the deadline passes.
func (p *brokerProc) start() {
	p.t.Helper()
	if p.out == nil {
		p.out = &syncBuffer{}
	}
	p.gen++
	fmt.Fprintf(p.out, "=== kbroker start #%d on %s\n", p.gen, p.Addr())
	bin := p.bin
	if bin == "" {
		bin = kbrokerBin
	}
	cmd := exec.Command(bin, p.args()...)
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("starting kbroker: %v", err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	done := p.done
	go func() {
		p.err = cmd.Wait()
		close(done)
	}()
	if err := waitListening(p.Addr(), done, brokerStartTimeout); err != nil {
		p.killAndWait()
		p.t.Fatalf("kbroker start #%d: %v\n--- kbroker output ---\n%s", p.gen, err, p.Output())
	}
}

// waitListening polls addr until it accepts a connection, exited is closed,
// or the timeout passes.
func waitListening(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-exited:
			return errors.New("process exited before accepting connections")
		case <-deadline.C:
			return fmt.Errorf("not accepting connections on %s after %v", addr, timeout)
		case <-tick.C:
		}
	}
}

// running reports whether the current process has not exited yet.
func (p *brokerProc) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM, waits for the process, and fails the test unless it
// exited with code 0 within brokerStopTimeout.
func (p *brokerProc) Stop() {
	p.t.Helper()
	p.StopWith(syscall.SIGTERM)
}

// StopWith is Stop with another signal (SIGINT is graceful too).
func (p *brokerProc) StopWith(sig os.Signal) {
	p.t.Helper()
	if !p.running() {
		p.t.Fatalf("Stop: kbroker is not running (exit: %v)", p.err)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%v: %v", sig, err)
	}
	timer := time.NewTimer(brokerStopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		p.killAndWait()
		p.t.Fatalf("kbroker did not exit within %v of %v", brokerStopTimeout, sig)
	}
	if p.err != nil {
		p.t.Fatalf("kbroker exited after %v with %v, want exit code 0", sig, p.err)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *brokerProc) Kill() {
	p.t.Helper()
	if !p.running() {
		p.t.Fatalf("Kill: kbroker is not running (exit: %v)", p.err)
	}
	p.killAndWait()
}

// Restart starts the process again on the same port and data directory. The
// previous process must have been stopped or killed.
func (p *brokerProc) Restart() {
	p.t.Helper()
	if p.running() {
		p.t.Fatalf("Restart: previous kbroker still running")
	}
	p.start()
}

// StopAndRestart is Stop followed by Restart.
func (p *brokerProc) StopAndRestart() {
	p.t.Helper()
	p.Stop()
	p.Restart()
}

// KillAndRestart is Kill followed by Restart.
func (p *brokerProc) KillAndRestart() {
	p.t.Helper()
	p.Kill()
	p.Restart()
}

// Alive fails the test if the process has exited.
func (p *brokerProc) Alive() {
	p.t.Helper()
	if !p.running() {
		p.t.Fatalf("kbroker exited unexpectedly: %v", p.err)
	}
}

func (p *brokerProc) killAndWait() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// cleanup kills anything still running and prints the output on failure.
func (p *brokerProc) cleanup() {
	p.killAndWait()
	if p.t.Failed() && p.out != nil {
		p.t.Logf("--- kbroker %s output ---\n%s", p.Addr(), p.Output())
	}
}

// runBrokerToExit runs a broker that is expected to exit on its own (for
// example because its data directory is locked) and returns its exit code
// and output. It fails the test if the process is still running after the
// start timeout (it is killed then).
func runBrokerToExit(t testing.TB, dataDir string, overrides ...string) (int, string) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("kbroker did not build: %v", buildErr)
	}
	p := &brokerProc{t: t, dataDir: dataDir, port: freePort(t), overrides: overrides, out: &syncBuffer{}}
	ctx, cancel := context.WithTimeout(context.Background(), brokerStartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kbrokerBin, p.args()...)
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	cmd.SysProcAttr = childProcAttr()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("second kbroker did not exit within %v\n%s", brokerStartTimeout, p.Output())
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, p.Output()
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), p.Output()
	default:
		t.Fatalf("running second kbroker: %v", err)
		return -1, ""
	}
}
