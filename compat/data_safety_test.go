package compat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLostMetadataRefusesToStart is issue 10's reproduction with the real
// binary: produce, stop with SIGTERM, move kbroker-metadata.json away, start
// again. The broker must exit non-zero with a message that names the missing
// file and what to do, and leave the partition directories and their records
// as they were; with the file back it serves the records again.
func TestLostMetadataRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	const topic = "precious"
	createTopic(t, newAdmin(t, b.Addr()), topic, 2, nil)
	rs := keyedRecords(topic, 0, 50)
	produceSync(t, newKgo(t, b.Addr()), rs)
	b.Stop()

	listing := func() map[string]int64 {
		sizes := map[string]int64{}
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.Contains(path, topic) {
				return err
			}
			if fi, err := d.Info(); err == nil {
				sizes[strings.TrimPrefix(path, dir)] = fi.Size()
			}
			return nil
		})
		return sizes
	}
	before := listing()
	if len(before) == 0 {
		t.Fatalf("no files of %s in %s", topic, dir)
	}

	meta := filepath.Join(dir, "kbroker-metadata.json")
	if err := os.Rename(meta, meta+".away"); err != nil {
		t.Fatal(err)
	}
	code, out := runBrokerToExit(t, dir)
	if code == 0 {
		t.Fatalf("kbroker started without its metadata file next to existing data\n%s", out)
	}
	for _, want := range []string{"kbroker-metadata.json", "does not exist", topic + "-0", "restore"} {
		if !strings.Contains(out, want) {
			t.Errorf("exit message does not mention %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(meta); err == nil {
		t.Errorf("an empty metadata file was created")
	}
	after := listing()
	for f, size := range before {
		if after[f] != size {
			t.Errorf("%s: %d bytes before, %d after the refused start", f, size, after[f])
		}
	}
	if len(after) != len(before) {
		t.Errorf("files before %v, after %v", before, after)
	}

	if err := os.Rename(meta+".away", meta); err != nil {
		t.Fatal(err)
	}
	b.Restart()
	compareByPartition(t, rs, consumeN(t, b.Addr(), topic, 2, len(rs)))
	b.Stop()
}
