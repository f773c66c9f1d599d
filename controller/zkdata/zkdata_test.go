package zkdata

import (
	"encoding/json"
	"reflect"
	"testing"
)

// sameJSON reports whether a and b are the same JSON value (key order aside:
// Kafka writes Java hash-map order, which carries no meaning).
func sameJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("our JSON %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("Kafka's JSON %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", got, want)
	}
}

// JSON in the shape Kafka 3.9's encoders (kafka/zk/ZkData.scala) write,
// decoded and re-encoded.
func TestBrokerRegistrationKafkaJSON(t *testing.T) {
	kafka := `{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","REPLICATION":"SASL_PLAINTEXT"},` +
		`"endpoints":["PLAINTEXT://kafka1:9092","REPLICATION://[::1]:9093"],"jmx_port":-1,"port":9092,` +
		`"host":"kafka1","version":5,"timestamp":"1700000000123","rack":"rack-a"}`
	b, err := DecodeBrokerRegistration(3, []byte(kafka))
	if err != nil {
		t.Fatal(err)
	}
	want := BrokerRegistration{
		ID: 3, Version: 5, Rack: "rack-a", JMXPort: -1, Timestamp: 1700000000123, Features: map[string]FeatureRange{},
		Endpoints: []Endpoint{
			{Listener: "PLAINTEXT", Host: "kafka1", Port: 9092, SecurityProtocol: "PLAINTEXT"},
			{Listener: "REPLICATION", Host: "::1", Port: 9093, SecurityProtocol: "SASL_PLAINTEXT"},
		},
	}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("decoded %+v\nwant    %+v", b, want)
	}
	enc, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, enc, kafka)
}

func TestBrokerRegistrationWithoutPlaintext(t *testing.T) {
	b := BrokerRegistration{ID: 1, JMXPort: -1, Timestamp: 5,
		Endpoints: []Endpoint{{Listener: "SASL_PLAINTEXT", Host: "h", Port: 1, SecurityProtocol: "SASL_PLAINTEXT"}}}
	enc, err := b.Encode()
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, enc, `{"version":5,"host":null,"port":-1,"jmx_port":-1,"timestamp":"5","endpoints":["SASL_PLAINTEXT://h:1"],`+
		`"listener_security_protocol_map":{"SASL_PLAINTEXT":"SASL_PLAINTEXT"},"features":{}}`)
}

func TestBrokerRegistrationOldVersions(t *testing.T) {
	b, err := DecodeBrokerRegistration(1, []byte(`{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}`))
	if err != nil || len(b.Endpoints) != 1 || b.Endpoints[0].ConnectionString() != "PLAINTEXT://localhost:9092" {
		t.Fatalf("v1: %+v %v", b, err)
	}
	// v2/v3 have no protocol map: listener names are protocol names.
	b, err = DecodeBrokerRegistration(1, []byte(`{"version":3,"host":"h","port":9092,"jmx_port":9999,"timestamp":"1",`+
		`"endpoints":["PLAINTEXT://h:9092","SSL://h:9093"],"rack":"dc1"}`))
	if err != nil || len(b.Endpoints) != 2 || b.Endpoints[1].SecurityProtocol != "SSL" || b.Rack != "dc1" {
		t.Fatalf("v3: %+v %v", b, err)
	}
	for _, bad := range []string{`{"version":0}`, `{"version":4,"endpoints":["CLIENT://h:1"],"listener_security_protocol_map":{}}`, `not json`, `{"version":5,"endpoints":["PLAINTEXT://h:x"]}`} {
		if _, err := DecodeBrokerRegistration(1, []byte(bad)); err == nil {
			t.Errorf("%s decoded without error", bad)
		}
	}
}

func TestTopicAssignmentKafkaJSON(t *testing.T) {
	kafka := `{"partitions":{"0":[1,2,3],"1":[2,3,1]},"topic_id":"q-2Nc7lBRyeUfHMK4mcD3Q",` +
		`"adding_replicas":{"1":[1]},"removing_replicas":{},"version":3}`
	a, err := DecodeTopicAssignment("t", []byte(kafka))
	if err != nil {
		t.Fatal(err)
	}
	if EncodeUUID(a.TopicID) != "q-2Nc7lBRyeUfHMK4mcD3Q" || !reflect.DeepEqual(a.Partitions[1], []int32{2, 3, 1}) ||
		!reflect.DeepEqual(a.AddingReplicas[1], []int32{1}) || len(a.RemovingReplicas) != 0 {
		t.Fatalf("decoded %+v", a)
	}
	if got := a.PartitionIDs(); !reflect.DeepEqual(got, []int32{0, 1}) {
		t.Fatalf("PartitionIDs %v", got)
	}
	enc, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, enc, kafka)
	// A pre-2.8 znode has no topic id and no reassignment keys.
	a, err = DecodeTopicAssignment("t", []byte(`{"version":1,"partitions":{"0":[0]}}`))
	if err != nil || a.TopicID != ([16]byte{}) || len(a.Partitions) != 1 {
		t.Fatalf("v1: %+v %v", a, err)
	}
	if _, err := DecodeTopicAssignment("t", []byte(`{"version":3,"partitions":{"x":[0]}}`)); err == nil {
		t.Error("non-numeric partition accepted")
	}
}

func TestPartitionStateKafkaJSON(t *testing.T) {
	kafka := `{"controller_epoch":7,"leader":2,"version":1,"leader_epoch":4,"isr":[2,3]}`
	s, err := DecodePartitionState([]byte(kafka), 11)
	if err != nil {
		t.Fatal(err)
	}
	want := PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{2, 3}, ControllerEpoch: 7, ZkVersion: 11}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("decoded %+v", s)
	}
	enc, _ := s.Encode()
	sameJSON(t, enc, kafka)
	s.LeaderRecoveryState = LeaderRecovering
	enc, _ = s.Encode()
	sameJSON(t, enc, `{"controller_epoch":7,"leader":2,"version":1,"leader_epoch":4,"isr":[2,3],"leader_recovery_state":1}`)
	if back, _ := DecodePartitionState(enc, 0); back.LeaderRecoveryState != LeaderRecovering {
		t.Fatal("recovery state lost")
	}
	if _, err := DecodePartitionState([]byte(`{"leader":1,"leader_recovery_state":5}`), 0); err == nil {
		t.Error("unknown recovery state accepted")
	}
}

func TestControllerKafkaJSON(t *testing.T) {
	kafka := `{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}`
	c, err := DecodeControllerRegistration([]byte(kafka))
	if err != nil || c.BrokerID != 1 || c.Timestamp != 1700000000000 || c.KRaftControllerEpoch != -1 {
		t.Fatalf("%+v %v", c, err)
	}
	enc, _ := c.Encode()
	sameJSON(t, enc, kafka)
	if c, err := DecodeControllerRegistration([]byte(`{"version":1,"brokerid":5,"timestamp":"1"}`)); err != nil || c.BrokerID != 5 {
		t.Fatalf("v1: %+v %v", c, err)
	}
	if e, err := DecodeControllerEpoch(EncodeControllerEpoch(42)); err != nil || e != 42 || string(EncodeControllerEpoch(42)) != "42" {
		t.Fatalf("epoch %d %v", e, err)
	}
	if _, err := DecodeControllerEpoch([]byte("x")); err == nil {
		t.Error("bad epoch accepted")
	}
}

func TestSmallZNodesKafkaJSON(t *testing.T) {
	enc, _ := EncodeConfigEntity(map[string]string{"cleanup.policy": "compact"})
	sameJSON(t, enc, `{"version":1,"config":{"cleanup.policy":"compact"}}`)
	if c, err := DecodeConfigEntity(enc); err != nil || c["cleanup.policy"] != "compact" {
		t.Fatalf("config %v %v", c, err)
	}
	enc, _ = EncodeConfigChange("topics/t1")
	sameJSON(t, enc, `{"version":2,"entity_path":"topics/t1"}`)
	if p, err := DecodeConfigChange(enc); err != nil || p != "topics/t1" {
		t.Fatalf("config change %q %v", p, err)
	}
	enc, _ = EncodeIsrChange([]TopicPartition{{"t", 0}, {"u", 3}})
	sameJSON(t, enc, `{"version":1,"partitions":[{"topic":"t","partition":0},{"topic":"u","partition":3}]}`)
	if tps, err := DecodeIsrChange(enc); err != nil || len(tps) != 2 || tps[1].String() != "u-3" {
		t.Fatalf("isr change %v %v", tps, err)
	}
	// Kafka's LogDirEventNotificationSequenceZNode.encode(2), byte for byte.
	enc, _ = EncodeLogDirEvent(2)
	if string(enc) != `{"version":1,"broker":2,"event":1}` {
		t.Fatalf("log dir event %s", enc)
	}
	if b, err := DecodeLogDirEvent(enc); err != nil || b != 2 {
		t.Fatalf("log dir event %d %v", b, err)
	}
	if _, err := DecodeLogDirEvent([]byte(`{"version":1,"event":1}`)); err == nil {
		t.Fatal("log dir event without broker decoded")
	}
	enc, _ = EncodeReassignments([]Reassignment{{"t", 1, []int32{3, 4}}})
	sameJSON(t, enc, `{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[3,4]}]}`)
	if rs, err := DecodeReassignments(enc); err != nil || len(rs) != 1 || rs[0].Replicas[1] != 4 {
		t.Fatalf("reassign %v %v", rs, err)
	}
	enc, _ = EncodeClusterID("vGdSmd5TRNGtIjaeTqjc-A")
	sameJSON(t, enc, `{"version":"1","id":"vGdSmd5TRNGtIjaeTqjc-A"}`)
	if id, err := DecodeClusterID(enc); err != nil || id != "vGdSmd5TRNGtIjaeTqjc-A" {
		t.Fatalf("cluster id %q %v", id, err)
	}
	enc, _ = ProducerIDBlock{BrokerID: 1, BlockStart: 1000, BlockEnd: 1999}.Encode()
	sameJSON(t, enc, `{"version":1,"broker":1,"block_start":"1000","block_end":"1999"}`)
	if b, err := DecodeProducerIDBlock(enc); err != nil || b.BlockEnd != 1999 {
		t.Fatalf("pid block %+v %v", b, err)
	}
}

func TestPaths(t *testing.T) {
	for got, want := range map[string]string{
		BrokerPath(3):              "/brokers/ids/3",
		PartitionStatePath("t", 2): "/brokers/topics/t/partitions/2/state",
		TopicConfigPath("t"):       "/config/topics/t",
		DeleteTopicPath("t"):       "/admin/delete_topics/t",
		IsrChangeSeqPath():         "/isr_change_notification/isr_change_",
		ConfigChangeSeqPath():      "/config/changes/config_change_",
		LogDirEventSeqPath():       "/log_dir_event_notification/log_dir_event_",
		SequenceNumber("log_dir_event_0000000004", LogDirEventSeqPrefix): "0000000004",
		SequenceNumber("isr_change_0000000012", IsrChangeSeqPrefix):      "0000000012",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

func FuzzDecoders(f *testing.F) {
	f.Add([]byte(`{"version":5,"endpoints":["PLAINTEXT://h:1"],"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"}}`))
	f.Add([]byte(`{"partitions":{"0":[1]},"version":3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeBrokerRegistration(0, b)
		_, _ = DecodeTopicAssignment("t", b)
		_, _ = DecodePartitionState(b, 0)
		_, _ = DecodeControllerRegistration(b)
		_, _ = DecodeIsrChange(b)
		_, _ = DecodeLogDirEvent(b)
		_, _ = DecodeConfigEntity(b)
	})
}

// The znodes are byte for byte what Kafka 3.9 writes (read from a Kafka
// 3.9 cluster's ZooKeeper): '<', '>' and '&' are not escaped as Go's
// json.Marshal escapes them (\u003c), so the cluster default's change
// notification names brokers/<default>.
func TestZNodesKafkaBytes(t *testing.T) {
	enc, err := EncodeConfigChange("brokers/<default>")
	if want := `{"version":2,"entity_path":"brokers/<default>"}`; err != nil || string(enc) != want {
		t.Errorf("config change of the cluster default: %s %v, want %s", enc, err, want)
	}
	enc, err = EncodeConfigEntity(map[string]string{"message.max.bytes": "1400000"})
	if want := `{"version":1,"config":{"message.max.bytes":"1400000"}}`; err != nil || string(enc) != want {
		t.Errorf("config entity: %s %v, want %s", enc, err, want)
	}
	enc, err = EncodeConfigEntity(map[string]string{"k": "a<b>&c"})
	if want := `{"version":1,"config":{"k":"a<b>&c"}}`; err != nil || string(enc) != want {
		t.Errorf("config entity with <>&: %s %v, want %s", enc, err, want)
	}
}
