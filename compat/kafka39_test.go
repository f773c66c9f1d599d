package compat

// Apache Kafka 3.9 (kafka_2.13 3.9.2 from compat/java/kafka-3.9), the last
// Kafka line with ZooKeeper mode, as the reference of kbroker's cluster
// mode: one broker on a real ZooKeeper (Debian's, through integration's
// harness) under its own chroot, started with `java -cp … kafka.Kafka` as
// kafka-server-start.sh would, with a small heap. Tests run the same
// requests against it and against kbroker brokers on the same ZooKeeper.

import (
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/integration"
)

// javaModKafka39 is the Maven module with Kafka 3.9's broker classpath.
const javaModKafka39 = "kafka-3.9"

// kafka39Proc is one Apache Kafka 3.9 process in ZooKeeper mode.
type kafka39Proc struct {
	id      int32
	port    int
	cmd     *exec.Cmd
	out     *syncBuffer
	done    <-chan struct{}
	started time.Time
}

// Addr is the broker's PLAINTEXT listener.
func (k *kafka39Proc) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(k.port)) }

// startKafka39 starts broker id of a Kafka 3.9 cluster on z under chroot
// (e.g. "/kafka39"), with Kafka's defaults but for what one broker needs
// (internal topics with replication factor 1), and waits until it serves.
// It is stopped (SIGTERM, then SIGKILL) at test cleanup.
func startKafka39(t testing.TB, z *integration.ZooKeeper, chroot string, id int32) *kafka39Proc {
	t.Helper()
	return startKafka39Dir(t, z, chroot, id, filepath.Join(t.TempDir(), "data"))
}

// startKafka39Dir is startKafka39 with log.dirs=logDir (a dir another
// broker may have written, or will).
func startKafka39Dir(t testing.TB, z *integration.ZooKeeper, chroot string, id int32, logDir string) *kafka39Proc {
	t.Helper()
	return startKafka39With(t, z, chroot, id, logDir, nil)
}

// startKafka39With is startKafka39Dir with extra properties on top (a
// later line of server.properties wins).
func startKafka39With(t testing.TB, z *integration.ZooKeeper, chroot string, id int32, logDir string, extra map[string]string) *kafka39Proc {
	t.Helper()
	return startKafka39At(t, z, chroot, id, logDir, freePort(t), extra)
}

// startKafka39At is startKafka39With with the PLAINTEXT listener on port
// (extra may set listeners to add others, keeping PLAINTEXT on port).
func startKafka39At(t testing.TB, z *integration.ZooKeeper, chroot string, id int32, logDir string, port int, extra map[string]string) *kafka39Proc {
	t.Helper()
	return startKafka39JVM(t, z, chroot, id, logDir, port, extra, kafka39SmallJVM)
}

// kafka39JVM is how a Kafka 3.9 broker's JVM runs and how long it may take
// to start.
type kafka39JVM struct {
	xmx, xms     string // -Xmx and -Xms, e.g. "512m"
	gc           string // the collector's flag, e.g. "-XX:+UseSerialGC"
	startTimeout time.Duration
}

// kafka39SmallJVM is the JVM of the compat tests' Kafka 3.9 brokers.
var kafka39SmallJVM = kafka39JVM{xmx: "512m", xms: "256m", gc: "-XX:+UseSerialGC", startTimeout: kafkaStartTimeout}

// kafka39BenchJVM is the JVM of the latency benchmarks' Kafka 3.9 brokers:
// the heap and collector of their Kafka 4.4 brokers (startKafkaCluster:
// KAFKA_HEAP_OPTS=-Xmx512m -Xms512m and kafka-server-start.sh's G1), so
// that the two Kafkas differ only in their code.
var kafka39BenchJVM = kafka39JVM{xmx: "512m", xms: "512m", gc: "-XX:+UseG1GC", startTimeout: kafkaStartTimeout}

// startKafka39JVM is startKafka39At with the JVM of jvm.
func startKafka39JVM(t testing.TB, z *integration.ZooKeeper, chroot string, id int32, logDir string, port int, extra map[string]string, jvm kafka39JVM) *kafka39Proc {
	t.Helper()
	cp := javaClasspath(t, javaModKafka39)
	dir := t.TempDir()
	k := &kafka39Proc{id: id, port: port, out: &syncBuffer{}}
	props := fmt.Sprintf(`broker.id=%[1]d
listeners=PLAINTEXT://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[2]d
zookeeper.connect=%[3]s%[4]s
log.dirs=%[5]s
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
num.partitions=1
`, id, k.port, z.Addr, chroot, logDir)
	for _, key := range slices.Sorted(maps.Keys(extra)) {
		props += key + "=" + extra[key] + "\n"
	}
	path := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(path, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	k.cmd = exec.Command("java", "-Xmx"+jvm.xmx, "-Xms"+jvm.xms, jvm.gc,
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-cp", cp, "kafka.Kafka", path)
	k.started = time.Now()
	k.done = launchJavaProc(t, "Apache Kafka 3.9", k.cmd, k.out)
	if err := waitListening(k.Addr(), k.done, jvm.startTimeout); err != nil {
		t.Fatalf("Apache Kafka 3.9: %v\n--- Kafka output ---\n%s", err, k.out.String())
	}
	// KafkaServer logs this once it is registered and serves clients.
	waitFor(t, jvm.startTimeout, "Apache Kafka 3.9 to start", func() bool {
		return strings.Contains(k.out.String(), fmt.Sprintf("[KafkaServer id=%d] started", id))
	})
	t.Logf("Apache Kafka 3.9 (ZooKeeper mode) broker %d on %s ready after %v", id, k.Addr(), time.Since(k.started).Round(time.Millisecond))
	return k
}

// stop sends SIGTERM to the process group and waits; SIGKILL after 30 s.
func (k *kafka39Proc) stop(t testing.TB) { stopJavaProc(t, "Apache Kafka 3.9", k.cmd, k.done, k.out) }

// kill sends SIGKILL to the process group and waits: a crash, no clean
// shutdown.
func (k *kafka39Proc) kill() {
	_ = killProcGroup(k.cmd)
	<-k.done
}

// term sends SIGTERM (a controlled shutdown: Kafka moves the leaderships
// it holds away first) and waits up to timeout for the process to exit,
// then kills it and says so.
func (k *kafka39Proc) term(timeout time.Duration) error {
	_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-k.done:
		return nil
	case <-time.After(timeout):
		k.kill()
		return fmt.Errorf("Apache Kafka 3.9 broker %d did not exit within %v of SIGTERM", k.id, timeout)
	}
}

// openFiles is how many file descriptors the process holds (-1 when
// /proc cannot say).
func (k *kafka39Proc) openFiles() int { return integration.OpenFiles(k.cmd.Process.Pid) }
