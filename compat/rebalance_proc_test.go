package compat

// The churning-group scenario (rebalance_go_test.go) for the clients that run
// as processes: kcat -G, kafka-python (compat/py/kafka_python_rebalance.py)
// and kafkajs (compat/js/kafkajs_rebalance.js). Each member is one process;
// it prints a line per delivered record and, for the scripts, a line per
// successful synchronous commit; leaving is SIGTERM, after which the
// process must leave the group and exit 0.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procMember is one member process.
type procMember struct {
	name   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{} // closed when the process was waited for
	err    error         // cmd.Wait's result, after done
}

// startProcMember starts argv as member name and feeds each stdout line to
// parse. The process is killed (with its process group) at cleanup if it is
// still running; its stderr is logged if the test failed.
func startProcMember(t *testing.T, env *rbEnv, name, dir string, parse func(env *rbEnv, name, line string) error, argv ...string) rbMember {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.SysProcAttr = groupProcAttr()
	m := &procMember{name: name, cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = m.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", strings.Join(argv, " "), err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				if err := parse(env, name, line); err != nil {
					env.log.problem("%s printed %q: %v", name, line, err)
				}
			}
		}
		m.err = cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		select {
		case <-m.done:
		default:
			_ = killProcGroup(cmd)
			<-m.done
		}
		if t.Failed() {
			t.Logf("--- %s (%s) stderr ---\n%.20000s", name, filepath.Base(argv[0]), m.stderr.String())
		}
	})
	return m
}

// leave sends SIGTERM and waits for a clean exit.
func (m *procMember) leave(t *testing.T) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("%s: SIGTERM: %v", m.name, err)
	}
	select {
	case <-m.done:
	case <-time.After(rbStepTimeout):
		t.Fatalf("%s did not exit within %v of SIGTERM\n--- stderr ---\n%s", m.name, rbStepTimeout, m.stderr.String())
	}
	if m.err != nil {
		t.Fatalf("%s exited with %v after SIGTERM\n--- stderr ---\n%s", m.name, m.err, m.stderr.String())
	}
}

// parseJSONEvent reads the scripts' lines: {"e":"d","p","o","k"} for a
// delivery, {"e":"c","p","o"} for a successful commit of next offset o.
func parseJSONEvent(env *rbEnv, name, line string) error {
	var ev struct {
		E string `json:"e"`
		P int32  `json:"p"`
		O int64  `json:"o"`
		K string `json:"k"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		return err
	}
	switch ev.E {
	case "d":
		env.log.deliver(name, ev.P, ev.O, ev.K)
	case "c":
		env.log.commit(name, ev.P, ev.O)
	default:
		return fmt.Errorf("unknown event %q", ev.E)
	}
	return nil
}

// ---------------------------------------------------------------- kafka-python

func TestRebalanceKafkaPython(t *testing.T) {
	t.Parallel()
	c := pythonClient(t, "kafka_python_rebalance.py", "kafka", "python3-kafka")
	version := strings.TrimSpace(runClientProc(t, "", "", nil, debianPython, "-c", "import kafka; print(kafka.__version__)"))
	runRebalance(t, rbCase{client: "kafka-python", version: version, caps: []string{capGroups}, groupType: "classic",
		start: func(t *testing.T, env *rbEnv, name string) rbMember {
			argv := append(append([]string{}, c.argv...), "member", env.addr, env.topic, env.group)
			return startProcMember(t, env, name, c.dir, parseJSONEvent, argv...)
		}})
}

// ---------------------------------------------------------------- kafkajs

func TestRebalanceKafkaJS(t *testing.T) {
	t.Parallel()
	c := kafkajsClient(t)
	version := c.version(t)
	script := filepath.Join(c.dir, "kafkajs_rebalance.js")
	runRebalance(t, rbCase{client: "kafkajs", version: version, caps: []string{capGroups}, groupType: "classic",
		start: func(t *testing.T, env *rbEnv, name string) rbMember {
			return startProcMember(t, env, name, c.dir, parseJSONEvent, c.argv[0], script, "member", env.addr, env.topic, env.group)
		}})
}

// ---------------------------------------------------------------- kcat

// TestRebalanceKcat: -E keeps kcat running while the broker is down (it
// exits on "all brokers down" otherwise). On SIGTERM kcat drops the record
// its last poll returned without printing it (consume_cb returns when
// conf.run is 0), but librdkafka already stored its offset, so the close
// commits past it: that record is neither printed nor delivered again
// (dropsAtExit). kcat -G commits through librdkafka's auto-commit
// (stored offsets of what it printed, every 500 ms here, on revocation and
// on close) and says nothing about it. So the commits checked are the
// broker's: after each member left (SIGTERM: kcat closes the consumer,
// which commits and sends LeaveGroup), the group's committed offsets are
// read (rbEnv.observe), and no member may be given a record below them
// afterwards; m4, started after the restart, in particular resumes from
// them instead of reading the partitions again. Every record must be
// consumed (at least once).
func TestRebalanceKcat(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	runRebalance(t, rbCase{client: "kcat", version: kcatVersion(t), caps: []string{capGroups}, groupType: "classic",
		noCommitReports: true, dropsAtExit: true,
		start: func(t *testing.T, env *rbEnv, name string) rbMember {
			return startProcMember(t, env, name, "", parseKcatLine, kcat,
				"-b", env.addr, "-G", env.group, "-u", "-q", "-E", "-f", "%p\t%o\t%k\n",
				"-X", "client.id=rb-kcat", "-X", "broker.address.family=v4",
				"-X", "auto.offset.reset=earliest", "-X", "session.timeout.ms=6000",
				"-X", "heartbeat.interval.ms=500", "-X", "auto.commit.interval.ms=500",
				"-X", "partition.assignment.strategy=range", "-X", "fetch.wait.max.ms=100",
				"-X", "reconnect.backoff.ms=100", "-X", "reconnect.backoff.max.ms=500",
				env.topic)
		}})
}

// parseKcatLine reads "partition\toffset\tkey".
func parseKcatLine(env *rbEnv, name, line string) error {
	f := strings.Split(line, "\t")
	if len(f) != 3 {
		return fmt.Errorf("want 3 tab-separated fields")
	}
	p, err1 := strconv.ParseInt(f[0], 10, 32)
	o, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad partition or offset")
	}
	env.log.deliver(name, int32(p), o, f[2])
	return nil
}
