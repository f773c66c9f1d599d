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
