package integration

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kbrokerBin is the kbroker binary the process tests run, built once per
// test binary (buildKbroker) and removed by TestMain.
var kbroker struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// RaceBrokersEnv, when set, builds the broker processes with the race
// detector.
const RaceBrokersEnv = "KBROKER_INTEGRATION_RACE"

// buildKbroker builds cmd/kbroker once for the whole test binary.
func buildKbroker(t testing.TB) string {
	t.Helper()
	kbroker.once.Do(func() {
		dir, err := os.MkdirTemp("", "kbroker-integration-bin")
		if err != nil {
			kbroker.err = err
			return
		}
		kbroker.dir = dir
		kbroker.bin = filepath.Join(dir, "kbroker")
		// -tags faultfs compiles in the disk-fault hook (cmd/kbroker/
		// faultfs.go), inert unless a broker is started with FaultFS.
		args := []string{"build", "-tags", "faultfs", "-o", kbroker.bin}
		if os.Getenv(RaceBrokersEnv) != "" {
			args = append(args, "-race") // a race report ends the broker with status 66
		}
		out, err := exec.Command("go", append(args, "github.com/kbroker/kbroker/cmd/kbroker")...).CombinedOutput()
		if err != nil {
			kbroker.err = fmt.Errorf("building cmd/kbroker: %v\n%s", err, out)
		}
	})
	if kbroker.err != nil {
		t.Fatal(kbroker.err)
	}
	return kbroker.bin
}

// BuildKbroker builds the broker binary now, if no test of this test
// binary did yet, so that a test timing a broker's start does not time the
// build.
func BuildKbroker(t testing.TB) { t.Helper(); buildKbroker(t) }

// RemoveKbroker deletes the binary StartCluster built (each TestMain that
// starts clusters calls it).
func RemoveKbroker() {
	if kbroker.dir != "" {
		os.RemoveAll(kbroker.dir)
	}
}

// BrokerProc is one kbroker process of a test cluster, on its own port and
// log dir, kept across restarts.
type BrokerProc struct {
	ID   int32
	Port int
	// HTTPPort serves /metrics, /healthz and /readyz.
	HTTPPort int
	Dir      string
	// Props are the --override properties it starts with.
	Props map[string]string
	// Host is the address it listens on: 127.0.0.1, or its own address
	// inside a network namespace (netns.go).
	Host string
	// Wrap, when set, is the command the broker runs under (for example
	// `ip netns exec <name>`); it must exec the broker in place, so that
	// signals sent to the process reach the broker itself.
	Wrap []string
	// FaultFS runs the broker with the disk-fault hook on (SetDisk,
	// diskfaults.go); its log dirs start without a fault.
	FaultFS bool

	t      testing.TB
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the process's exit status, once exited
	starts int
}

// Addr is the broker's client address.
func (b *BrokerProc) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// ClusterChroot is the ZooKeeper chroot of the brokers StartCluster starts.
const ClusterChroot = "/kbroker"

// StartCluster starts n brokers (ids 1..n) joined through ZooKeeper z
// under the chroot /kbroker, each with props on top of the cluster
// defaults. Every process is killed when the test ends.
func StartCluster(t testing.TB, z *ZooKeeper, n int, props map[string]string) []*BrokerProc {
	t.Helper()
	return StartClusterFunc(t, z, n, func(*BrokerProc) map[string]string { return props })
}

// StartClusterFunc is StartCluster with properties of each broker's own
// (props sees the broker's id, ports and dir, and may read b.Props).
func StartClusterFunc(t testing.TB, z *ZooKeeper, n int, props func(b *BrokerProc) map[string]string) []*BrokerProc {
	t.Helper()
	return startBrokers(t, z.Addr, n, func(*BrokerProc) {}, props)
}

// startBrokers is StartClusterFunc with ZooKeeper's connect string (host:port
// list) and place, which may set a broker's Host, ports and Wrap before its
// properties are made.
func startBrokers(t testing.TB, zkConnect string, n int, place func(b *BrokerProc), props func(b *BrokerProc) map[string]string) []*BrokerProc {
	t.Helper()
	bin := buildKbroker(t)
	var out []*BrokerProc
	for i := 1; i <= n; i++ {
		b := &BrokerProc{ID: int32(i), Host: "127.0.0.1", Dir: t.TempDir(), t: t}
		place(b)
		if b.Port == 0 {
			port, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			b.Port = port
		}
		if b.HTTPPort == 0 {
			hport, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			b.HTTPPort = hport
		}
		port, hport := b.Port, b.HTTPPort
		b.Props = map[string]string{
			"broker.id":                            strconv.Itoa(i),
			"listeners":                            fmt.Sprintf("PLAINTEXT://%s", net.JoinHostPort(b.Host, strconv.Itoa(port))),
			"zookeeper.connect":                    zkConnect + ClusterChroot,
			"zookeeper.session.timeout.ms":         "4000",
			"controlled.shutdown.retry.backoff.ms": "200",
			"controlled.shutdown.max.retries":      "20",
			"replica.lag.time.max.ms":              "5000",
			"offsets.topic.num.partitions":         "3",
			"transaction.state.log.num.partitions": "3",
			"group.initial.rebalance.delay.ms":     "0",
			"auto.leader.rebalance.enable":         "false",
			"http.listeners":                       fmt.Sprintf("http://%s", net.JoinHostPort(b.Host, strconv.Itoa(hport))),
			"schema.registry.listeners":            "",
			"rest.proxy.listeners":                 "",
		}
		b.Props["log.dirs"] = filepath.Join(b.Dir, "data")
		for k, v := range props(b) {
			b.Props[k] = v
		}
		b.start(bin)
		out = append(out, b)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, b := range out {
				b.dumpStacks()
			}
		}
		for _, b := range out {
			b.Kill()
		}
		for _, b := range out {
			if strings.Contains(b.Log(), "WARNING: DATA RACE") {
				t.Errorf("broker %d reported a data race (%s)", b.ID, RaceBrokersEnv)
			}
		}
		if t.Failed() {
			for _, b := range out {
				if data, err := os.ReadFile(b.logPath()); err == nil {
					t.Logf("broker %d log:\n%s", b.ID, data)
				}
			}
		}
	})
	return out
}

// Readyz returns the status code and body of the broker's /readyz.
func (b *BrokerProc) Readyz() (int, string, error) {
	resp, err := http.Get(fmt.Sprintf("http://%s/readyz", net.JoinHostPort(b.Host, strconv.Itoa(b.HTTPPort))))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

func (b *BrokerProc) logPath() string { return filepath.Join(b.Dir, "kbroker.log") }

func (b *BrokerProc) start(bin string) {
	b.t.Helper()
	args := []string{}
	for k, v := range b.Props {
		args = append(args, "--override", k+"="+v)
	}
	logf, err := os.OpenFile(b.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	argv := append(append(slices.Clone(b.Wrap), bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if b.FaultFS {
		cmd.Env = append(os.Environ(), faultFSEnv+"="+b.faultFile())
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		b.t.Fatalf("starting broker %d: %v", b.ID, err)
	}
	exited := make(chan struct{})
	b.mu.Lock()
	b.cmd, b.exited, b.err = cmd, exited, nil
	b.starts++
	b.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logf.Close()
		b.mu.Lock()
		b.err = err
		b.mu.Unlock()
		close(exited)
	}()
}

// Restart starts a stopped broker again with the same id, port and data.
func (b *BrokerProc) Restart() {
	b.t.Helper()
	b.start(buildKbroker(b.t))
}

// Running reports whether the process is alive.
func (b *BrokerProc) Running() bool {
	b.mu.Lock()
	ch := b.exited
	b.mu.Unlock()
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// dumpStacks has a running broker write every goroutine's stack to its log
// and exit (Go's SIGQUIT), for the log a failed test shows.
func (b *BrokerProc) dumpStacks() {
	b.mu.Lock()
	cmd, ch := b.cmd, b.exited
	b.mu.Unlock()
	select {
	case <-ch:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // a paused broker cannot dump
	_ = cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
	}
}

// Kill sends SIGKILL and waits for the process to go.
func (b *BrokerProc) Kill() {
	b.mu.Lock()
	cmd, ch := b.cmd, b.exited
	b.mu.Unlock()
	select {
	case <-ch:
		return
	default:
	}
	_ = cmd.Process.Kill()
	<-ch
}

// Pause stops the process with SIGSTOP: it keeps its sockets and its
// ZooKeeper session until the session times out, and answers nothing.
func (b *BrokerProc) Pause() {
	b.mu.Lock()
	cmd := b.cmd
	b.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		b.t.Fatalf("SIGSTOP broker %d: %v", b.ID, err)
	}
}

// Resume continues a paused process with SIGCONT.
func (b *BrokerProc) Resume() {
	b.mu.Lock()
	cmd := b.cmd
	b.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		b.t.Fatalf("SIGCONT broker %d: %v", b.ID, err)
	}
}

// Term sends SIGTERM and waits up to timeout for a clean exit, returning
// the exit error (nil for status 0).
func (b *BrokerProc) Term(timeout time.Duration) error {
	b.mu.Lock()
	cmd, ch := b.cmd, b.exited
	b.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-ch
		return fmt.Errorf("broker %d did not exit within %v of SIGTERM", b.ID, timeout)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Log returns what the process has logged so far.
func (b *BrokerProc) Log() string {
	data, _ := os.ReadFile(b.logPath())
	return string(data)
}
