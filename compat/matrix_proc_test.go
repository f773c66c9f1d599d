package compat

// The matrix for clients that run as their own processes: kcat, the Python
// clients (compat/py, run with Debian's /usr/bin/python3, the only Python
// that loads Debian's python3-kafka and python3-confluent-kafka) and kafkajs
// (compat/js, run with node after `npm ci`).
//
// A client script takes a command and arguments:
//
//	version                                  print the client's version
//	admin   ADDR TOPIC                       create (2 partitions, retention.ms),
//	                                         list, describe, delete TOPIC
//	create  ADDR TOPIC PARTITIONS            create TOPIC
//	produce ADDR TOPIC CODEC IDEMPOTENT(0|1) records from stdin, one JSON
//	                                         object {"k","v","h":[[k,v]...]} a
//	                                         line; prints {"k","p","o"} a line
//	                                         per acknowledged record
//	consume ADDR TOPIC GROUP INSTANCE N [ISOLATION]
//	                                         consume N records in GROUP
//	                                         (INSTANCE "" for none) from the
//	                                         earliest offset, commit, close;
//	                                         prints {"p","o","k","v","h"} a line;
//	                                         ISOLATION read_committed or
//	                                         read_uncommitted (else the
//	                                         client's default)
//	transact ADDR TOPIC TXNID GROUP OFFTOPIC transactions from stdin, one JSON
//	                                         object {"commit","offset","recs"}
//	                                         a line, with one transactional
//	                                         producer (matrix_txn_test.go);
//	                                         prints {"k","p","o"} per record
//
// and exits non-zero on any error.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procTimeout bounds one client process.
const procTimeout = 90 * time.Second

// runClientProc runs argv with stdin, returning stdout. On a non-zero exit
// or a timeout it fails the test with the client's own stdout and stderr.
func runClientProc(t *testing.T, dir, stdin string, env []string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.SysProcAttr = groupProcAttr()
	cmd.Cancel = func() error { return killProcGroup(cmd) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	if err != nil {
		t.Fatalf("%s: %v after %v (ctx: %v)\n--- client stderr ---\n%s\n--- client stdout ---\n%.20000s",
			strings.Join(argv, " "), err, time.Since(start).Round(time.Millisecond), ctx.Err(), stderr.String(), stdout.String())
	}
	if stderr.Len() > 0 {
		t.Logf("%s (%v) stderr:\n%.20000s", strings.Join(argv, " "), time.Since(start).Round(time.Millisecond), stderr.String())
	}
	return stdout.String()
}

// scriptClient drives a client script (see the top of this file).
type scriptClient struct {
	argv      []string // interpreter and script
	dir       string
	env       []string
	addr      string
	isolation string // "" (the client's default), "read_committed" or "read_uncommitted"
}

func (c *scriptClient) setAddr(addr string) { c.addr = addr }

func (c *scriptClient) run(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return runClientProc(t, c.dir, stdin, c.env, append(append([]string{}, c.argv...), args...)...)
}

func (c *scriptClient) version(t *testing.T) string {
	return strings.TrimSpace(c.run(t, "", "version"))
}

func (c *scriptClient) admin(t *testing.T, topic string) {
	c.run(t, "", "admin", c.addr, topic)
}

func (c *scriptClient) createTopic(t *testing.T, topic string, partitions int, rf int16) {
	c.run(t, "", "create", c.addr, topic, strconv.Itoa(partitions), strconv.Itoa(int(rf)))
}

type jsonRec struct {
	K string      `json:"k"`
	V string      `json:"v"`
	H [][2]string `json:"h"`
	P int32       `json:"p"`
	O int64       `json:"o"`
}

func (c *scriptClient) produce(t *testing.T, topic, codec string, idempotent bool, keys []string) []producedRec {
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for i, k := range keys {
		if err := enc.Encode(jsonRec{K: k, V: valueFor(k), H: headersFor(codec, i)}); err != nil {
			t.Fatal(err)
		}
	}
	idem := "0"
	if idempotent {
		idem = "1"
	}
	out := c.run(t, in.String(), "produce", c.addr, topic, codec, idem)
	var acks []producedRec
	for _, r := range parseJSONLines(t, out) {
		acks = append(acks, producedRec{Key: r.K, Partition: r.P, Offset: r.O})
	}
	return acks
}

func (c *scriptClient) consume(t *testing.T, topic, group, instanceID string, n int) []consumedRec {
	args := []string{"consume", c.addr, topic, group, instanceID, strconv.Itoa(n)}
	if c.isolation != "" {
		args = append(args, c.isolation)
	}
	out := c.run(t, "", args...)
	var got []consumedRec
	for _, r := range parseJSONLines(t, out) {
		got = append(got, consumedRec{Partition: r.P, Offset: r.O, Key: r.K, Value: r.V, Headers: r.H})
	}
	return got
}

func parseJSONLines(t *testing.T, out string) []jsonRec {
	t.Helper()
	var rs []jsonRec
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r jsonRec
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("client printed %q, not a JSON record: %v\n--- all output ---\n%.5000s", line, err, out)
		}
		rs = append(rs, r)
	}
	return rs
}

// compatDir is this package's directory (go test runs in it).
func compatDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// debianPython is the interpreter that has Debian's python3-kafka and
// python3-confluent-kafka; a pyenv or venv python3 on PATH does not.
const debianPython = "/usr/bin/python3"

// pythonClient returns the driver for compat/py/SCRIPT, failing the test if
// Debian's python3 or the module is missing (scripts/test.sh installs them).
func pythonClient(t *testing.T, script, module, pkg string) *scriptClient {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("%s is missing (%v): run scripts/test.sh, which installs %s", debianPython, err, pkg)
	}
	if out, err := exec.Command(debianPython, "-c", "import "+module).CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import %s (%v): run scripts/test.sh, which installs the Debian package %s\n%s", debianPython, module, err, pkg, out)
	}
	dir := filepath.Join(compatDir(t), "py")
	return &scriptClient{argv: []string{debianPython, "-u", filepath.Join(dir, script)}, dir: dir,
		env: []string{"PYTHONDONTWRITEBYTECODE=1"}}
}

func TestMatrixKafkaPython(t *testing.T) {
	c := pythonClient(t, "kafka_python_client.py", "kafka", "python3-kafka")
	runMatrix(t, c, matrixCase{
		client: "kafka-python", version: c.version(t),
		codecs:   []string{"none", "gzip", "snappy", "lz4", "zstd"},
		hasAdmin: true,
	})
}

func TestMatrixConfluentKafkaPython(t *testing.T) {
	c := pythonClient(t, "confluent_kafka_client.py", "confluent_kafka", "python3-confluent-kafka")
	runMatrix(t, c, matrixCase{
		client: "confluent-kafka python", version: c.version(t),
		codecs:   []string{"none", "gzip", "snappy", "lz4", "zstd"},
		hasAdmin: true, idempotent: true, static: true, txn: true,
	})
}

// kafkajsClient returns the driver for compat/js/kafkajs_client.js, failing
// the test if node or the installed packages are missing.
func kafkajsClient(t *testing.T) *scriptClient {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (%v): run scripts/test.sh, which installs nodejs and npm", err)
	}
	dir := filepath.Join(compatDir(t), "js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs", "package.json")); err != nil {
		t.Fatalf("kafkajs is not installed in %s (%v): run scripts/test.sh, which runs npm ci there", dir, err)
	}
	return &scriptClient{argv: []string{node, filepath.Join(dir, "kafkajs_client.js")}, dir: dir}
}

func TestMatrixKafkaJS(t *testing.T) {
	c := kafkajsClient(t)
	runMatrix(t, c, matrixCase{
		client: "kafkajs", version: c.version(t),
		// zstd needs @kafkajs/zstd, a native addon; not installed.
		codecs:   []string{"none", "gzip", "snappy", "lz4"},
		hasAdmin: true, idempotent: true, txn: true,
	})
}

// ---------------------------------------------------------------- kcat

func TestMatrixKcat(t *testing.T) {
	kcatPath(t)
	runMatrix(t, &kcatClient{}, matrixCase{
		client: "kcat", version: kcatVersion(t),
		codecs:     []string{"none", "gzip", "snappy", "lz4", "zstd"},
		idempotent: true, static: true,
	})
}

// kcatVersion is "1.7.1 (librdkafka 2.0.2)" from kcat -V.
func kcatVersion(t *testing.T) string {
	out, _ := exec.Command(kcatPath(t), "-V").CombinedOutput()
	m := regexp.MustCompile(`Version (\S+) .*librdkafka (\S+)`).FindSubmatch(out)
	if m == nil {
		return "unknown"
	}
	return fmt.Sprintf("%s (librdkafka %s)", m[1], m[2])
}

// kcatClient drives kcat as a shell user would: -P and -G.
type kcatClient struct{ addr string }

func (c *kcatClient) setAddr(addr string) { c.addr = addr }

func (c *kcatClient) admin(t *testing.T, topic string) { t.Fatal("kcat has no admin commands") }

// createTopic uses kadm: kcat cannot create topics.
func (c *kcatClient) createTopic(t *testing.T, topic string, partitions int, rf int16) {
	createTopicRF(t, newAdmin(t, c.addr), topic, int32(partitions), rf, nil)
}

// headers: kcat's -H gives every record of one run the same headers.
func (c *kcatClient) headers(codec string, i int) [][2]string {
	return [][2]string{{"codec", codec}, {"tool", "kcat"}}
}

func (c *kcatClient) produce(t *testing.T, topic, codec string, idempotent bool, keys []string) []producedRec {
	var in strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&in, "%s\t%s\n", k, valueFor(k))
	}
	args := []string{kcatPath(t), "-P", "-b", c.addr, "-t", topic, "-K", "\t", "-z", codec,
		"-H", "codec=" + codec, "-H", "tool=kcat", "-X", "acks=all", "-X", "broker.address.family=v4"}
	if idempotent {
		args = append(args, "-X", "enable.idempotence=true")
	}
	runClientProc(t, "", in.String(), nil, args...)
	// kcat exits 0 only when every message was delivered; it prints no
	// offsets, so the records' positions are checked when consumed.
	acks := make([]producedRec, len(keys))
	for i, k := range keys {
		acks[i] = producedRec{Key: k, Partition: -1, Offset: -1}
	}
	return acks
}

func (c *kcatClient) consume(t *testing.T, topic, group, instanceID string, n int) []consumedRec {
	args := []string{kcatPath(t), "-b", c.addr, "-G", group, "-c", strconv.Itoa(n), "-q",
		"-f", "%p\t%o\t%k\t%s\t%h\n",
		"-X", "auto.offset.reset=earliest", "-X", "broker.address.family=v4"}
	if instanceID != "" {
		args = append(args, "-X", "group.instance.id="+instanceID)
	}
	args = append(args, topic)
	out := runClientProc(t, "", "", nil, args...)
	var got []consumedRec
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("unparseable kcat line %q", line)
		}
		p, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("unparseable kcat line %q", line)
		}
		cr := consumedRec{Partition: int32(p), Offset: o, Key: f[2], Value: f[3]}
		for _, kv := range strings.Split(f[4], ",") {
			k, v, _ := strings.Cut(kv, "=")
			cr.Headers = append(cr.Headers, [2]string{k, v})
		}
		got = append(got, cr)
	}
	return got
}
