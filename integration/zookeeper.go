// Package integration holds kbroker's multi-process tests: a real
// ZooKeeper (Debian's zookeeper package, started with java and a config of
// the test's own), fault injection between clients and ZooKeeper, and the
// cluster tests built on them.
package integration

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
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

// ZooKeeperClasspathEnv overrides where ZooKeeper's jars are (a Java
// classpath); the default is Debian's.
const ZooKeeperClasspathEnv = "KBROKER_ZOOKEEPER_CLASSPATH"

// debianClasspath is Debian's zookeeper package: zookeeper.jar's manifest
// names its dependencies; slf4j-simple sends its log to stderr, which the
// harness keeps in the test's directory.
var debianClasspath = []string{"/usr/share/java/zookeeper.jar", "/usr/share/java/slf4j-simple.jar"}

// ZooKeeper is one standalone ZooKeeper server owned by a test.
type ZooKeeper struct {
	// Addr is the client address, 127.0.0.1:<free port>.
	Addr string
	// Dir holds zoo.cfg, the data dir and zookeeper.log.
	Dir string
	// TickTime is the server's tick; sessions may last 2 to 20 ticks.
	TickTime time.Duration

	cmd    *exec.Cmd
	exited chan struct{}
}

// classpath returns ZooKeeper's jars, or why there are none.
func classpath() (string, error) {
	if cp := os.Getenv(ZooKeeperClasspathEnv); cp != "" {
		return cp, nil
	}
	var have []string
	for _, j := range debianClasspath {
		if _, err := os.Stat(j); err == nil {
			have = append(have, j)
		}
	}
	if len(have) == 0 || have[0] != debianClasspath[0] {
		return "", fmt.Errorf("%s not found (apt-get install zookeeper, or set %s)", debianClasspath[0], ZooKeeperClasspathEnv)
	}
	return strings.Join(have, ":"), nil
}

// requireTool skips the test when a tool is missing, except in CI, where a
// missing tool is a failure.
func requireTool(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and a required tool is missing: %v", err)
	}
	t.Skipf("skipping: %v", err)
}

// StartZooKeeper starts a ZooKeeper server on a free loopback port with its
// own data dir and a small heap, waits until it serves (srvr), and stops
// it when the test ends.
func StartZooKeeper(t testing.TB) *ZooKeeper {
	t.Helper()
	z := startZooKeeper(t, "127.0.0.1", 0, nil, nil, 0)
	z.waitServing(t, "standalone")
	return z
}

// zkServer is one member of an ensemble: its id (myid) and host.
type zkServer struct {
	id   int
	host string
}

// startZooKeeper starts a ZooKeeper server listening on host:port (a free
// loopback port when port is 0), run under wrap (see BrokerProc.Wrap)
// when set. With ensemble (the servers, this one among them as myid) it
// is a member of a quorum (peer port 2888, election port 3888 on each
// host); the caller waits for it to serve (waitServing), once every
// member is started.
func startZooKeeper(t testing.TB, host string, port int, wrap []string, ensemble []zkServer, myid int) *ZooKeeper {
	t.Helper()
	cp, err := classpath()
	if err == nil {
		_, err = exec.LookPath("java")
	}
	requireTool(t, err)
	dir := t.TempDir()
	z := &ZooKeeper{Dir: dir, TickTime: 250 * time.Millisecond, exited: make(chan struct{})}
	if port == 0 {
		if port, err = freePort(); err != nil {
			t.Fatal(err)
		}
	}
	z.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	cfg := fmt.Sprintf(`tickTime=%d
dataDir=%s
clientPort=%d
clientPortAddress=%s
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
minSessionTimeout=%d
maxSessionTimeout=%d
`, z.TickTime.Milliseconds(), filepath.Join(dir, "data"), port, host, 2*z.TickTime.Milliseconds(), 40*z.TickTime.Milliseconds())
	if len(ensemble) > 0 {
		cfg += "initLimit=20\nsyncLimit=8\n"
		for _, m := range ensemble {
			cfg += fmt.Sprintf("server.%d=%s:2888:3888\n", m.id, m.host)
		}
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data", "myid"), []byte(strconv.Itoa(myid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		t.Fatal(err)
	}
	argv := append(slices.Clone(wrap), "java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.jmx.log4j.disable=true", "-cp", cp,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath)
	z.cmd = exec.Command(argv[0], argv[1:]...)
	z.cmd.Stdout, z.cmd.Stderr, z.cmd.Dir = logf, logf, dir
	z.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := z.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting ZooKeeper: %v", err)
	}
	go func() {
		_ = z.cmd.Wait()
		logf.Close()
		close(z.exited)
	}()
	t.Cleanup(func() {
		z.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "zookeeper.log")); err == nil {
				t.Logf("zookeeper.log (last 4 KiB):\n%s", tail(b, 4096))
			}
		}
	})
	return z
}

// waitServing waits until the server serves requests in one of modes
// (standalone, leader, follower).
func (z *ZooKeeper) waitServing(t testing.TB, modes ...string) {
	t.Helper()
	// ruok answers imok before the server has loaded its database (its
	// first clients are then dropped half-closed); srvr says "Mode:" only
	// once it serves requests.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if out, err := z.FourLetter("srvr"); err == nil {
			for _, m := range modes {
				if strings.Contains(out, "Mode: "+m) {
					return
				}
			}
		}
		select {
		case <-z.exited:
			t.Fatalf("ZooKeeper exited at start-up; see %s", filepath.Join(z.Dir, "zookeeper.log"))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("ZooKeeper was not serving within 60s")
		}
	}
}

// Stop terminates the server (SIGTERM, then SIGKILL after 10s) and waits for it.
func (z *ZooKeeper) Stop() {
	select {
	case <-z.exited:
		return
	default:
	}
	_ = z.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-z.exited:
	case <-time.After(10 * time.Second):
		_ = z.cmd.Process.Kill()
		<-z.exited
	}
}

// FourLetter sends one of ZooKeeper's four-letter commands (ruok, srvr,
// stat, mntr…) and returns the answer.
func (z *ZooKeeper) FourLetter(cmd string) (string, error) {
	conn, err := net.DialTimeout("tcp", z.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return strings.TrimSpace(string(b)), err
}

// handedOut are the ports freePort returned in this test process: a port
// is free when asked for but bound only later, when the process it was
// given to starts, so it must not be handed out twice.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort returns a loopback port nothing listens on that it has not
// returned before in this process (compat's harness shares it).
func FreePort() (int, error) { return freePort() }

// freePort is FreePort. It picks below the kernel's ephemeral range
// (ip_local_port_range) where it can: a port from that range, free when
// asked for, may become the source port of any outgoing connection before
// the broker binds it (or while a killed broker is down, before its
// restart binds it again), and the bind then fails. Ports below the range
// are only ever taken by an explicit bind.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	if lo := ephemeralLow(); lo > 11000 {
		for range 1000 {
			port := 10000 + rand.IntN(lo-10000)
			if handedOut.ports[port] {
				continue
			}
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				continue
			}
			l.Close()
			handedOut.ports[port] = true
			return port, nil
		}
	}
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
}

// ephemeralLow is the low end of the kernel's ephemeral port range, or 0
// when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	waitEvery(t, timeout, 20*time.Millisecond, what, cond)
}

// waitEvery is waitFor asking cond every interval.
func waitEvery(t testing.TB, timeout, interval time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (last error: %v)", timeout, what, last)
		}
		time.Sleep(interval)
	}
}

var errNotYet = errors.New("not yet")
