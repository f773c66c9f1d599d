package franzsuite

import (
	"strings"
	"testing"
)

// TestSummarizeDropsClientLogs: a test's output keeps its own messages but
// not the lines of franz-go's test logger.
func TestSummarizeDropsClientLogs(t *testing.T) {
	r := Summarize([]Event{
		{Action: "run", Test: "TestA"},
		{Action: "output", Test: "TestA", Output: "[02:28:45.453 57][INFO] beginning transaction; transactional_id: x\n"},
		{Action: "output", Test: "TestA", Output: "    share_test.go:652: timed out: level 1 accepted 10\n"},
		{Action: "output", Test: "TestA", Output: "--- FAIL: TestA (240.00s)\n"},
		{Action: "fail", Test: "TestA"},
	})
	out := r.Output["TestA"].String()
	if strings.Contains(out, "beginning transaction") || !strings.Contains(out, "share_test.go:652: timed out") || !strings.Contains(out, "--- FAIL") {
		t.Fatalf("output kept:\n%s", out)
	}
	if len(r.Failed) != 1 || r.Failed[0] != "TestA" {
		t.Fatalf("failed: %v", r.Failed)
	}
}
