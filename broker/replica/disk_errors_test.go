package replica

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
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

// TestStopDirReplicas: a cluster-mode broker leads t-0 and t-1, one in
// each of its two log dirs; a failed write takes t-0's dir offline. The
// dir is queued on FailedDirs, and StopDirReplicas stops leading t-0 only;
// t-0 reports itself offline (LeaderAndIsr then answers
// KAFKA_STORAGE_ERROR for it), t-1 does not and still leads.
func TestStopDirReplicas(t *testing.T) {
	root := t.TempDir()
	cfg, _, err := config.ParseConfig(map[string]string{"broker.id": "1", "zookeeper.connect": "127.0.0.1:1/unused",
		"log.dirs": filepath.Join(root, "a") + "," + filepath.Join(root, "b")})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger, cfg.Now = slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now
	closing := make(chan struct{})
	m := NewManager(cfg, closing)
	var inj vfs.Switchable
	if err := m.OpenDirs(vfs.WithErrors(vfs.Default, inj.Inject)); err != nil {
		t.Fatal(err)
	}
	defer func() { close(closing); m.Stop(); _ = m.CloseStorage() }()
	if err := os.MkdirAll(filepath.Join(root, "meta"), 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := controller.OpenFileStore(filepath.Join(root, "meta"), "cluster", nil)
	if err != nil {
		t.Fatal(err)
	}
	top := controller.Topic{Name: "t", ID: controller.NewTopicID(), Partitions: 2, ReplicationFactor: 1}
	if err := store.CreateTopic(top); err != nil {
		t.Fatal(err)
	}
	if err := m.Load(store); err != nil {
		t.Fatal(err)
	}
	c := newTestCluster(t, 0, fastRC(10*time.Second), false, 1)
	rc := c.rc
	rc.BrokerEpoch = func() int64 { return 1 }
	m.SetReplicationConfig(rc)
	m.SetCluster(1, c, c.addr)
	for p := int32(0); p < 2; p++ {
		if err := m.MakeLeader("t", p, top.ID, PartitionState{Leader: 1, ControllerEpoch: 1, ISR: []int32{1}, Replicas: []int32{1}}); err != nil {
			t.Fatal(err)
		}
	}
	p0, p1 := m.PartitionOf("t", 0), m.PartitionOf("t", 1)
	if p0.Dir == p1.Dir {
		t.Fatalf("both partitions in %s", p0.Dir.Path())
	}
	failed := p0.Dir.Path()
	inj.Set(func(op vfs.Op) error {
		if op.Kind == vfs.OpWrite && strings.HasPrefix(op.Path, failed+"/") {
			return syscall.EIO
		}
		return nil
	})
	b, _ := batch(t, "v")
	if _, err := p0.Log.Append(b, 0); err == nil {
		t.Fatal("append to the failing dir succeeded")
	}
	select {
	case path := <-m.FailedDirs():
		if path != failed {
			t.Fatalf("FailedDirs yields %q, want %q", path, failed)
		}
	default:
		t.Fatal("FailedDirs yields nothing after one of two dirs failed")
	}
	if n := m.StopDirReplicas(failed); n != 1 {
		t.Fatalf("StopDirReplicas stopped %d partitions, want 1", n)
	}
	if p0.IsLeader() || p0.Offline() == nil {
		t.Fatalf("t-0: leader %v, offline %v; want stopped and offline", p0.IsLeader(), p0.Offline())
	}
	if !p1.IsLeader() || p1.Offline() != nil {
		t.Fatalf("t-1: leader %v, offline %v; want leading and online", p1.IsLeader(), p1.Offline())
	}
}
