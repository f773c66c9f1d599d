package compat

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/kbroker/kbroker/integration"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafka39DiffTopicAdmin is the differential test of cluster-mode topic
// admin against Apache Kafka 3.9 in ZooKeeper mode: one Kafka broker and
// one kbroker broker (both broker id 1) on one real ZooKeeper, each under
// its own chroot, get the same create / describe / alter / delete
// sequence, and every answer is compared field by field (kafka_diff_test.go's
// normalisations; error messages where they are Kafka's). After each admin
// answer the same broker's Metadata is read at once and compared too: that
// is the answer's timing relative to the broker's metadata (Kafka parks
// CreateTopics, CreatePartitions and DeleteTopics until its metadata cache
// shows their result).
func TestKafka39DiffTopicAdmin(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 and a kbroker cluster")
	}
	z := integration.StartZooKeeper(t)
	kf39 := startKafka39(t, z, "/kafka39", 1)
	bs := integration.StartCluster(t, z, 1, map[string]string{"default.replication.factor": "1"})
	kbAddr := bs[0].Addr()
	waitFor(t, kafkaStartTimeout, "the kbroker broker to see itself and a controller", func() bool {
		m, err := newAdmin(t, kbAddr).BrokerMetadata(testCtx(t))
		return err == nil && len(m.Brokers) == 1 && m.Controller == 1
	})
	kf, kb := dialDiff(t, kf39.Addr()), dialDiff(t, kbAddr)

	// step sends req to both brokers, Kafka first, and compares the
	// answers after clean (which may drop fields known to differ); with
	// messages set, the error messages too.
	step := func(name string, req func() kmsg.Request, messages bool, clean func(kmsg.Response)) {
		t.Helper()
		rf, rb := kf.send(t, req()), kb.send(t, req())
		if clean != nil {
			clean(rf)
			clean(rb)
		}
		var diffs []string
		diffFields(name, normalizeDiff(rf), normalizeDiff(rb), &diffs)
		if messages {
			if mf, mb := errorMessages(rf), errorMessages(rb); mf != mb {
				diffs = append(diffs, fmt.Sprintf("%s error messages: Kafka %s, kbroker %s", name, mf, mb))
			}
		}
		for _, d := range diffs {
			t.Errorf("%s", d)
		}
	}
	// metadataNow reads both brokers' metadata of topics at once and
	// compares it.
	metadataNow := func(after string, topics ...string) {
		t.Helper()
		// Kafka lists a topic's partitions in hash order; compare them
		// by index.
		byIndex := func(r kmsg.Response) {
			for _, mt := range r.(*kmsg.MetadataResponse).Topics {
				slices.SortFunc(mt.Partitions, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
			}
		}
		step("Metadata after "+after, func() kmsg.Request {
			m := kmsg.NewPtrMetadataRequest()
			m.Version = 12
			for _, tn := range topics {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(tn)
				m.Topics = append(m.Topics, rt)
			}
			return m
		}, false, byIndex)
	}
	create := func(topic string, partitions int32, timeoutMs int32, validateOnly bool, assignment ...kmsg.CreateTopicsRequestTopicReplicaAssignment) func() kmsg.Request {
		return func() kmsg.Request {
			ct := kmsg.NewPtrCreateTopicsRequest()
			ct.Version, ct.TimeoutMillis, ct.ValidateOnly = 7, timeoutMs, validateOnly
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
			if len(assignment) > 0 {
				rt.NumPartitions, rt.ReplicationFactor, rt.ReplicaAssignment = -1, -1, assignment
			}
			ct.Topics = append(ct.Topics, rt)
			return ct
		}
	}
	// Kafka 3.9's topic config catalogue is not kbroker's (Kafka 4's), so
	// CreateTopics answers are compared without their config lists.
	noConfigs := func(r kmsg.Response) {
		for i := range r.(*kmsg.CreateTopicsResponse).Topics {
			r.(*kmsg.CreateTopicsResponse).Topics[i].Configs = nil
		}
	}
	createPartitions := func(topic string, count int32, assignment ...[]int32) func() kmsg.Request {
		return func() kmsg.Request {
			cp := kmsg.NewPtrCreatePartitionsRequest()
			cp.Version = 3
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = topic, count
			for _, a := range assignment {
				rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
			}
			cp.Topics = append(cp.Topics, rt)
			return cp
		}
	}
	deleteTopics := func(topics ...string) func() kmsg.Request {
		return func() kmsg.Request {
			dt := kmsg.NewPtrDeleteTopicsRequest()
			dt.Version = 6
			for _, tn := range topics {
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.Topic = kmsg.StringPtr(tn)
				dt.Topics = append(dt.Topics, rt)
			}
			return dt
		}
	}

	step("CreateTopics", create("diff-a", 3, 30000, false), true, noConfigs)
	metadataNow("CreateTopics", "diff-a")
	step("CreateTopics of an existing topic", create("diff-a", 3, 30000, false), true, noConfigs)
	step("CreateTopics validate_only", create("diff-v", 2, 30000, true), true, noConfigs)
	metadataNow("CreateTopics validate_only", "diff-v")
	step("CreateTopics with an unordered assignment", create("diff-m", 0, 30000, false,
		kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: 1, Replicas: []int32{1}},
		kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: 0, Replicas: []int32{1}}), true, noConfigs)
	metadataNow("CreateTopics with an assignment", "diff-m")
	step("CreateTopics with a gap in the assignment", create("diff-g", 0, 30000, false,
		kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: 0, Replicas: []int32{1}},
		kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: 2, Replicas: []int32{1}}), true, noConfigs)

	step("CreatePartitions", createPartitions("diff-a", 5), true, nil)
	metadataNow("CreatePartitions", "diff-a")
	step("CreatePartitions with an assignment", createPartitions("diff-m", 3, []int32{1}), true, nil)
	metadataNow("CreatePartitions with an assignment", "diff-m")
	step("CreatePartitions naming a broker twice", createPartitions("diff-a", 6, []int32{1, 1}), true, nil)
	step("CreatePartitions naming an unknown broker", createPartitions("diff-a", 6, []int32{7}), true, nil)
	step("CreatePartitions with too few assignments", createPartitions("diff-a", 7, []int32{1}), true, nil)
	step("CreatePartitions to fewer partitions", createPartitions("diff-a", 4), true, nil)
	step("CreatePartitions of an unknown topic", createPartitions("diff-nope", 4), false, nil)

	step("DescribeConfigs", func() kmsg.Request {
		dc := kmsg.NewPtrDescribeConfigsRequest()
		dc.Version = 4
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "diff-a"
		rr.ConfigNames = []string{"cleanup.policy", "retention.ms", "segment.bytes"}
		dc.Resources = append(dc.Resources, rr)
		return dc
	}, false, nil)

	step("DeleteTopics", deleteTopics("diff-a", "diff-m"), false, nil)
	metadataNow("DeleteTopics", "diff-a", "diff-m")
	step("DeleteTopics of an unknown topic", deleteTopics("diff-nope"), false, nil)
	step("CreateTopics with timeout 0", create("diff-z", 1, 0, false), false, noConfigs)
}

// errorMessages lists every ErrorMessage of an answer, in order.
func errorMessages(r kmsg.Response) string {
	raw, _ := json.Marshal(r)
	var v any
	_ = json.Unmarshal(raw, &v)
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if m, ok := x["ErrorMessage"]; ok {
				out = append(out, fmt.Sprint(m))
			}
			for k, f := range x {
				if k != "ErrorMessage" {
					walk(f)
				}
			}
		case []any:
			for _, f := range x {
				walk(f)
			}
		}
	}
	walk(v)
	return fmt.Sprintf("%q", out)
}
