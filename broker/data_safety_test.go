package broker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newBrokerProps is New over properties p (listener on a free loopback port),
// without starting it.
func newBrokerProps(p map[string]string) (*Broker, error) {
	p["listeners"] = "PLAINTEXT://127.0.0.1:0"
	if _, ok := p["http.listeners"]; !ok {
		p["http.listeners"] = ""
	}
	if _, ok := p["schema.registry.listeners"]; !ok {
		p["schema.registry.listeners"] = ""
	}
	if _, ok := p["rest.proxy.listeners"]; !ok {
		p["rest.proxy.listeners"] = ""
	}
	cfg, _, err := config.ParseConfig(p)
	if err != nil {
		return nil, err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(testLogOutput(), nil))
	return New(cfg)
}

// TestLostMetadataKeepsData follows issue 10's reproduction in process: a
// broker whose metadata file is gone refuses to start and deletes nothing;
// a log its metadata does not know is kept as "-stray"; a log dir of
// another node is refused.
func TestLostMetadataKeepsData(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic("keep"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	b.Close()
	mp, found, err := storage.ReadMetaProperties(dir)
	if !found || err != nil || mp.NodeID != 0 || mp.ClusterID == "" {
		t.Fatalf("meta.properties: %+v %v %v", mp, found, err)
	}

	meta := filepath.Join(dir, controller.MetadataFile)
	if err := os.Rename(meta, meta+".moved"); err != nil {
		t.Fatal(err)
	}
	if nb, err := newBrokerProps(map[string]string{"log.dirs": dir}); err == nil {
		nb.Close()
		t.Fatal("started without its metadata file next to existing data")
	} else if !errors.Is(err, controller.ErrMetadataMissing) || !strings.Contains(err.Error(), "keep-0") {
		t.Fatalf("start without metadata: %v (want ErrMetadataMissing naming keep-0)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep-0")); err != nil {
		t.Fatalf("data gone: %v", err)
	}
	if _, err := os.Stat(meta); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("metadata file recreated: %v", err)
	}

	// Metadata back, but without the topic: the log is kept as stray.
	if err := os.Rename(meta+".moved", meta); err != nil {
		t.Fatal(err)
	}
	s, err := controller.OpenFileStore(dir, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTopic("keep"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	b = startTestBroker(t, dir, nil)
	var strays []string
	for _, d := range b.rm.Dirs() {
		strays = append(strays, d.StrayLogs()...)
	}
	if len(strays) != 1 || !strings.HasPrefix(strays[0], "keep-0.") {
		t.Fatalf("strays %v, want one keep-0.<id>-stray", strays)
	}
	if fi, err := os.Stat(filepath.Join(dir, strays[0])); err != nil || !fi.IsDir() {
		t.Fatalf("stray dir: %v", err)
	}
	b.Close()

	// Another node id, or another cluster: refused, naming both values.
	if nb, err := newBrokerProps(map[string]string{"log.dirs": dir, "node.id": "5"}); err == nil {
		nb.Close()
		t.Fatal("started on another node's log dir")
	} else if !errors.Is(err, storage.ErrMetaPropertiesMismatch) || !strings.Contains(err.Error(), "node.id=0") || !strings.Contains(err.Error(), "node.id=5") {
		t.Fatalf("other node id: %v", err)
	}
	other := t.TempDir()
	if _, err := storage.EnsureMetaProperties(other, 0, "another-cluster-id-x"); err != nil {
		t.Fatal(err)
	}
	if nb, err := newBrokerProps(map[string]string{"log.dirs": dir + "," + other}); err == nil {
		nb.Close()
		t.Fatal("started with a log dir of another cluster")
	} else if !errors.Is(err, storage.ErrMetaPropertiesMismatch) || !strings.Contains(err.Error(), "another-cluster-id-x") {
		t.Fatalf("other cluster id: %v", err)
	}
}

// TestDeleteTopicDelaysDeletion: DeleteTopics renames the partition
// directories "-delete" and removes them only after file.delete.delay.ms.
func TestDeleteTopicDelaysDeletion(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, map[string]string{"file.delete.delay.ms": "1500"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("gone"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	start := time.Now() // before the rename, so the delay is measured from no later than it
	resp, err := adm.DeleteTopics(ctx, "gone")
	if err != nil || resp["gone"].Err != nil {
		t.Fatalf("delete: %v %v", err, resp["gone"].Err)
	}
	deleted := func() []string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "gone-0") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	if got := deleted(); len(got) != 1 || !strings.HasSuffix(got[0], storage.DeleteDirSuffix) {
		t.Fatalf("after DeleteTopics: %v, want one gone-0.<id>-delete", got)
	}
	for len(deleted()) > 0 {
		if ctx.Err() != nil {
			t.Fatalf("still there: %v", deleted())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if el := time.Since(start); el < 1500*time.Millisecond {
		t.Fatalf("deleted after %v, before file.delete.delay.ms", el)
	}
}
