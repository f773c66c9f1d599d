package controller

import (
	"testing"

	"github.com/kbroker/kbroker/storage"
)

// TestClusterSettingsPersist checks that group configs and finalized
// features survive reopening the store.
func TestClusterSettingsPersist(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenFileStore(dir, "", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, set := s.FinalizedFeatures(); set {
		t.Fatal("a new store has finalized features")
	}
	if err := s.UpdateGroupConfigs("g", map[string]string{"consumer.session.timeout.ms": "50000"}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateGroupConfigs("gone", map[string]string{"share.isolation.level": "read_committed"}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateGroupConfigs("gone", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateFinalizedFeatures(map[string]int16{"transaction.version": 1, "group.version": 0}); err != nil {
		t.Fatal(err)
	}
	s, err = OpenFileStore(dir, "", storage.DataInLogDir)
	if err != nil {
		t.Fatal(err)
	}
	gc := s.GroupConfigs()
	if len(gc) != 1 || gc["g"]["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("group configs after reopen: %v", gc)
	}
	if g, err := s.GroupConfig("g"); err != nil || len(g) != 1 || g["consumer.session.timeout.ms"] != "50000" {
		t.Fatalf("GroupConfig(g) after reopen: %v %v", g, err)
	}
	if g, err := s.GroupConfig("gone"); err != nil || len(g) != 0 {
		t.Fatalf("GroupConfig(gone) after reopen: %v %v", g, err)
	}
	levels, epoch, set := s.FinalizedFeatures()
	if !set || epoch != 1 || len(levels) != 1 || levels["transaction.version"] != 1 {
		t.Fatalf("features after reopen: %v epoch %d set %v", levels, epoch, set)
	}
}
