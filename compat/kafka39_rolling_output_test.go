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

// kbrokerDirTrouble are what kbroker logs when a file of a log dir it
// opened was not as a clean shutdown leaves it (storage/'s warnings): state
// rebuilt from the log, a tail truncated, a checkpoint ignored.
var kbrokerDirTrouble = []string{"unreadable", "rebuilt", "truncated invalid", "ignoring checkpointed",
	"corrupt", "unsupported version", "interrupted compaction", "stray", "without a segment"}

// kafkaDirTrouble are what Kafka 3.9's log loader logs on a log dir that
// was not shut down cleanly or that it cannot read as it is.
var kafkaDirTrouble = []string{"Recovering unflushed segment", "Found a corrupted index file",
	"Found invalid messages", "CorruptRecordException", "Error while"}

// checkOpenedCleanly fails the test if output, that of who just opened a
// log dir the other kind wrote, holds any of trouble: the dir must carry
// over as it is, nothing rebuilt or dropped.
func checkOpenedCleanly(t *testing.T, who, output string, trouble []string) {
	t.Helper()
	for _, l := range strings.Split(output, "\n") {
		for _, bad := range trouble {
			if strings.Contains(l, bad) {
				t.Errorf("%s did not take over its log dir as it was (%q): %s", who, bad, l)
			}
		}
	}
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
