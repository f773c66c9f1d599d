package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureMetaPropertiesWritesKafkaFormat(t *testing.T) {
	dir := t.TempDir()
	mp, err := EnsureMetaProperties(dir, 7, "MkU3OEVBNTcwNTJENDM2Qk")
	if err != nil {
		t.Fatal(err)
	}
	if mp.Version != 1 || mp.NodeID != 7 || mp.ClusterID != "MkU3OEVBNTcwNTJENDM2Qk" || len(mp.DirectoryID) != 22 {
		t.Fatalf("meta properties %+v", mp)
	}
	data, err := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	want := []string{"cluster.id=MkU3OEVBNTcwNTJENDM2Qk", "directory.id=" + mp.DirectoryID, "node.id=7", "version=1"}
	if len(lines) != 6 || lines[0] != "#" || !strings.HasPrefix(lines[1], "#") || strings.Join(lines[2:], ",") != strings.Join(want, ",") {
		t.Fatalf("file:\n%s", data)
	}
	if _, err := os.Stat(filepath.Join(dir, MetaPropertiesFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file left: %v", err)
	}

	// Same node and cluster: accepted, the file and its directory.id kept.
	again, err := EnsureMetaProperties(dir, 7, "MkU3OEVBNTcwNTJENDM2Qk")
	if err != nil || again != mp {
		t.Fatalf("second ensure: %+v %v", again, err)
	}
	if data2, _ := os.ReadFile(filepath.Join(dir, MetaPropertiesFile)); string(data2) != string(data) {
		t.Fatal("file rewritten")
	}
}

func TestEnsureMetaPropertiesRefusesMismatch(t *testing.T) {
	dir := t.TempDir()
	if _, err := EnsureMetaProperties(dir, 1, "clusterA"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		node    int32
		cluster string
		names   []string
	}{
		{2, "clusterA", []string{"node.id=1", "node.id=2"}},
		{1, "clusterB", []string{"cluster.id=clusterA", "cluster.id=clusterB"}},
	} {
		_, err := EnsureMetaProperties(dir, tc.node, tc.cluster)
		if !errors.Is(err, ErrMetaPropertiesMismatch) {
			t.Fatalf("node %d cluster %s: %v, want ErrMetaPropertiesMismatch", tc.node, tc.cluster, err)
		}
		for _, n := range tc.names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("error %q does not name %q", err, n)
			}
		}
	}
}

func TestReadMetaPropertiesKafkaFiles(t *testing.T) {
	for name, tc := range map[string]struct {
		file string
		want MetaProperties
		bad  bool
	}{
		"kafka 3.9": {file: "#\n#Tue Mar 12 10:00:00 UTC 2024\nnode.id=1\ndirectory.id=J8aAPcfLQt2bqs1JT_rMgQ\nversion=1\ncluster.id=4L6g3nShT-eMCtK--X86sw\n",
			want: MetaProperties{Version: 1, NodeID: 1, ClusterID: "4L6g3nShT-eMCtK--X86sw", DirectoryID: "J8aAPcfLQt2bqs1JT_rMgQ"}},
		"zookeeper mode v0": {file: "#\r\nversion=0\r\nbroker.id = 3\r\ncluster.id:abc\r\n",
			want: MetaProperties{Version: 0, NodeID: 3, ClusterID: "abc"}},
		"v1 without cluster": {file: "version=1\nnode.id=1\n", bad: true},
		"bad node id":        {file: "version=1\nnode.id=x\ncluster.id=a\n", bad: true},
		"future version":     {file: "version=2\nnode.id=1\ncluster.id=a\n", bad: true},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(tc.file), 0o644)
		got, found, err := ReadMetaProperties(dir)
		if tc.bad {
			if err == nil || !found {
				t.Errorf("%s: %+v %v %v, want an error", name, got, found, err)
			}
			continue
		}
		if err != nil || !found || got != tc.want {
			t.Errorf("%s: %+v %v %v, want %+v", name, got, found, err, tc.want)
		}
		// EnsureMetaProperties accepts the file for its own node and cluster and refuses a corrupt one.
		if _, err := EnsureMetaProperties(dir, tc.want.NodeID, tc.want.ClusterID); err != nil {
			t.Errorf("%s: ensure: %v", name, err)
		}
	}
	if _, found, err := ReadMetaProperties(t.TempDir()); found || err != nil {
		t.Fatalf("missing file: %v %v", found, err)
	}
}

func TestNewDirectoryID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := newDirectoryID()
		if len(id) != 22 || id[0] == '-' || seen[id] {
			t.Fatalf("directory id %q", id)
		}
		seen[id] = true
	}
}

// TestMetaPropertiesVersion0: a ZooKeeper-mode broker writes version 0
// (broker.id, cluster.id), reads Kafka 3.9's version 0 file unchanged, and
// rewrites a version 1 file of its own node and cluster as version 0.
func TestMetaPropertiesVersion0(t *testing.T) {
	dir := t.TempDir()
	mp, err := EnsureMetaPropertiesVersion(dir, 3, "c1", 0, nil)
	if err != nil || mp.Version != 0 || mp.NodeID != 3 || mp.DirectoryID != "" {
		t.Fatalf("new v0: %+v %v", mp, err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	if s := string(data); !strings.Contains(s, "\nbroker.id=3\n") || !strings.Contains(s, "\nversion=0\n") || strings.Contains(s, "node.id") {
		t.Fatalf("v0 file:\n%s", s)
	}

	kafka := t.TempDir()
	fixture, err := os.ReadFile("testdata/kafka39/meta.properties")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(kafka, MetaPropertiesFile), fixture, 0o644)
	got, _, _ := ReadMetaProperties(kafka)
	if _, err := EnsureMetaPropertiesVersion(kafka, got.NodeID, got.ClusterID, 0, nil); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(filepath.Join(kafka, MetaPropertiesFile)); string(after) != string(fixture) {
		t.Fatalf("Kafka's file rewritten:\n%s", after)
	}

	v1 := t.TempDir()
	if _, err := EnsureMetaProperties(v1, 3, "c1"); err != nil {
		t.Fatal(err)
	}
	var logged []string
	mp, err = EnsureMetaPropertiesVersion(v1, 3, "c1", 0, func(msg string, _ ...any) { logged = append(logged, msg) })
	if err != nil || mp.Version != 0 || len(logged) != 1 {
		t.Fatalf("v1 to v0: %+v %v, logged %q", mp, err, logged)
	}
	if again, _, err := ReadMetaProperties(v1); err != nil || again.Version != 0 || again.NodeID != 3 || again.ClusterID != "c1" {
		t.Fatalf("rewritten file reads %+v %v", again, err)
	}
	// Another node's v1 file is refused, not rewritten.
	other := t.TempDir()
	EnsureMetaProperties(other, 4, "c1")
	if _, err := EnsureMetaPropertiesVersion(other, 3, "c1", 0, nil); !errors.Is(err, ErrMetaPropertiesMismatch) {
		t.Fatalf("another node's dir: %v", err)
	}
	if mp, _, _ := ReadMetaProperties(other); mp.Version != 1 {
		t.Fatalf("another node's file rewritten: %+v", mp)
	}
}
