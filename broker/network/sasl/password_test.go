package sasl

import (
	"sync"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
)

// scramStore is a metadata store's SCRAM credentials, by user and mechanism.
type scramStore struct {
	mu    sync.Mutex
	creds map[[2]string]Credential
}

func (s *scramStore) set(t *testing.T, mech, user, password string) {
	t.Helper()
	c, err := BootstrapCredential(config.ScramBootstrapUser{Mechanism: mech, Name: user, Password: password, Iterations: config.ScramMinIterations})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.creds == nil {
		s.creds = map[[2]string]Credential{}
	}
	s.creds[[2]string{user, mech}] = c
}

func (s *scramStore) remove(user, mech string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.creds, [2]string{user, mech})
}

func (s *scramStore) lookup(user, mech string) (Credential, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.creds[[2]string{user, mech}]
	return c, ok
}

// TestPasswords: PLAIN users of any listener and SCRAM credentials of
// either mechanism log in with their password and only with it; a changed
// or deleted SCRAM credential ends the remembered login.
func TestPasswords(t *testing.T) {
	store := &scramStore{}
	store.set(t, config.MechScramSHA256, "carol", "carol-256")
	store.set(t, config.MechScramSHA512, "dave", "dave-512")
	a := NewPasswords(map[string]map[string]string{
		"SASL_PLAINTEXT": {"alice": "alice-secret"},
		"SASL_SSL":       {"bob": "bob-secret", "alice": "alice-other"},
	}, store.lookup)
	for _, c := range []struct {
		user, password string
		ok             bool
	}{
		{"alice", "alice-secret", true},
		{"alice", "alice-other", true}, // another listener's
		{"bob", "bob-secret", true},
		{"carol", "carol-256", true},
		{"carol", "carol-256", true}, // remembered
		{"dave", "dave-512", true},
		{"alice", "bob-secret", false},
		{"carol", "carol-25", false},
		{"carol", "", false},
		{"", "carol-256", false},
		{"eve", "anything", false},
		{"dave", "carol-256", false},
	} {
		if got := a.Check(c.user, c.password); got != c.ok {
			t.Errorf("Check(%q, %q) = %v, want %v", c.user, c.password, got, c.ok)
		}
	}
	store.set(t, config.MechScramSHA256, "carol", "carol-new")
	if a.Check("carol", "carol-256") {
		t.Error("carol's old password accepted after her credential changed")
	}
	if !a.Check("carol", "carol-new") {
		t.Error("carol's new password refused")
	}
	store.remove("carol", config.MechScramSHA256)
	if a.Check("carol", "carol-new") {
		t.Error("carol logged in after her credential was deleted")
	}
	if NewPasswords(nil, nil).Check("alice", "alice-secret") {
		t.Error("a login accepted with no users at all")
	}
}
