package compat

// Apache Kafka itself (kafka_2.13 4.4.0 from compat/java/kafka) as the
// reference broker: one single-node KRaft cluster in combined mode
// (broker and controller in one process, as a developer runs it), formatted
// with Kafka's storage tool, on loopback ports, with its own data directory
// and a small heap. Tests run the same commands against it and against
// kbroker and compare what users see.

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kafkaStartTimeout bounds the JVM start and the KRaft election.
const kafkaStartTimeout = 90 * time.Second

// kafkaProc is one Apache Kafka process owned by a test.
type kafkaProc struct {
	port, controllerPort int
	dir                  string
	cmd                  *exec.Cmd
	out                  *syncBuffer
	done                 <-chan struct{}
	started              time.Time
}

// Addr is the broker listener's host:port.
func (k *kafkaProc) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(k.port)) }

// kafkaNodeID is the reference broker's node.id: kbroker's default, so that
// leader and replica columns agree without masking.
const kafkaNodeID = 0

// kafkaServerProperties is the reference broker's configuration: Kafka's
// defaults except what a single node needs (replication factor 1 for the
// internal topics) and what kbroker's compat brokers also set (no initial
// rebalance delay).
func kafkaServerProperties(port, controllerPort int, logDir string) string {
	return fmt.Sprintf(`process.roles=broker,controller
node.id=%[4]d
controller.quorum.voters=%[4]d@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=%[3]s
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
num.partitions=1
`, port, controllerPort, logDir, kafkaNodeID)
}

// randomClusterID is what `kafka-storage.sh random-uuid` prints: 16 random
// bytes, URL-safe base64 without padding. It may begin with '-', so it is
// passed as --cluster-id=ID.
func randomClusterID(t testing.TB) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// startKafka formats a fresh data directory and starts Apache Kafka 4.4.0
// through compat/java/bin/kafka-server-start.sh with a 512 MiB heap. It is
// stopped (SIGTERM, then SIGKILL) at test cleanup. Each of extra is one
// more line of server.properties ("key=value"; a later line wins).
func startKafka(t testing.TB, extra ...string) *kafkaProc {
	t.Helper()
	k := &kafkaProc{port: freePort(t), controllerPort: freePort(t), dir: t.TempDir()}
	props := kafkaServerProperties(k.port, k.controllerPort, filepath.Join(k.dir, "data"))
	for _, line := range extra {
		props += line + "\n"
	}
	k.launch(t, props, randomClusterID(t))
	k.await(t, kafkaStartTimeout)
	return k
}

// launch writes props to k.dir/server.properties, formats the data
// directory for the KRaft cluster clusterID with Kafka's storage tool, and
// starts kafka-server-start.sh with a 512 MiB heap without waiting for it
// (await does). The process is stopped at test cleanup.
func (k *kafkaProc) launch(t testing.TB, props, clusterID string) {
	t.Helper()
	ensureJava(t)
	bin := filepath.Join(javaDir(t), "bin")
	k.out = &syncBuffer{}
	path := filepath.Join(k.dir, "server.properties")
	if err := os.WriteFile(path, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "KAFKA_HEAP_OPTS=-Xmx512m -Xms512m")
	format := exec.Command(filepath.Join(bin, "kafka-storage.sh"), "format", "--cluster-id="+clusterID, "--config", path)
	format.Env = env
	if out, err := format.CombinedOutput(); err != nil {
		t.Fatalf("kafka-storage.sh format: %v\n%s", err, out)
	}
	k.cmd = exec.Command(filepath.Join(bin, "kafka-server-start.sh"), path)
	k.cmd.Env = env
	k.started = time.Now()
	k.done = launchJavaProc(t, "Apache Kafka", k.cmd, k.out)
}

// await waits up to timeout for a launched Kafka to listen and serve.
func (k *kafkaProc) await(t testing.TB, timeout time.Duration) {
	t.Helper()
	if err := waitListening(k.Addr(), k.done, timeout); err != nil {
		t.Fatalf("Apache Kafka: %v\n--- Kafka output ---\n%s", err, k.out.String())
	}
	// The listener opens before the broker has caught up with the
	// metadata log; KafkaRaftServer logs this line once it serves
	// clients.
	waitFor(t, timeout, "Apache Kafka to register its broker", func() bool {
		return strings.Contains(k.out.String(), "Kafka Server started")
	})
	t.Logf("Apache Kafka 4.4.0 on %s ready after %v", k.Addr(), time.Since(k.started).Round(time.Millisecond))
}

// launchJavaProc starts cmd, a reference JVM, in its own process group with
// its output in out, and returns a channel closed once it exits. It is
// stopped (stopJavaProc) at test cleanup.
func launchJavaProc(t testing.TB, name string, cmd *exec.Cmd, out *syncBuffer) <-chan struct{} {
	t.Helper()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = groupProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() { stopJavaProc(t, name, cmd, done, out) })
	return done
}

// stopJavaProc stops a JVM started in its own process group (cmd, whose
// Wait closes done): SIGTERM to the group, SIGKILL after 30 s; a failed
// test logs the end of its output.
func stopJavaProc(t testing.TB, name string, cmd *exec.Cmd, done <-chan struct{}, out *syncBuffer) {
	select {
	case <-done:
		return
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = killProcGroup(cmd)
		<-done
	}
	if t.Failed() {
		t.Logf("--- %s output (last 4000 bytes) ---\n%s", name, tail(out.String(), 4000))
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
