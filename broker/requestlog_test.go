package broker

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// syncBuffer is a bytes.Buffer safe for the broker's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// startJSONLogBroker is startTestBroker with its log, in log.format=json at
// the given log.level, kept in the returned buffer.
func startJSONLogBroker(t *testing.T, level string) (*Broker, *syncBuffer) {
	t.Helper()
	cfg, _, err := config.ParseConfig(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir(),
		"http.listeners": "", "schema.registry.listeners": "", "rest.proxy.listeners": "", "log.level": level, "log.format": "json"})
	if err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	cfg.Logger, cfg.Logging.LevelVar = cfg.Logging.NewLogger(out)
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, out
}

// requestLines returns the request log lines of out, decoded.
func requestLines(t *testing.T, out string) []map[string]any {
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	return lines
}

func TestRequestLogAtDebug(t *testing.T) {
	b, out := startJSONLogBroker(t, "DEBUG")
	ctx := testCtx(t)
	cl := newClient(t, b, kgo.ClientID("reqlog-client"))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "reqlog"); err != nil {
		t.Fatal(err)
	}
	// A second create fails with TOPIC_ALREADY_EXISTS: the line names it.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "reqlog"); err == nil {
		t.Fatal("second create succeeded")
	}
	var create []map[string]any
	for _, l := range requestLines(t, out.String()) {
		if l["client_id"] != "reqlog-client" {
			t.Errorf("line without the client id: %v", l)
		}
		if c, _ := l["client"].(string); !strings.HasPrefix(c, "127.0.0.1:") {
			t.Errorf("line without the client address: %v", l)
		}
		if l["api"] == "CreateTopics" {
			create = append(create, l)
		}
	}
	if len(create) != 2 {
		t.Fatalf("%d CreateTopics lines, want 2, in:\n%s", len(create), out.String())
	}
	for _, k := range []string{"api_key", "api_version", "correlation_id", "took", "listener"} {
		if _, ok := create[0][k]; !ok {
			t.Errorf("request line lacks %s: %v", k, create[0])
		}
	}
	if _, ok := create[0]["errors"]; ok {
		t.Errorf("first create logged errors: %v", create[0])
	}
	if create[1]["errors"] != "TOPIC_ALREADY_EXISTS" {
		t.Errorf("second create: errors = %v, want TOPIC_ALREADY_EXISTS", create[1]["errors"])
	}
}

func TestNoRequestLogAtInfo(t *testing.T) {
	b, out := startJSONLogBroker(t, "info")
	cl := newClient(t, b)
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if lines := requestLines(t, out.String()); len(lines) != 0 {
		t.Fatalf("request lines at INFO: %v", lines)
	}
}
