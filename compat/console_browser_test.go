package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// chromiumPath is Debian's chromium, which scripts/test.sh installs.
const chromiumPath = "/usr/bin/chromium"

// TestConsoleBrowser runs a real kbroker with its web console, fills it
// through franz-go (a topic with keyed, headered JSON, text and binary
// records; a group that consumed and committed, then fell behind by three
// records; a transaction left open), and walks the console in Debian's
// chromium, headless, with playwright-core (compat/browser/console.mjs):
// the topic is listed with its partitions and end offset, the group's lag
// is 3, the transaction is Ongoing, the message browser shows the record's
// key and header, a JSON value pretty-printed and a binary one as hex, and
// creating a topic through the confirmation page makes it appear.
// Screenshots of every page go to $KBROKER_ARTIFACTS/console-browser, or
// the test's artifact dir (go test -artifacts); their paths are logged.
// Without chromium or node the test is skipped, except in CI (CI=true),
// where it fails.
func TestConsoleBrowser(t *testing.T) {
	node := browserTools(t)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startBroker(t, t.TempDir(), "http.listeners=http://"+httpAddr, "num.partitions=1")
	base := "http://" + httpAddr
	waitReady(t, base)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		topic, group, txnID = "console-orders", "console-billing", "console-txn"
		partitions          = 3
		key, hk, hv         = "order-1", "trace-id", "abc-123"
	)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for name, n := range map[string]int32{topic: partitions, "console-txn-topic": 1} {
		if _, err := adm.CreateTopic(ctx, n, 1, nil, name); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	produce := func(rs ...*kgo.Record) {
		t.Helper()
		for _, r := range rs {
			r.Topic = topic
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	produce(
		&kgo.Record{Partition: 0, Key: []byte(key), Headers: []kgo.RecordHeader{{Key: hk, Value: []byte(hv)}},
			Value: []byte(`{"id":1,"items":["book","pen"],"total":12.5}`)},
		&kgo.Record{Partition: 0, Key: []byte("order-2"), Value: []byte("plain text")},
		&kgo.Record{Partition: 0, Key: []byte("blob"), Value: []byte{0x00, 0x9f, 0xff, 0x10, 'k', 'b'}},
		&kgo.Record{Partition: 1, Value: []byte("other partition")},
	)

	// A group member consumes everything and commits, then leaves; three
	// more records make its lag 3.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	for seen := 0; seen < 4; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consuming: %v", err)
		}
		seen += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("committing: %v", err)
	}
	consumer.Close() // leaves the group
	produce(&kgo.Record{Partition: 0, Value: []byte("a")}, &kgo.Record{Partition: 0, Value: []byte("b")},
		&kgo.Record{Partition: 1, Value: []byte("c")})

	// A transaction left open while the browser looks.
	txn, err := kgo.NewClient(kgo.SeedBrokers(p.Addr()), kgo.TransactionalID(txnID), kgo.TransactionTimeout(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "console-txn-topic", Value: []byte("pending")}).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	defer txn.EndTransaction(context.Background(), kgo.TryAbort)

	shots := os.Getenv("KBROKER_ARTIFACTS")
	if shots != "" {
		shots = filepath.Join(shots, "console-browser")
	} else {
		shots = t.ArtifactDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	arg, _ := json.Marshal(map[string]any{
		"url": base, "chromium": chromiumPath, "screenshots": shots,
		"topic": topic, "partitions": partitions, "records": 5,
		"group": group, "lag": 3, "txnID": txnID,
		"key": key, "headerKey": hk, "headerValue": hv,
		"newTopic": "console-created",
	})
	script := filepath.Join(compatDir(t), "browser", "console.mjs")
	cmd := exec.CommandContext(ctx, node, script, string(arg))
	cmd.Dir = filepath.Dir(script)
	cmd.SysProcAttr = childProcAttr()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		t.Log(sc.Text()) // "screenshot <path>"
	}
	if err != nil {
		t.Fatalf("the browser walk failed: %v\n%s\nbroker output:\n%s", err, stderr.String(), p.Output())
	}
	if n := strings.Count(string(out), "screenshot "); n < 10 {
		t.Errorf("%d screenshots, want one per step (10)", n)
	}
	// The create action went through Kafka: the topic exists for clients.
	topics, err := adm.ListTopics(ctx)
	if err != nil || !topics.Has("console-created") {
		t.Errorf("console-created after the console's action: %v (err %v)", topics.Names(), err)
	}
}

// browserTools returns node's path after checking that chromium and
// playwright-core (compat/browser, npm ci) are there: missing ones skip the
// test, or fail it under CI=true.
func browserTools(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...) + ": run scripts/test.sh, which installs chromium and nodejs and runs npm ci in compat/browser"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		missing("chromium is not installed (%v)", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(compatDir(t), "browser", "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core is not installed (%v)", err)
	}
	return node
}

// waitReady waits until the broker's /readyz answers 200.
func waitReady(t *testing.T, base string) {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz not ready after 30 s (last error %v)", base, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
}
