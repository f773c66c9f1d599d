package restproxy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// stepMark separates the outputs of the walkthrough's commands.
const stepMark = "<<<step>>>"

// TestREADMEWalkthrough runs the curl walkthrough of the README's "HTTP
// proxy" section with the real curl against a broker's proxy, and checks
// each step's reply: the topic is created, the records produced, the
// consumer reads them, the commit lands in the group.
func TestREADMEWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is needed (apt-get install curl): %v", err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed: %v", err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- curl walkthrough -->\n```sh\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no curl walkthrough block")
	}
	e := start(t, nil)
	var script strings.Builder
	script.WriteString("set -e\n")
	steps := 0
	for _, line := range strings.Split(block, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.ReplaceAll(line, "http://localhost:8082", e.base)
		script.WriteString(line + "\necho\necho '" + stepMark + "'\n")
		steps++
	}
	cmd := exec.CommandContext(e.ctx, bash, "-c", script.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("walkthrough: %v\n%s\n%s", err, out, stderr.String())
	}
	got := strings.Split(string(out), stepMark+"\n")
	want := []string{
		``, // CLUSTER=$(...) prints nothing
		`"kind":"KafkaTopic"`,
		`"offsets":[{"partition":0,"offset":0,"error_code":null,"error":null},{"partition":0,"offset":1,`,
		`"instance_id":"c1","base_uri":"` + e.base + `/consumers/demo-group/instances/c1"`,
		``, // subscribe: 204
		`[{"topic":"demo","key":"a","value":{"n":1},"partition":0,"offset":0},{"topic":"demo","key":null,"value":{"n":2},"partition":0,"offset":1}]`,
		`[]`, // commit
		``,   // delete: 204
	}
	if steps != len(want) || len(got) != len(want)+1 {
		t.Fatalf("%d commands, %d outputs, want %d:\n%s", steps, len(got)-1, len(want), out)
	}
	for i, w := range want {
		if s := strings.TrimSpace(got[i]); w == "" && s != "" || !strings.Contains(s, w) {
			t.Errorf("step %d: %q, want %q", i+1, s, w)
		}
	}
	if got := e.kafkaCommitted("demo-group", "demo", 0); got != 2 {
		t.Errorf("demo-group's committed offset %d, want 2", got)
	}
}

// TestCurlStream: the README's streamed produce, curl -X POST -T- with
// records on its stdin, gets one reply per record, in order. (curl sends
// what it reads from a pipe in blocks, so the reply-before-next-record
// behaviour is tested with Go's client in TestV3Records.)
func TestCurlStream(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is needed (apt-get install curl): %v", err)
	}
	e := start(t, nil)
	e.createTopic("curlstream", 1)
	cmd := exec.CommandContext(e.ctx, curl, "-sN", "-X", "POST", "-T-", "-H", "Content-Type: application/json",
		e.base+"/v3/clusters/"+e.clusterID()+"/topics/curlstream/records")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		if _, err := fmt.Fprintf(stdin, `{"value":{"type":"STRING","data":"r%d"}}`+"\n", i); err != nil {
			t.Fatal(err)
		}
	}
	stdin.Close()
	replies := json.NewDecoder(stdout)
	for i := range n {
		var r v3Reply
		if err := replies.Decode(&r); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if r.ErrorCode != 200 || r.Offset == nil || *r.Offset != int64(i) {
			t.Errorf("reply %d: %+v", i, r)
		}
	}
	if err := replies.Decode(new(v3Reply)); err != io.EOF {
		t.Errorf("after %d replies: %v, want EOF", n, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("curl: %v", err)
	}
}
