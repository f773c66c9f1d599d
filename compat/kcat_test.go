package compat

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kcatTimeout bounds one kcat invocation.
const kcatTimeout = 60 * time.Second

// kcatPath returns kcat's path, failing the test when it is not installed:
// scripts/test.sh installs it, and a compat run without it is incomplete.
func kcatPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed (%v): run scripts/test.sh, which installs it (apt-get install -y kcat)", err)
	}
	return p
}

// runKcat runs kcat with args and stdin, returning stdout; it fails the test,
// printing kcat's stderr, if kcat exits non-zero or times out.
func runKcat(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (ctx: %v)\n--- kcat stderr ---\n%s\n--- kcat stdout ---\n%.2000s",
			strings.Join(args, " "), err, ctx.Err(), stderr.String(), stdout.String())
	}
	if stderr.Len() > 0 {
		t.Logf("kcat %s stderr:\n%s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String()
}

// TestKcat drives kcat's metadata, produce, consume and query modes.
func TestKcat(t *testing.T) {
	kcatPath(t)
	b := startBroker(t, t.TempDir())
	kcatSuite(t, b.Addr())
	b.Alive()
}

// kcatSuite is TestKcat against any broker at addr.
func kcatSuite(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	const partitions, n = 2, 200
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		topic := "kcat-" + codec
		createTopic(t, adm, topic, partitions, nil)
	}

	md := runKcat(t, "", "-b", addr, "-L")
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if want := fmt.Sprintf("topic \"kcat-%s\" with %d partitions", codec, partitions); !strings.Contains(md, want) {
			t.Fatalf("kcat -L output lacks %q:\n%s", want, md)
		}
	}
	if want := "at " + addr; !strings.Contains(md, want) {
		t.Fatalf("kcat -L output lacks the broker %q:\n%s", want, md)
	}

	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			var in strings.Builder
			for i := 0; i < n; i++ {
				fmt.Fprintf(&in, "k%d:v%d-%s\n", i, i, strings.Repeat(codec, 1+i%20))
			}
			runKcat(t, in.String(), "-P", "-b", addr, "-t", topic, "-K:",
				"-H", "src=kcat", "-H", "codec="+codec, "-z", codec, "-X", "acks=all")

			out := runKcat(t, "", "-C", "-b", addr, "-t", topic, "-o", "beginning", "-e", "-q",
				"-f", "%p|%o|%k|%s|%h\n")
			checkKcatOutput(t, out, codec, n)

			ends, err := adm.ListEndOffsets(testCtx(t), topic)
			if err != nil {
				t.Fatalf("ListEndOffsets: %v", err)
			}
			lo, _ := ends.Lookup(topic, 0)
			q := runKcat(t, "", "-Q", "-b", addr, "-t", topic+":0:-1")
			if want := fmt.Sprintf("%s [0] offset %d", topic, lo.Offset); !strings.Contains(q, want) {
				t.Fatalf("kcat -Q output %q lacks %q", q, want)
			}
		})
	}
}

// checkKcatOutput parses lines "partition|offset|key|value|headers" and
// checks that all n lines produced are there once, with their headers, at
// dense offsets and in production order within each partition.
func checkKcatOutput(t *testing.T, out, codec string, n int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("kcat consumed %d lines, want %d:\n%.2000s", len(lines), n, out)
	}
	seen := make(map[int]bool, n)
	lastSeq := map[string]int{}
	nextOffset := map[string]int64{}
	for _, line := range lines {
		f := strings.SplitN(line, "|", 5)
		if len(f) != 5 {
			t.Fatalf("unparseable kcat line %q", line)
		}
		part, offStr, key, value, headers := f[0], f[1], f[2], f[3], f[4]
		off, err := strconv.ParseInt(offStr, 10, 64)
		if err != nil || off != nextOffset[part] {
			t.Fatalf("partition %s: offset %q, want %d (dense from 0)", part, offStr, nextOffset[part])
		}
		nextOffset[part]++
		i, err := strconv.Atoi(strings.TrimPrefix(key, "k"))
		if err != nil || i < 0 || i >= n || seen[i] {
			t.Fatalf("unexpected or repeated key %q in line %q", key, line)
		}
		seen[i] = true
		if want := fmt.Sprintf("v%d-%s", i, strings.Repeat(codec, 1+i%20)); value != want {
			t.Fatalf("key %s: value %q, want %q", key, value, want)
		}
		if want := "src=kcat,codec=" + codec; headers != want {
			t.Fatalf("key %s: headers %q, want %q", key, headers, want)
		}
		if last, ok := lastSeq[part]; ok && i <= last {
			t.Fatalf("partition %s: k%d after k%d, production order lost", part, i, last)
		}
		lastSeq[part] = i
	}
}
