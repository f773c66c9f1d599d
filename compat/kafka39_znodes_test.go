package compat

// The znodes kbroker writes against the ones Kafka 3.9 writes (issue 24:
// "kbroker reads and writes every znode that Kafka 3.9 does, in the same
// JSON versions").

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/integration"
)

// znodeShape is what is compared of a znode: its JSON keys (nested
// objects' keys as "outer.inner") and the values of its "version" fields;
// or "(not JSON)" and whether it has data at all.
type znodeShape struct {
	keys     []string
	versions map[string]string
	raw      string
	data     string // the data itself (at most 300 bytes), for reports
}

func (s znodeShape) String() string {
	if s.keys == nil {
		return s.raw
	}
	return fmt.Sprintf("keys %v versions %v", s.keys, s.versions)
}

// shapeOf reads data as a znode's shape. Maps keyed by data (partition
// numbers, topic names, config names) are not descended: their keys are
// not the format's.
func shapeOf(data []byte) znodeShape {
	var v any
	if len(data) == 0 {
		return znodeShape{raw: "(empty)"}
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return znodeShape{raw: "(not JSON)"}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return znodeShape{raw: fmt.Sprintf("(JSON %T)", v)}
	}
	s := znodeShape{keys: []string{}, versions: map[string]string{}}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			s.keys = append(s.keys, prefix+k)
			if k == "version" {
				s.versions[prefix+k] = fmt.Sprint(v)
			}
			switch k {
			case "partitions", "config", "adding_replicas", "removing_replicas", "features", "listener_security_protocol_map":
				continue // keyed by data
			}
			if sub, ok := v.(map[string]any); ok {
				walk(prefix+k+".", sub)
			}
		}
	}
	walk("", m)
	sort.Strings(s.keys)
	return s
}

// znodeNumbers masks the sequence numbers of sequential znodes.
var znodeNumbers = regexp.MustCompile(`_\d{10}$`)

// readZnodes walks the tree under c's chroot and returns each znode's
// shape by path (sequence numbers masked), leaving out ZooKeeper's own.
func readZnodes(t *testing.T, c *zkclient.Client) map[string]znodeShape {
	t.Helper()
	out := map[string]znodeShape{}
	var walk func(path string)
	walk = func(path string) {
		data, _, err := c.Get(path)
		if err != nil {
			return // gone meanwhile (a notification the controller consumed)
		}
		shape := shapeOf(data)
		shape.data = string(data[:min(len(data), 300)])
		out[znodeNumbers.ReplaceAllString(path, "_N")] = shape
		children, _, err := c.Children(path)
		if err != nil {
			return
		}
		for _, ch := range children {
			p := strings.TrimSuffix(path, "/") + "/" + ch
			if p == "/zookeeper" {
				continue
			}
			walk(p)
		}
	}
	walk("/")
	return out
}

// TestKafka39ZnodesSameShape: a Kafka 3.9 broker and a kbroker broker,
// both broker id 1, each alone on its own chroot of one ZooKeeper, get the
// same operations: a topic created with a config, a partition added, the
// topic config altered, a dynamic broker default set, an idempotent
// producer's first record. Then every znode under
// both chroots is compared: the same paths (sequence numbers masked), and
// for each the same JSON keys and "version" values, but for the
// differences in knownZnodeDiffs, each with why.
func TestKafka39ZnodesSameShape(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker broker")
	}
	z := integration.StartZooKeeper(t)
	kf := startKafka39(t, z, "/shape-kafka", 1)
	kb := startKbrokerID(t, z, "/shape-kbroker", 1, map[string]string{"offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1"})
	for _, addr := range []string{kf.Addr(), kb.Addr()} {
		waitFor(t, kafkaStartTimeout, "the broker to be its cluster's controller", func() bool {
			m, err := newAdmin(t, addr).BrokerMetadata(testCtx(t))
			return err == nil && m.Controller == 1
		})
		adm := newAdmin(t, addr)
		if _, err := adm.CreateTopic(testCtx(t), 2, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "shape"); err != nil {
			t.Fatalf("%s: creating shape: %v", addr, err)
		}
		if _, err := adm.CreatePartitions(testCtx(t), 3, "shape"); err != nil {
			t.Fatalf("%s: adding a partition: %v", addr, err)
		}
		if r, err := adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{{Name: "segment.ms", Value: kadm.StringPtr("600000")}}, "shape"); err != nil || r[0].Err != nil {
			t.Fatalf("%s: altering shape's config: %v %v", addr, err, r)
		}
		v := "1048588"
		if r, err := adm.AlterBrokerConfigs(testCtx(t), []kadm.AlterConfig{{Name: "message.max.bytes", Value: &v}}); err != nil || r[0].Err != nil {
			t.Fatalf("%s: altering the broker default: %v %v", addr, err, r)
		}
		cl := newKgo(t, addr, kgo.DefaultProduceTopic("shape"))
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("%s: producing: %v", addr, err)
		}
		cl.Close()
	}
	// Notifications come and go (the controller consumes them): the
	// trees are read until they agree or 30 s passed.
	var kafka, kbroker map[string]znodeShape
	var diffs []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		kafka = readZnodes(t, dialRollingZK(t, z, "/shape-kafka"))
		kbroker = readZnodes(t, dialRollingZK(t, z, "/shape-kbroker"))
		diffs = znodeDiffs(kafka, kbroker)
		if len(diffs) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for _, d := range diffs {
		t.Errorf("%s", d)
	}
	var paths []string
	for p := range kafka {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	t.Logf("%d znodes compared: %s", len(kafka), strings.Join(paths, " "))
}

// knownZnodeDiffs are the differences accepted, by path, each with why.
var knownZnodeDiffs = map[string]string{
	// Kafka's controller creates it on election, finalizing no feature.
	// kbroker writes it only when UpdateFeatures finalizes levels: until
	// then its own defaults apply (group.version 1 for KIP-848,
	// transaction.version 2), and an empty /feature would finalize them to
	// 0, as it does for a kbroker that joins a cluster Kafka created.
	"/feature": "kbroker writes it on UpdateFeatures only",
}

// znodeDiffs lists the paths only one kind has and the shapes that differ.
func znodeDiffs(kafka, kbroker map[string]znodeShape) []string {
	var paths []string
	for p := range kafka {
		paths = append(paths, p)
	}
	for p := range kbroker {
		if _, ok := kafka[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var diffs []string
	for _, p := range paths {
		if _, ok := knownZnodeDiffs[p]; ok {
			continue
		}
		f, inF := kafka[p]
		b, inB := kbroker[p]
		switch {
		case !inB:
			diffs = append(diffs, fmt.Sprintf("%s: Kafka has it (%s: %s), kbroker not", p, f, f.data))
		case !inF:
			diffs = append(diffs, fmt.Sprintf("%s: kbroker has it (%s: %s), Kafka not", p, b, b.data))
		case f.String() != b.String():
			diffs = append(diffs, fmt.Sprintf("%s: Kafka %s (%s), kbroker %s (%s)", p, f, f.data, b, b.data))
		}
	}
	return diffs
}
