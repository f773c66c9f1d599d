package controller

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFileStorePersists(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir, "")
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

	s2, err := OpenFileStore(dir, "ignored")
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
	if _, err := OpenFileStore(dir, ""); err == nil {
		t.Fatal("corrupt metadata file accepted")
	}
}
