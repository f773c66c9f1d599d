package replica

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/vfs"
)

// TestFullDiskTakesClusterDirsOffline: a write that fails with ENOSPC takes
// a cluster-mode broker's log dir offline (as Kafka), and once every dir
// is offline DirsFailed is closed (the broker halts then). A single node
// keeps the dir online, so appends resume when space returns.
func TestFullDiskTakesClusterDirsOffline(t *testing.T) {
	for _, cluster := range []bool{true, false} {
		root := t.TempDir()
		props := map[string]string{"log.dirs": filepath.Join(root, "a") + "," + filepath.Join(root, "b"), "broker.id": "1"}
		if cluster {
			props["zookeeper.connect"] = "127.0.0.1:1/unused" // never dialled here
		}
		cfg, _, err := config.ParseConfig(props)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Logger, cfg.Now = slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now
		m := NewManager(cfg, make(chan struct{}))
		var inj vfs.Switchable
		if err := m.OpenDirs(vfs.WithErrors(vfs.Default, inj.Inject)); err != nil {
			t.Fatal(err)
		}
		batch, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
			[]records.Record{{Value: []byte("v")}})
		if err != nil {
			t.Fatal(err)
		}
		var logs []*storage.Log
		for i, d := range m.Dirs() {
			l, err := d.Create(storage.TopicPartition{Topic: "t", Partition: int32(i)}, storage.Config{})
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, l)
		}
		inj.Set(vfs.OnNth(vfs.OpWrite, ".log", 0, syscall.ENOSPC))
		failed := func() bool {
			select {
			case <-m.DirsFailed():
				return true
			default:
				return false
			}
		}
		for i, l := range logs {
			_, err := l.Append(batch, 0)
			if !errors.Is(err, syscall.ENOSPC) || errors.Is(err, storage.ErrLogDirOffline) != cluster {
				t.Fatalf("cluster %v: append to dir %d on a full disk: %v", cluster, i, err)
			}
			if (m.Dirs()[i].Offline() != nil) != cluster {
				t.Fatalf("cluster %v: dir %d offline: %v", cluster, i, m.Dirs()[i].Offline())
			}
			if want := cluster && i == len(logs)-1; failed() != want {
				t.Fatalf("cluster %v: DirsFailed closed %v after %d of %d dirs failed", cluster, failed(), i+1, len(logs))
			}
			// A dir failing while others remain is queued for the
			// broker's log dir event; the last one halts instead.
			select {
			case path := <-m.FailedDirs():
				if !cluster || i == len(logs)-1 || path != m.Dirs()[i].Path() {
					t.Fatalf("cluster %v: dir %d failed, FailedDirs yields %q", cluster, i, path)
				}
			default:
				if cluster && i < len(logs)-1 {
					t.Fatalf("cluster %v: dir %d failed, FailedDirs yields nothing", cluster, i)
				}
			}
		}
		inj.Set(nil)
		if _, err := logs[0].Append(batch, 0); (err == nil) == cluster {
			t.Fatalf("cluster %v: append once space returns: %v", cluster, err)
		}
		_ = m.CloseStorage()
	}
}
