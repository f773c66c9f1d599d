package broker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage/vfs"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startFaultyBroker runs a broker whose log dirs are on the operating
// system's files through an error-injecting wrapper that inj controls.
func startFaultyBroker(t *testing.T, dir string, inj *vfs.Switchable, overrides map[string]string) *Broker {
	t.Helper()
	p := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir, "auto.create.topics.enable": "false", "http.listeners": "", "schema.registry.listeners": "", "rest.proxy.listeners": ""}
	for k, v := range overrides {
		p[k] = v
	}
	cfg, _, err := config.ParseConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(testLogOutput(), nil))
	b, err := newBroker(cfg, vfs.WithErrors(vfs.Default, inj.Inject))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// rawProduce sends one batch with value to partition 0 of topic straight
// to the broker (no client retries) and returns the partition's answer.
func rawProduce(t *testing.T, cl *kgo.Client, topic, value string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	ms := time.Now().UnixMilli()
	batch, err := records.Build(records.BatchSpec{FirstTimestamp: ms, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]records.Record{{Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	// Produce v13 names the topic by id.
	tds, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, TopicID: tds[topic].ID, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}}}
	resp, err := req.RequestWith(context.Background(), cl.Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// partitionDirs lists the entries of dir that belong to topic.
func partitionDirs(t *testing.T, dir, topic string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), topic+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestOfflineLogDir: a failed fsync takes the log dir offline. From then on
// no append reaches it (KAFKA_STORAGE_ERROR), the HW covers only what was
// acknowledged, DescribeLogDirs reports the dir with KAFKA_STORAGE_ERROR,
// and Metadata shows its partitions without a leader. After a restart
// everything acknowledged is there.
func TestOfflineLogDir(t *testing.T) {
	dir := t.TempDir()
	var inj vfs.Switchable
	b := startFaultyBroker(t, dir, &inj, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"flush.messages": kadm.StringPtr("1")}, "off"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "other"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if r := rawProduce(t, cl, "off", "acked"); r.ErrorCode != 0 || r.BaseOffset != int64(i) {
			t.Fatalf("produce %d: %v at %d", i, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
		}
	}

	inj.Set(vfs.OnNth(vfs.OpSync, "off-0", 0, syscall.EIO))
	if r := rawProduce(t, cl, "off", "lost"); r.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("produce with a failing fsync: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(r.ErrorCode))
	}
	inj.Set(nil) // the disk "works" again: the dir stays offline until restart
	for _, topic := range []string{"off", "other"} {
		if r := rawProduce(t, cl, topic, "refused"); r.ErrorCode != kerr.KafkaStorageError.Code {
			t.Fatalf("produce to %s in an offline dir: %v, want KAFKA_STORAGE_ERROR", topic, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if hw := b.rm.PartitionOf("off", 0).HighWatermark(); hw != 3 {
		t.Fatalf("HW %d with 3 records acknowledged", hw)
	}

	dreq := kmsg.NewPtrDescribeLogDirsRequest()
	dresp, err := dreq.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(dresp.Dirs) != 1 || dresp.Dirs[0].ErrorCode != kerr.KafkaStorageError.Code || len(dresp.Dirs[0].Topics) != 0 {
		t.Fatalf("DescribeLogDirs: %+v, want the dir with KAFKA_STORAGE_ERROR", dresp.Dirs)
	}
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("off")}}
	mresp, err := mreq.RequestWith(ctx, cl.Broker(0))
	if err != nil {
		t.Fatal(err)
	}
	mp := mresp.Topics[0].Partitions[0]
	if mp.ErrorCode != kerr.LeaderNotAvailable.Code || mp.Leader != -1 || len(mp.OfflineReplicas) != 1 || mp.OfflineReplicas[0] != 0 {
		t.Fatalf("metadata of an offline partition: %v leader %d offline %v", kerr.ErrorForCode(mp.ErrorCode), mp.Leader, mp.OfflineReplicas)
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Logf("close of a broker with an offline dir: %v", err)
	}

	b = startTestBroker(t, dir, nil)
	got := consumeAll(t, ctx, b, "off", 3)
	for off, v := range got {
		if v != "acked" {
			t.Fatalf("offset %d after restart: %q", off, v)
		}
	}
	if r := rawProduce(t, newClient(t, b), "off", "after"); r.ErrorCode != 0 || r.BaseOffset != 3 {
		t.Fatalf("produce after restart: %v at %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
	}
}

// TestCreateTopicAllOrNothing: a topic one of whose partitions cannot be
// created (no descriptors left, or a disk error) is not created at all: no
// metadata, no log directories; the client gets an error that says why;
// the broker starts again and can create it once the cause is gone. The
// same holds for CreatePartitions.
func TestCreateTopicAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	var inj vfs.Switchable
	b := startFaultyBroker(t, dir, &inj, map[string]string{"file.delete.delay.ms": "1"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)

	create := func(topic string, partitions int32) kadm.CreateTopicResponse {
		t.Helper()
		resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
		if err != nil {
			t.Fatal(err)
		}
		return resp[topic]
	}
	gone := func(topic string) {
		t.Helper()
		for {
			live := 0
			for _, n := range partitionDirs(t, dir, topic) {
				if !strings.HasSuffix(n, "-delete") {
					live++
				}
			}
			if live == 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("directories of %s left: %v", topic, partitionDirs(t, dir, topic))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if b.rm.TopicByName(topic) != nil || hasTopic(t, b, topic) {
			t.Fatalf("topic %s exists after its creation failed", topic)
		}
	}

	// Out of descriptors at partition 3 of 5.
	inj.Set(vfs.OnNth(vfs.OpOpen, filepath.Join(dir, "fd-3"), 0, syscall.EMFILE))
	r := create("fd", 5)
	if !errors.Is(r.Err, kerr.UnknownServerError) || !strings.Contains(r.ErrMessage, "too many open files") || !strings.Contains(r.ErrMessage, "ulimit -n") || !strings.Contains(r.ErrMessage, "fd-3") {
		t.Fatalf("create without descriptors: %v %q, want UNKNOWN_SERVER_ERROR naming the limit and fd-3", r.Err, r.ErrMessage)
	}
	gone("fd")

	// A disk error at partition 1 of 3.
	inj.Set(vfs.OnNth(vfs.OpMkdir, filepath.Join(dir, "eio-1"), 0, syscall.EIO))
	if r := create("eio", 3); !errors.Is(r.Err, kerr.KafkaStorageError) || !strings.Contains(r.ErrMessage, "eio-1") {
		t.Fatalf("create with a disk error: %v %q, want KAFKA_STORAGE_ERROR naming eio-1", r.Err, r.ErrMessage)
	}
	gone("eio")

	// CreatePartitions 2 → 6 failing at partition 4: the topic keeps 2.
	inj.Set(nil)
	if r := create("grow", 2); r.Err != nil {
		t.Fatal(r.Err)
	}
	inj.Set(vfs.OnNth(vfs.OpOpen, filepath.Join(dir, "grow-4"), 0, syscall.EMFILE))
	pr, err := adm.CreatePartitions(ctx, 4, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if e := pr["grow"]; !errors.Is(e.Err, kerr.UnknownServerError) || !strings.Contains(e.ErrMessage, "too many open files") {
		t.Fatalf("create partitions without descriptors: %v %q", e.Err, e.ErrMessage)
	}
	if n := len(b.rm.TopicByName("grow").Partitions); n != 2 {
		t.Fatalf("grow has %d partitions after a failed CreatePartitions, want 2", n)
	}
	for {
		live := 0
		for _, n := range partitionDirs(t, dir, "grow") {
			if !strings.HasSuffix(n, "-delete") {
				live++
			}
		}
		if live == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("grow's directories: %v", partitionDirs(t, dir, "grow"))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The broker starts again, with no stray logs, and the cause gone
	// everything is created.
	inj.Set(nil)
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startFaultyBroker(t, dir, &inj, nil)
	for _, d := range b.rm.Dirs() {
		if s := d.StrayLogs(); len(s) != 0 {
			t.Fatalf("stray logs after failed creations: %v", s)
		}
	}
	adm = kadm.NewClient(newClient(t, b))
	for topic, n := range map[string]int32{"fd": 5, "eio": 3} {
		if r, err := adm.CreateTopics(ctx, n, 1, nil, topic); err != nil || r[topic].Err != nil {
			t.Fatalf("create %s after the fault: %v %v", topic, err, r[topic].Err)
		}
	}
	if pr, err := adm.CreatePartitions(ctx, 4, "grow"); err != nil || pr["grow"].Err != nil {
		t.Fatalf("grow after the fault: %v %v", err, pr["grow"].Err)
	}
	if n := len(b.rm.TopicByName("grow").Partitions); n != 6 {
		t.Fatalf("grow has %d partitions, want 6", n)
	}
}

// hasTopic reports whether the broker's metadata store knows topic.
func hasTopic(t *testing.T, b *Broker, topic string) bool {
	t.Helper()
	_, ok := b.store.Topic(topic)
	return ok
}

// fdLimitChildEnv makes the test binary run the body of
// TestCreateTopicsUnderDescriptorLimit in a child process, whose descriptor
// limit it lowers without harming the other tests.
const fdLimitChildEnv = "KBROKER_BROKER_FDLIMIT_CHILD"

// TestCreateTopicsUnderDescriptorLimit: under a real RLIMIT_NOFILE of 400
// (in a child process) a broker creates 100 topics of 25 partitions, six
// times as many partitions as descriptors: the active segments past the
// descriptor budget go through the segment cache instead of being refused.
// Every topic takes a record, the broker keeps serving, and it starts again
// under the same limit with every topic and offset.
func TestCreateTopicsUnderDescriptorLimit(t *testing.T) {
	if os.Getenv(fdLimitChildEnv) == "1" {
		createTopicsUnderLimitChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCreateTopicsUnderDescriptorLimit$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), fdLimitChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "created") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

func createTopicsUnderLimitChild(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 400, Max: orig.Max}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	props := map[string]string{"log.segment.open.files.max": "20", "auto.create.topics.enable": "false"}
	b := startTestBroker(t, dir, props)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	var created []string
	for i := 0; i < 100; i++ {
		topic := "t" + strconv.Itoa(i)
		resp, err := adm.CreateTopics(ctx, 25, 1, nil, topic)
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
		if r := resp[topic]; r.Err != nil {
			t.Fatalf("create %s (after %d topics of 25 partitions under a limit of 400 descriptors): %v %s", topic, len(created), r.Err, r.ErrMessage)
		}
		created = append(created, topic)
		if r := rawProduce(t, cl, topic, "v"); r.ErrorCode != 0 || r.BaseOffset != 0 {
			t.Fatalf("produce to %s: %v at %d", topic, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
		}
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Starts again under the same limit, with every acknowledged topic.
	b = startTestBroker(t, dir, props)
	cl = newClient(t, b)
	for _, topic := range created {
		if tp := b.rm.TopicByName(topic); tp == nil || len(tp.Partitions) != 25 {
			t.Fatalf("topic %s after restart: %v", topic, tp)
		}
		if r := rawProduce(t, cl, topic, "v"); r.ErrorCode != 0 || r.BaseOffset != 1 {
			t.Fatalf("produce to %s after restart: %v at %d", topic, kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
		}
	}
}
