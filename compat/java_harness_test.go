package compat

// The Java side of the compat tests (compat/java, a Maven project): building
// it once per test binary with `mvn -o`, the classpaths it resolved, and
// long-lived JVMs that answer one request per line (kbroker.compat.Client
// serve), so that a test group pays for one JVM start, not one per call.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Maven modules of compat/java whose target/classpath.txt the tests read.
const (
	javaMod44   = "clients"     // kafka-clients 4.4.0 and the driver's classes
	javaMod39   = "clients-3.9" // kafka-clients 3.9.x
	javaModKafk = "kafka"       // kafka_2.13 and kafka-tools 4.4.0
)

var javaBuild struct {
	once sync.Once
	err  error
}

// javaDir is compat/java.
func javaDir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "java")
}

// ensureJava builds compat/java once per test binary with `mvn -q -o
// package` (offline: scripts/test.sh fetched the dependencies into ~/.m2).
// A missing java or mvn fails the test: scripts/test.sh needs them.
func ensureJava(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (%v): the Java compat tests need a JDK 17+ and Maven", tool, err)
		}
	}
	dir := javaDir(t)
	javaBuild.once.Do(func() {
		start := time.Now()
		cmd := exec.Command("mvn", "-q", "-o", "-B", "package", "-DskipTests")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			javaBuild.err = fmt.Errorf("mvn -q -o package in %s: %w (run scripts/test.sh once, which fetches the dependencies into ~/.m2)\n%s", dir, err, out)
			return
		}
		fmt.Fprintf(os.Stderr, "compat: built compat/java in %v\n", time.Since(start).Round(time.Millisecond))
	})
	if javaBuild.err != nil {
		t.Fatal(javaBuild.err)
	}
}

// javaClasspath is the runtime classpath of a module of compat/java; for
// the client modules it starts with the driver's classes.
func javaClasspath(t testing.TB, module string) string {
	t.Helper()
	ensureJava(t)
	dir := javaDir(t)
	data, err := os.ReadFile(filepath.Join(dir, module, "target", "classpath.txt"))
	if err != nil {
		t.Fatalf("classpath of compat/java/%s: %v", module, err)
	}
	cp := strings.TrimSpace(string(data))
	if module == javaModKafk {
		return cp
	}
	return filepath.Join(dir, javaMod44, "target", "classes") + string(os.PathListSeparator) + cp
}

// javaOpts are the JVM options of every client JVM: a small heap, a quick
// start (no JIT tiers beyond C1 for short runs), and the client's logging at
// WARN through slf4j-simple, on stderr.
var javaOpts = []string{
	"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
	"-Dorg.slf4j.simpleLogger.logFile=System.err",
}

// jvm is one `kbroker.compat.Client serve` process owned by a test.
type jvm struct {
	t       testing.TB
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	replies chan jvmReply
	stderr  *syncBuffer
	done    chan struct{}
}

type jvmReply struct {
	Out   string  `json:"out"`
	Error *string `json:"error"`
	err   error   // reading or decoding the reply failed
}

// startJVM starts the driver in serve mode on the module's classpath; it is
// killed at test cleanup. extra are client properties every client of the
// JVM gets (written to a file named by -Dkbroker.client.properties).
func startJVM(t testing.TB, module string, extra ...string) *jvm {
	t.Helper()
	args := append([]string{}, javaOpts...)
	if len(extra) > 0 {
		path := filepath.Join(t.TempDir(), "client.properties")
		if err := os.WriteFile(path, []byte(strings.Join(extra, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-Dkbroker.client.properties="+path)
	}
	args = append(args, "-cp", javaClasspath(t, module), "kbroker.compat.Client", "serve")
	cmd := exec.Command("java", args...)
	cmd.SysProcAttr = groupProcAttr()
	j := &jvm{t: t, cmd: cmd, stderr: &syncBuffer{}, replies: make(chan jvmReply), done: make(chan struct{})}
	cmd.Stderr = j.stderr
	var err error
	if j.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting java: %v", err)
	}
	// The reader owns stdout; it ends when the process closes it.
	go func() {
		defer close(j.done)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var rep jvmReply
			if err := json.Unmarshal(line, &rep); err != nil {
				rep.err = fmt.Errorf("the JVM printed %q, not a reply: %w", line, err)
			}
			select {
			case j.replies <- rep:
			case <-time.After(procTimeout):
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = j.stdin.Close()
		select {
		case <-j.done:
		case <-time.After(10 * time.Second):
		}
		_ = killProcGroup(cmd)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("--- java stderr ---\n%.20000s", j.stderr.String())
		}
	})
	return j
}

// call sends one request and returns the command's stdout, failing the
// test with the Java exception when the command failed.
func (j *jvm) call(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, javaErr := j.try(t, stdin, args...)
	if javaErr != "" {
		t.Fatalf("java %s failed:\n%s\n--- output ---\n%.5000s", strings.Join(args, " "), javaErr, out)
	}
	return out
}

// try is call for a command that may fail: it returns the command's stdout
// and its Java exception ("" when it succeeded).
func (j *jvm) try(t testing.TB, stdin string, args ...string) (string, string) {
	t.Helper()
	req, err := json.Marshal(map[string]any{"args": args, "stdin": stdin})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := j.stdin.Write(append(req, '\n')); err != nil {
		t.Fatalf("java %s: writing the request: %v\n--- java stderr ---\n%s", strings.Join(args, " "), err, j.stderr.String())
	}
	timer := time.NewTimer(procTimeout)
	defer timer.Stop()
	select {
	case rep := <-j.replies:
		switch {
		case rep.err != nil:
			t.Fatalf("java %s: %v", strings.Join(args, " "), rep.err)
		case rep.Error != nil:
			return rep.Out, fmt.Sprintf("after %v: %s", time.Since(start).Round(time.Millisecond), *rep.Error)
		}
		return rep.Out, ""
	case <-j.done:
		t.Fatalf("java %s: the JVM exited: %v\n--- java stderr ---\n%s", strings.Join(args, " "), j.cmd.Wait(), j.stderr.String())
	case <-timer.C:
		_ = killProcGroup(j.cmd)
		t.Fatalf("java %s: no reply within %v\n--- java stderr ---\n%s", strings.Join(args, " "), procTimeout, j.stderr.String())
	}
	return "", ""
}
