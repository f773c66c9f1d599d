package integration

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if goroutines outlive the tests: every client,
// controller, proxy and watch forwarder must be stopped by its owner. It
// removes the kbroker binary the process tests build once (brokers.go) and
// franz-go's suite binary (franzsuite_test.go).
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
	code := m.Run()
	RemoveKbroker()          // brokers.go: the kbroker binary built for the process tests
	removeFranzSuiteBinary() // franzsuite_test.go: franz-go's suite, built once
	if code == 0 {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			fmt.Fprintf(os.Stderr, "%d goroutines left behind (%d before the tests):\n%s\n", n-before, before,
				strings.TrimSpace(stacks))
			code = 1
		}
	}
	os.Exit(code)
}
