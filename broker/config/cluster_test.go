package config

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol"
)

func TestClusterDefaultsAreKafkas(t *testing.T) {
	cfg, _, err := ParseConfig(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cluster
	if c.Enabled() {
		t.Error("cluster mode without zookeeper.connect")
	}
	want := ClusterConfig{
		ZookeeperSessionTimeout: 18 * time.Second, ReplicaLagTimeMax: 30 * time.Second,
		ReplicaFetchMaxBytes: 1 << 20, ReplicaFetchWaitMax: 500 * time.Millisecond, ReplicaFetchMinBytes: 1,
		NumReplicaFetchers: 1, ReplicaSocketTimeout: 30 * time.Second,
		AutoLeaderRebalance: true, LeaderImbalanceCheckInterval: 300 * time.Second, LeaderImbalancePercent: 10,
		ControlledShutdown: true, ControlledShutdownMaxRetries: 3, ControlledShutdownRetryBackoff: 5 * time.Second,
		OffsetsTopicReplicationFactor: 3, TxnStateReplicationFactor: 3, TxnStateMinISR: 2, ShareStateReplicationFactor: 3, ShareStateMinISR: 2, InterBrokerProtocol: "PLAINTEXT", IBP: protocol.IBP39IV0,
	}
	if c != want {
		t.Errorf("defaults\n got %+v\nwant %+v", c, want)
	}
	if l := cfg.InterBrokerListener(); l.Name != "PLAINTEXT" {
		t.Errorf("inter-broker listener %+v", l)
	}
}

func TestClusterProperties(t *testing.T) {
	cfg, unknown, err := ParseConfig(map[string]string{
		"zookeeper.connect":                "127.0.0.1:2181,127.0.0.1:2182/kafka",
		"zookeeper.session.timeout.ms":     "6000",
		"zookeeper.connection.timeout.ms":  "1000",
		"unclean.leader.election.enable":   "true",
		"listeners":                        "CLIENT://127.0.0.1:9092,REPLICATION://127.0.0.1:9093",
		"listener.security.protocol.map":   "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT",
		"inter.broker.listener.name":       "REPLICATION",
		"offsets.topic.replication.factor": "1",
	})
	if err != nil || len(unknown) != 0 {
		t.Fatal(err, unknown)
	}
	c := cfg.Cluster
	if !c.Enabled() || c.ZookeeperSessionTimeout != 6*time.Second || c.ZookeeperConnectionTimeout != time.Second || !c.UncleanLeaderElection || c.OffsetsTopicReplicationFactor != 1 {
		t.Errorf("%+v", c)
	}
	if l := cfg.InterBrokerListener(); l.Name != "REPLICATION" || l.Port != 9093 {
		t.Errorf("inter-broker listener %+v", l)
	}
	if _, _, err := ParseConfig(map[string]string{"security.inter.broker.protocol": "SMOKE"}); err == nil {
		t.Error("unknown security protocol accepted")
	}
	if got := InternalReplicationFactor(3, 2); got != 2 {
		t.Errorf("RF 3 over 2 live brokers = %d, want 2", got)
	}
	if got := InternalReplicationFactor(3, 5); got != 3 {
		t.Errorf("RF 3 over 5 live brokers = %d, want 3", got)
	}
}
