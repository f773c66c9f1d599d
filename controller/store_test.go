package controller

import (
	"errors"
	"github.com/kbroker/kbroker/storage"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileStorePersists(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir, "", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	cid := s.ClusterID()
	if len(cid) != 22 {
		t.Fatalf("cluster id %q is not 22 characters of base64", cid)
	}
	id := NewTopicID()
	if err := s.CreateTopic(Topic{Name: "a", ID: id, Partitions: 3, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "1000"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTopic(Topic{Name: "a"}); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("duplicate create: %v", err)
	}
	if err := s.CreateTopic(Topic{Name: "b", ID: NewTopicID(), Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic("b"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic("b"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("second delete: %v", err)
	}
	first, err := s.NextProducerIDBlock(1000)
	if err != nil || first != 0 {
		t.Fatalf("first block %d, %v", first, err)
	}

	s2, err := OpenFileStore(dir, "ignored", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	if s2.ClusterID() != cid {
		t.Fatalf("cluster id changed across reopen: %q -> %q", cid, s2.ClusterID())
	}
	got, ok := s2.Topic("a")
	if !ok || got.ID != id || got.Partitions != 3 || got.Configs["retention.ms"] != "1000" {
		t.Fatalf("topic after reopen: %+v", got)
	}
	if _, ok := s2.Topic("b"); ok {
		t.Fatal("deleted topic came back")
	}
	next, err := s2.NextProducerIDBlock(1000)
	if err != nil || next != 1000 {
		t.Fatalf("producer ids reused across reopen: next block %d, %v", next, err)
	}
}

func TestFileStoreCorruptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MetadataFile), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileStore(dir, "", storage.DataInLogDir); err == nil {
		t.Fatal("corrupt metadata file accepted")
	}
}

func TestFileStoreMode0600(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir, "", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, MetadataFile)
	mode := func() os.FileMode {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Mode().Perm()
	}
	if m := mode(); m != 0o600 {
		t.Fatalf("new metadata file mode %o, want 600", m)
	}
	// A stale world-readable temp file does not leak its mode into the file.
	os.WriteFile(path+".tmp", []byte("x"), 0o644)
	os.Chmod(path+".tmp", 0o644)
	if err := s.CreateTopic(Topic{Name: "a", ID: NewTopicID(), Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if m := mode(); m != 0o600 {
		t.Fatalf("rewritten metadata file mode %o, want 600", m)
	}
	// A file written by an older version (0644) is restricted on open.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFileStore(dir, "", storage.DataInLogDir); err != nil {
		t.Fatal(err)
	}
	if m := mode(); m != 0o600 {
		t.Fatalf("existing metadata file mode %o after open, want 600", m)
	}
}

func TestFileStoreRefusesMissingMetadataNextToData(t *testing.T) {
	for name, tc := range map[string]struct {
		setup func(first, second string)
		want  []string // substrings of the error
	}{
		"partition dirs in the first log dir": {
			setup: func(first, _ string) { os.Mkdir(filepath.Join(first, "orders-0"), 0o755) },
			want:  []string{"orders-0", "restore"},
		},
		"meta.properties only": {
			setup: func(first, _ string) { os.WriteFile(filepath.Join(first, "meta.properties"), nil, 0o644) },
			want:  []string{"meta.properties"},
		},
		"partition dirs in another log dir": {
			setup: func(_, second string) { os.Mkdir(filepath.Join(second, "orders-3"), 0o755) },
			want:  []string{"orders-3"},
		},
		"log.dirs reordered": {
			setup: func(_, second string) { os.WriteFile(filepath.Join(second, MetadataFile), []byte("{}"), 0o600) },
			want:  []string{"order of log.dirs"},
		},
	} {
		first, second := t.TempDir(), t.TempDir()
		tc.setup(first, second)
		_, err := OpenFileStore(first, "", storage.DataInLogDir, second)
		if !errors.Is(err, ErrMetadataMissing) {
			t.Errorf("%s: %v, want ErrMetadataMissing", name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", name, err, w)
			}
		}
		if _, err := os.Stat(filepath.Join(first, MetadataFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: metadata file created: %v", name, err)
		}
	}
	// Files that are not data (lock, checkpoints, clean shutdown marker) do not count.
	first := t.TempDir()
	for _, n := range []string{".lock", ".kafka_cleanshutdown", "recovery-point-offset-checkpoint"} {
		os.WriteFile(filepath.Join(first, n), nil, 0o644)
	}
	if _, err := OpenFileStore(first, "", storage.DataInLogDir, t.TempDir()); err != nil {
		t.Fatalf("fresh log dirs: %v", err)
	}
}

// Client quotas survive a reopen; removing an entity's last quota removes
// the entity.
func TestFileStoreClientQuotas(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AlterClientQuotas([]QuotaChange{
		{Entity: "users/alice", Key: "producer_byte_rate", Value: 1024},
		{Entity: "users/<default>/clients/app", Key: "request_percentage", Value: 12.5},
		{Entity: "clients/x", Key: "consumer_byte_rate", Value: 1},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.AlterClientQuotas([]QuotaChange{{Entity: "clients/x", Key: "consumer_byte_rate", Remove: true}}); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenFileStore(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	q := s2.ClientQuotas()
	if len(q) != 2 || q["users/alice"]["producer_byte_rate"] != 1024 || q["users/<default>/clients/app"]["request_percentage"] != 12.5 {
		t.Fatalf("after reopen: %v", q)
	}
	if err := s2.AlterClientQuotas([]QuotaChange{{Key: "producer_byte_rate", Value: 1}}); err == nil {
		t.Fatal("a change without an entity was accepted")
	}
}
