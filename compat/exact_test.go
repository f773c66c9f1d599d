package compat

// Issue 16: where kbroker's answers differed from Kafka's in ways client
// libraries' own tests notice. Each test drives franz-go (kgo requests and
// kadm) against a real kbroker process and checks Kafka's codes and
// messages, as read from Kafka's ReplicationControlManager,
// FeatureControlManager, KafkaApis and GroupConfig.

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExactCreateTopicsAssignment: a manual replica assignment is accepted
// in any partition order (clients that build it from a Go map send it
// unordered); duplicates, gaps, unknown brokers, repeated brokers and
// uneven replica counts get INVALID_REPLICA_ASSIGNMENT with Kafka's message
// and create nothing.
func TestExactCreateTopicsAssignment(t *testing.T) {
	b := startBroker(t, t.TempDir(), "node.id=0")
	cl := newKgo(t, b.Addr())
	ctx := testCtx(t)
	create := func(topic string, parts ...[]int32) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		for _, p := range parts {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition, ra.Replicas = p[0], p[1:]
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("CreateTopics %s: %v %+v", topic, err, resp)
		}
		return resp.Topics[0]
	}
	st := create("unordered", []int32{2, 0}, []int32{0, 0}, []int32{1, 0})
	if st.ErrorCode != 0 || st.NumPartitions != 3 {
		t.Fatalf("unordered assignment: %v %v, %d partitions", kerr.ErrorForCode(st.ErrorCode), st.ErrorMessage, st.NumPartitions)
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, "unordered")
	if err != nil || len(md.Topics["unordered"].Partitions) != 3 {
		t.Fatalf("unordered topic metadata: %v %+v", err, md.Topics["unordered"])
	}
	for _, c := range []struct {
		name  string
		parts [][]int32
		msg   string
	}{
		{"dup", [][]int32{{0, 0}, {1, 0}, {0, 0}}, "Found multiple manual partition assignments for partition 0"},
		{"gap", [][]int32{{0, 0}, {2, 0}}, "partitions should be a consecutive 0-based integer sequence"},
		{"unknown-broker", [][]int32{{0, 0}, {1, 5}}, "The manual partition assignment includes broker 5, but no such broker is registered."},
		{"twice", [][]int32{{0, 0, 0}}, "The manual partition assignment includes the broker 0 more than once."},
		{"empty", [][]int32{{0}}, "The manual partition assignment includes an empty replica list."},
	} {
		st := create("bad-"+c.name, c.parts...)
		if st.ErrorCode != kerr.InvalidReplicaAssignment.Code || st.ErrorMessage == nil || *st.ErrorMessage != c.msg {
			t.Errorf("%s: %v %q, want INVALID_REPLICA_ASSIGNMENT %q", c.name, kerr.ErrorForCode(st.ErrorCode), deref(st.ErrorMessage), c.msg)
		}
	}
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range topics.Names() {
		if strings.HasPrefix(n, "bad-") {
			t.Errorf("refused assignment created topic %s", n)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestExactMetadataAutoCreate: the Metadata request that creates a topic
// answers it with LEADER_NOT_AVAILABLE and no partitions; the next one
// sees them. A producing client (which retries) still works, as
// TestFranzAutoCreate and the matrix tests check.
func TestExactMetadataAutoCreate(t *testing.T) {
	b := startBroker(t, t.TempDir(), "num.partitions=2")
	cl := newKgo(t, b.Addr())
	ctx := testCtx(t)
	ask := func() kmsg.MetadataResponseTopic {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("auto")
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Topics) != 1 {
			t.Fatalf("Metadata: %v %+v", err, resp)
		}
		return resp.Topics[0]
	}
	first := ask()
	if first.ErrorCode != kerr.LeaderNotAvailable.Code || len(first.Partitions) != 0 {
		t.Fatalf("creating Metadata: %v with %d partitions, want LEADER_NOT_AVAILABLE and none", kerr.ErrorForCode(first.ErrorCode), len(first.Partitions))
	}
	second := ask()
	if second.ErrorCode != 0 || len(second.Partitions) != 2 {
		t.Fatalf("next Metadata: %v with %d partitions, want 2", kerr.ErrorForCode(second.ErrorCode), len(second.Partitions))
	}
}

// TestExactDescribeConfigsTypes: DescribeConfigs v3+ gives every broker and
// topic config a type, and documentation when asked. The types checked by
// name are Kafka 4.4.0's (every broker property kbroker shares with Kafka
// was compared with its answer).
func TestExactDescribeConfigsTypes(t *testing.T) {
	b := startBroker(t, t.TempDir(), "node.id=0")
	cl := newKgo(t, b.Addr())
	ctx := testCtx(t)
	createTopic(t, kadm.NewClient(cl), "typed", 1, nil)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeDocumentation = true
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeBroker, "0"}, {kmsg.ConfigResourceTypeTopic, "typed"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Resources) != 2 {
		t.Fatalf("DescribeConfigs: %v %+v", err, resp)
	}
	if resp.Version < 3 {
		t.Fatalf("DescribeConfigs answered at v%d, want v3+", resp.Version)
	}
	want := map[string]kmsg.ConfigType{
		"log.retention.ms": kmsg.ConfigTypeLong, "num.partitions": kmsg.ConfigTypeInt,
		"auto.create.topics.enable": kmsg.ConfigTypeBoolean, "listeners": kmsg.ConfigTypeList, "log.dirs": kmsg.ConfigTypeList,
		"offsets.topic.replication.factor": kmsg.ConfigTypeShort, "log.cleanup.policy": kmsg.ConfigTypeList,
		"cleanup.policy": kmsg.ConfigTypeList, "retention.ms": kmsg.ConfigTypeLong,
		"min.cleanable.dirty.ratio": kmsg.ConfigTypeDouble, "segment.bytes": kmsg.ConfigTypeInt,
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 || len(r.Configs) == 0 {
			t.Fatalf("%v %s: %v, %d configs", r.ResourceType, r.ResourceName, kerr.ErrorForCode(r.ErrorCode), len(r.Configs))
		}
		for _, c := range r.Configs {
			if c.ConfigType == kmsg.ConfigTypeUnknown || c.Documentation == nil || *c.Documentation == "" {
				t.Errorf("%v config %s: type %v, documentation %q", r.ResourceType, c.Name, c.ConfigType, deref(c.Documentation))
			}
			if w, ok := want[c.Name]; ok && c.ConfigType != w {
				t.Errorf("config %s has type %v, Kafka's is %v", c.Name, c.ConfigType, w)
			}
		}
	}
}

// alterGroupConfigs sends IncrementalAlterConfigs for a GROUP resource: SET
// each non-nil value, DELETE each nil one.
func alterGroupConfigs(t *testing.T, cl *kgo.Client, group string, ops map[string]*string) (*kerr.Error, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, v
		if v == nil {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || len(resp.Resources) != 1 {
		t.Fatalf("IncrementalAlterConfigs: %v %+v", err, resp)
	}
	r := resp.Resources[0]
	if r.ErrorCode == 0 {
		return nil, ""
	}
	e, _ := kerr.ErrorForCode(r.ErrorCode).(*kerr.Error)
	return e, deref(r.ErrorMessage)
}

// describeGroupConfigs returns a group's configs: value and source by name.
func describeGroupConfigs(t *testing.T, cl *kgo.Client, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs group %s: %v %+v", group, err, resp)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

// TestExactGroupConfigs: the KIP-848 group configs
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms are known,
// bounded by group.consumer.min/max.*, used by the consumer group
// coordinator (the heartbeat interval a member is told), and kept across a
// restart, as Kafka keeps them in the cluster metadata.
func TestExactGroupConfigs(t *testing.T) {
	b := startBroker(t, t.TempDir())
	cl := newKgo(t, b.Addr())
	createTopic(t, kadm.NewClient(cl), "gc-topic", 1, nil)

	if e, msg := alterGroupConfigs(t, cl, "gc", map[string]*string{"consumer.session.timeout.ms": kmsg.StringPtr("10000")}); e != kerr.InvalidConfig ||
		msg != "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive." {
		t.Errorf("session timeout below the bound: %v %q", e, msg)
	}
	if e, msg := alterGroupConfigs(t, cl, "gc", map[string]*string{"consumer.heartbeat.interval.ms": kmsg.StringPtr("20000")}); e != kerr.InvalidConfig ||
		msg != "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive." {
		t.Errorf("heartbeat interval above the bound: %v %q", e, msg)
	}
	if e, msg := alterGroupConfigs(t, cl, "gc", map[string]*string{"consumer.no.such": kmsg.StringPtr("1")}); e != kerr.InvalidConfig || msg != "Unknown group config name: consumer.no.such" {
		t.Errorf("unknown group config: %v %q", e, msg)
	}
	if e, msg := alterGroupConfigs(t, cl, "gc", map[string]*string{
		"consumer.session.timeout.ms":    kmsg.StringPtr("50000"),
		"consumer.heartbeat.interval.ms": kmsg.StringPtr("7000"),
	}); e != nil {
		t.Fatalf("setting the consumer group configs: %v %q", e, msg)
	}
	check := func(when string) {
		t.Helper()
		cfgs := describeGroupConfigs(t, cl, "gc")
		for k, v := range map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "7000"} {
			c := cfgs[k]
			if deref(c.Value) != v || c.Source != kmsg.ConfigSourceGroupConfig || c.ConfigType != kmsg.ConfigTypeInt {
				t.Errorf("%s: %s = %q (source %v, type %v), want %s from GROUP_CONFIG", when, k, deref(c.Value), c.Source, c.ConfigType, v)
			}
		}
		if c := cfgs["share.session.timeout.ms"]; deref(c.Value) != "45000" || c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s: share.session.timeout.ms = %q (%v), want the default 45000", when, deref(c.Value), c.Source)
		}
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		// From v1 the member picks its id (KIP-1082).
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "gc", "gc-member-"+strings.ReplaceAll(when, " ", "-"), 0, 60000
		hb.SubscribedTopicNames = []string{"gc-topic"}
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := hb.RequestWith(testCtx(t), cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("%s: ConsumerGroupHeartbeat: %v %+v", when, err, resp)
		}
		if resp.HeartbeatIntervalMillis != 7000 {
			t.Errorf("%s: member told heartbeat interval %d, want the group's 7000", when, resp.HeartbeatIntervalMillis)
		}
		leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		leave.Group, leave.MemberID, leave.MemberEpoch = "gc", hb.MemberID, -1
		if _, err := leave.RequestWith(testCtx(t), cl); err != nil {
			t.Fatalf("%s: leaving: %v", when, err)
		}
	}
	check("after setting")
	b.StopAndRestart()
	check("after a restart")

	if e, msg := alterGroupConfigs(t, cl, "gc", map[string]*string{"consumer.session.timeout.ms": nil, "consumer.heartbeat.interval.ms": nil}); e != nil {
		t.Fatalf("deleting the overrides: %v %q", e, msg)
	}
	if c := describeGroupConfigs(t, cl, "gc")["consumer.heartbeat.interval.ms"]; deref(c.Value) != "5000" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("after delete: consumer.heartbeat.interval.ms = %q (%v), want the default 5000", deref(c.Value), c.Source)
	}
}

// finalizedFeatures asks ApiVersions for the finalized feature levels.
func finalizedFeatures(t *testing.T, cl *kgo.Client) map[string]int16 {
	t.Helper()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	out := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Errorf("feature %s finalized as a range %d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
		out[f.Name] = f.MaxVersionLevel
	}
	return out
}

// TestExactUpdateFeatures: UpdateFeatures and the finalized features of
// ApiVersions, with FeatureControlManager's validation.
func TestExactUpdateFeatures(t *testing.T) {
	b := startBroker(t, t.TempDir(), "node.id=0")
	cl := newKgo(t, b.Addr())
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	if got := finalizedFeatures(t, cl); got["transaction.version"] != 2 || got["group.version"] != 1 {
		t.Fatalf("finalized features %v, want transaction.version 2, group.version 1", got)
	}
	const prefix = "The update failed for all features since the following feature had an error: "
	for _, c := range []struct {
		what string
		u    kadm.FeatureUpdate
		msg  string
	}{
		{"downgrade without the flag", kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 1},
			"Invalid update version 1 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"unknown level", kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 3, UpgradeType: 1},
			"Invalid update version 3 for feature transaction.version. Local controller 0 only supports versions 0-2"},
		{"unknown feature", kadm.FeatureUpdate{Feature: "no.such.version", MaxVersionLevel: 1, UpgradeType: 1},
			"Invalid update version 1 for feature no.such.version. Local controller 0 does not support this feature."},
		{"downgrade type for an upgrade", kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 2}, ""},
		{"unknown upgrade type", kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 0},
			"Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
	} {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = c.u.Feature, c.u.MaxVersionLevel, c.u.UpgradeType
		req.FeatureUpdates = append(req.FeatureUpdates, u)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if c.msg == "" { // same level: no change, no error
			if resp.ErrorCode != 0 {
				t.Errorf("%s: %v %q", c.what, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
			}
			continue
		}
		if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || deref(resp.ErrorMessage) != prefix+c.msg {
			t.Errorf("%s: %v %q, want INVALID_UPDATE_VERSION %q", c.what, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage), prefix+c.msg)
		}
	}
	// kadm: a validate-only downgrade changes nothing, a real one does.
	down := kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 1, UpgradeType: 2}
	if res, err := adm.UpdateFeatures(ctx, true, down); err != nil || res.Error() != nil {
		t.Fatalf("validate-only downgrade: %v %v", err, res.Error())
	}
	if got := finalizedFeatures(t, cl)["transaction.version"]; got != 2 {
		t.Fatalf("validate-only downgrade changed transaction.version to %d", got)
	}
	if res, err := adm.UpdateFeatures(ctx, false, down); err != nil || res.Error() != nil {
		t.Fatalf("safe downgrade: %v %v", err, res.Error())
	}
	if got := finalizedFeatures(t, cl)["transaction.version"]; got != 1 {
		t.Fatalf("after the downgrade transaction.version is %d, want 1", got)
	}
	b.StopAndRestart()
	if got := finalizedFeatures(t, cl)["transaction.version"]; got != 1 {
		t.Fatalf("after a restart transaction.version is %d, want 1", got)
	}
	if res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 2, UpgradeType: 1}); err != nil || res.Error() != nil {
		t.Fatalf("upgrade back: %v %v", err, res.Error())
	}
	if got := finalizedFeatures(t, cl)["transaction.version"]; got != 2 {
		t.Fatalf("after the upgrade transaction.version is %d, want 2", got)
	}

	// group.version 0 turns the KIP-848 protocol off, as in Kafka.
	heartbeat := func() int16 {
		t.Helper()
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "gv", "gv-member", 60000
		hb.SubscribedTopicNames, hb.Topics = []string{"gv-topic"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := hb.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("ConsumerGroupHeartbeat: %v", err)
		}
		return resp.ErrorCode
	}
	if res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 2}); err != nil || res.Error() != nil {
		t.Fatalf("group.version to 0: %v %v", err, res.Error())
	}
	if _, ok := finalizedFeatures(t, cl)["group.version"]; ok {
		t.Error("group.version 0 still listed as finalized")
	}
	if code := heartbeat(); code != kerr.UnsupportedVersion.Code {
		t.Errorf("heartbeat with group.version 0: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(code))
	}
	if res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1}); err != nil || res.Error() != nil {
		t.Fatalf("group.version to 1: %v %v", err, res.Error())
	}
	if code := heartbeat(); code != 0 {
		t.Errorf("heartbeat with group.version 1: %v", kerr.ErrorForCode(code))
	}
}

// TestExactPartitionReassignments: on one node no reassignment is in
// progress; a reassignment to the replicas a partition has succeeds;
// anything else gets Kafka's error.
func TestExactPartitionReassignments(t *testing.T) {
	b := startBroker(t, t.TempDir(), "node.id=0")
	adm := newAdmin(t, b.Addr())
	ctx := testCtx(t)
	createTopic(t, adm, "moving", 2, nil)

	listed, err := adm.ListPartitionReassignments(ctx, nil)
	if err != nil || len(listed) != 0 {
		t.Fatalf("ListPartitionReassignments: %v %+v, want none", err, listed)
	}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, []int32{0})
	req.Assign("moving", 1, []int32{1})
	req.Assign("nowhere", 0, []int32{0})
	req.CancelAssign("moving", 0) // replaces the first: a cancellation
	req.Assign("moving", 5, []int32{0})
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("AlterPartitionAssignments: %v", err)
	}
	want := map[string]map[int32]struct {
		err error
		msg string
	}{
		"moving": {
			0: {kerr.NoReassignmentInProgress, ""}, // Kafka 4.4.0 sends no message
			1: {kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker 1, but no such broker is registered."},
			5: {kerr.UnknownTopicOrPartition, "Unable to find partition moving:5."},
		},
		"nowhere": {0: {kerr.UnknownTopicOrPartition, "Unable to find a topic named nowhere."}},
	}
	for topic, ps := range want {
		for p, w := range ps {
			r := resp[topic][p]
			if !errors.Is(r.Err, w.err) || r.ErrMessage != w.msg {
				t.Errorf("%s/%d: %v %q, want %v %q", topic, p, r.Err, r.ErrMessage, w.err, w.msg)
			}
		}
	}
	var same kadm.AlterPartitionAssignmentsReq
	same.Assign("moving", 0, []int32{0})
	same.Assign("moving", 1, []int32{0})
	resp, err = adm.AlterPartitionAssignments(ctx, same)
	if err != nil || resp.Error() != nil {
		t.Fatalf("reassigning to the current replicas: %v %v", err, resp.Error())
	}
	listed, err = adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}, 1: {}}})
	if err != nil || len(listed) != 0 {
		t.Fatalf("ListPartitionReassignments after: %v %+v, want none", err, listed)
	}
	md, err := adm.Metadata(ctx, "moving")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics["moving"].Partitions {
		if !slices.Equal(p.Replicas, []int32{0}) {
			t.Errorf("partition %d replicas %v after a no-op reassignment", p.Partition, p.Replicas)
		}
	}
}

// TestExactAutoCreateClientsRetry: kcat (librdkafka) and sarama produce to
// a topic that does not exist yet; the Metadata request that creates it
// answers LEADER_NOT_AVAILABLE without partitions, so each must retry
// Metadata before it can produce, as against Kafka.
func TestExactAutoCreateClientsRetry(t *testing.T) {
	kcatPath(t)
	b := startBroker(t, t.TempDir(), "num.partitions=1")
	addr := b.Addr()

	runKcat(t, "a\nb\nc\n", "-P", "-b", addr, "-t", "kcat-auto", "-X", "acks=all")
	if out := runKcat(t, "", "-C", "-b", addr, "-t", "kcat-auto", "-o", "beginning", "-e", "-q"); out != "a\nb\nc\n" {
		t.Fatalf("kcat read back %q from the auto-created topic", out)
	}

	prod, err := sarama.NewSyncProducer([]string{addr}, saramaConfig(sarama.V3_6_0_0, sarama.CompressionNone, false))
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	defer prod.Close()
	part, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "sarama-auto", Value: sarama.StringEncoder("x")})
	if err != nil || part != 0 || off != 0 {
		t.Fatalf("sarama produce to a new topic: partition %d offset %d, %v", part, off, err)
	}
}
