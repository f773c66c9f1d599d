package broker

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCredentialsNeverLogged runs successful and failed PLAIN and SCRAM
// logins, bootstrap and AlterUserScramCredentials with debug logging on,
// and checks that no password, salt, StoredKey or ServerKey appears in the
// log.
func TestCredentialsNeverLogged(t *testing.T) {
	p := saslOverrides()
	p["log.dirs"], p["http.listeners"], p["schema.registry.listeners"], p["rest.proxy.listeners"] = t.TempDir(), "", "", ""
	cfg, _, err := config.ParseConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ping := func(cl *kgo.Client) error { return cl.Ping(ctx) }
	if err := ping(saslClient(t, b, scram256("alice", "alice-secret"))); err != nil {
		t.Fatal(err)
	}
	_ = ping(saslClient(t, b, scram256("alice", "wrong-guess-1")))
	_ = ping(saslClient(t, b, plain.Auth{User: "alice", Pass: "wrong-guess-2"}.AsMechanism()))
	if err := ping(saslClient(t, b, plain.Auth{User: "alice", Pass: "alice-plain"}.AsMechanism())); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(newClient(t, b))
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"}}); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"alice-secret", "wrong-guess-1", "wrong-guess-2", "alice-plain", "bob-secret"}
	for user, byMech := range b.store.ScramCredentials() {
		for mech, c := range byMech {
			for _, k := range [][]byte{c.Salt, c.StoredKey, c.ServerKey} {
				secrets = append(secrets, base64.StdEncoding.EncodeToString(k), base64.RawURLEncoding.EncodeToString(k))
			}
			t.Logf("checked %s %s", user, mech)
		}
	}
	out := logs.String()
	if !strings.Contains(out, "closing connection during SASL authentication") {
		t.Fatalf("the failed logins were not logged at all:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the log holds a secret %q", s)
		}
	}
}
