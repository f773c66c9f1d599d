package compat

// What a failed rolling migration leaves to look at: every incarnation of
// every broker id (Kafka or kbroker) writes its whole output to the test's
// artifact dir (kept with `go test -artifacts`), and the test log gets
// each Kafka incarnation's WARN and ERROR lines, which the harness's
// last-4000-bytes tail of a stopped Kafka would not show.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kbroker/kbroker/integration"
)

// rollingIncarnations numbers the output files of one test run; a broker
// id has one incarnation per start.
var rollingIncarnations struct {
	mu sync.Mutex
	n  int
}

// startRollingKafka starts Kafka 3.9 as broker b.id on b's log dir with
// rollingKafkaProps and keeps its output for a failure.
func startRollingKafka(t *testing.T, z *integration.ZooKeeper, chroot string, b *rollingBroker) *kafka39Proc {
	t.Helper()
	kf := startKafka39With(t, z, chroot, b.id, b.dir, rollingKafkaProps)
	name := fmt.Sprintf("kafka-%d", b.id)
	keepRollingOutput(t, name, kf.out.String)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s WARN and ERROR lines ---\n%s", name, tail(warnLines(kf.out.String()), 8000))
		}
	})
	return kf
}

// keepRollingOutput writes what output returns, at test cleanup of a
// failed test, to <artifact dir>/<n>-<name>.log. Cleanups run last
// registered first, so this one, registered after the process started,
// runs before the process's own cleanup stops it; the output is taken
// then, which for a process stopped during the test is all of it.
func keepRollingOutput(t *testing.T, name string, output func() string) {
	t.Helper()
	rollingIncarnations.mu.Lock()
	rollingIncarnations.n++
	n := rollingIncarnations.n
	rollingIncarnations.mu.Unlock()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		path := filepath.Join(t.ArtifactDir(), fmt.Sprintf("%02d-%s.log", n, name))
		if err := os.WriteFile(path, []byte(output()), 0o644); err != nil {
			t.Logf("keeping %s's output: %v", name, err)
			return
		}
		t.Logf("%s's output: %s", name, path)
	})
}

// warnLines is the lines of a Kafka log at WARN or ERROR.
func warnLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, " WARN ") || strings.Contains(l, " ERROR ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
