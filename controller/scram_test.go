package controller

import (
	"bytes"
	"github.com/kbroker/kbroker/storage"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileStoreScramCredentialsPersist(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir, "", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	alice := ScramCredential{Salt: []byte("salt"), StoredKey: []byte("stored"), ServerKey: []byte("server"), Iterations: 4096}
	bob := ScramCredential{Salt: []byte("s2"), StoredKey: []byte("k2"), ServerKey: []byte("v2"), Iterations: 8192}
	if err := s.AlterScramCredentials([]ScramChange{
		{User: "alice", Mechanism: "SCRAM-SHA-256", Credential: alice},
		{User: "alice", Mechanism: "SCRAM-SHA-512", Credential: alice},
		{User: "bob", Mechanism: "SCRAM-SHA-256", Credential: bob},
	}); err != nil {
		t.Fatal(err)
	}
	// A failing change (deleting what does not exist) changes nothing.
	if err := s.AlterScramCredentials([]ScramChange{
		{User: "bob", Mechanism: "SCRAM-SHA-256", Delete: true},
		{User: "carol", Mechanism: "SCRAM-SHA-256", Delete: true},
	}); err == nil {
		t.Fatal("deleting a missing credential succeeded")
	}
	if _, ok := s.ScramCredential("bob", "SCRAM-SHA-256"); !ok {
		t.Fatal("a failed alter deleted bob")
	}
	if err := s.AlterScramCredentials([]ScramChange{{User: "alice", Mechanism: "SCRAM-SHA-512", Delete: true}}); err != nil {
		t.Fatal(err)
	}

	s2, err := OpenFileStore(dir, "", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s2.ScramCredential("alice", "SCRAM-SHA-256")
	if !ok || !bytes.Equal(got.StoredKey, alice.StoredKey) || !bytes.Equal(got.Salt, alice.Salt) || got.Iterations != 4096 {
		t.Fatalf("alice after reopen: %+v, %v", got, ok)
	}
	if _, ok := s2.ScramCredential("alice", "SCRAM-SHA-512"); ok {
		t.Fatal("deleted credential came back")
	}
	all := s2.ScramCredentials()
	if users := ScramUsers(all); strings.Join(users, ",") != "alice,bob" {
		t.Fatalf("users %v", users)
	}
	all["bob"]["SCRAM-SHA-256"] = ScramCredential{}
	if c, _ := s2.ScramCredential("bob", "SCRAM-SHA-256"); c.Iterations != 8192 {
		t.Fatal("ScramCredentials returned the store's own map")
	}
	raw, err := os.ReadFile(filepath.Join(dir, MetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"scram_credentials"`) {
		t.Fatalf("credentials not in the metadata file:\n%s", raw)
	}
}
