package config

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterConfig is the cluster-mode part of the broker config: ZooKeeper,
// replication, leader election and controlled shutdown, Kafka's names and
// defaults. It is inert on a single node (ZookeeperConnect empty); the
// broker maps it into zkclient.Config and zkcontroller.Config (broker root,
// cluster.go) and into the replica manager, in one place each.
type ClusterConfig struct {
	// ZookeeperConnect is zookeeper.connect ("host:port[,...][/chroot]");
	// empty means a single node.
	ZookeeperConnect string
	// ZookeeperSessionTimeout is zookeeper.session.timeout.ms (18000).
	ZookeeperSessionTimeout time.Duration
	// ZookeeperConnectionTimeout is zookeeper.connection.timeout.ms (unset:
	// the session timeout, as Kafka).
	ZookeeperConnectionTimeout time.Duration

	// ReplicaLagTimeMax is replica.lag.time.max.ms (30000): a follower that
	// has not caught up for this long leaves the ISR.
	ReplicaLagTimeMax time.Duration
	// ReplicaFetchMaxBytes is replica.fetch.max.bytes (1048576).
	ReplicaFetchMaxBytes int32
	// ReplicaFetchWaitMax is replica.fetch.wait.max.ms (500).
	ReplicaFetchWaitMax time.Duration
	// ReplicaFetchMinBytes is replica.fetch.min.bytes (1).
	ReplicaFetchMinBytes int32
	// NumReplicaFetchers is num.replica.fetchers (1).
	NumReplicaFetchers int32
	// ReplicaSocketTimeout is replica.socket.timeout.ms (30000).
	ReplicaSocketTimeout time.Duration

	// UncleanLeaderElection is unclean.leader.election.enable (false).
	UncleanLeaderElection bool
	// AutoLeaderRebalance is auto.leader.rebalance.enable (true), checked
	// every LeaderImbalanceCheckInterval
	// (leader.imbalance.check.interval.seconds, 300) past
	// LeaderImbalancePercent (leader.imbalance.per.broker.percentage, 10).
	AutoLeaderRebalance          bool
	LeaderImbalanceCheckInterval time.Duration
	LeaderImbalancePercent       int32

	// ControlledShutdown is controlled.shutdown.enable (true): on SIGTERM
	// the broker asks the controller to move its leaderships away, at most
	// ControlledShutdownMaxRetries times (controlled.shutdown.max.retries,
	// 3), ControlledShutdownRetryBackoff apart
	// (controlled.shutdown.retry.backoff.ms, 5000).
	ControlledShutdown             bool
	ControlledShutdownMaxRetries   int32
	ControlledShutdownRetryBackoff time.Duration

	// OffsetsTopicReplicationFactor is offsets.topic.replication.factor
	// and TxnStateReplicationFactor transaction.state.log.replication.factor
	// (3 each); InternalReplicationFactor caps them at the live brokers.
	OffsetsTopicReplicationFactor int16
	TxnStateReplicationFactor     int16
	// TxnStateMinISR is transaction.state.log.min.isr (2).
	TxnStateMinISR int32
	// ShareStateReplicationFactor is
	// share.coordinator.state.topic.replication.factor (3, capped at the
	// live brokers) and ShareStateMinISR share.coordinator.state.topic.min.isr
	// (2): __share_group_state's.
	ShareStateReplicationFactor int16
	ShareStateMinISR            int32
	// InterBrokerProtocol is security.inter.broker.protocol (PLAINTEXT),
	// which names the inter-broker listener when inter.broker.listener.name
	// is not set (InterBrokerListener).
	InterBrokerProtocol string
	// IBP is inter.broker.protocol.version (3.9, Kafka 3.9's default):
	// the versions of the requests this broker sends other brokers, as a
	// ZooKeeper-mode Kafka broker derives them (protocol.IBP).
	IBP protocol.IBP
	// Rack is broker.rack ("" none).
	Rack string
}

// Enabled reports cluster mode: zookeeper.connect is set.
func (c ClusterConfig) Enabled() bool { return c.ZookeeperConnect != "" }

// InternalReplicationFactor caps an internal topic's configured replication
// factor at the live brokers, as Kafka does when it creates
// __consumer_offsets and __transaction_state.
func InternalReplicationFactor(configured int16, liveBrokers int) int16 {
	if liveBrokers > 0 && int(configured) > liveBrokers {
		return int16(liveBrokers)
	}
	return configured
}

// InterBrokerListener is the listener brokers and the controller talk on:
// inter.broker.listener.name, or else the first listener whose security
// protocol is security.inter.broker.protocol (Kafka: the listener named like
// the protocol), or else the first listener.
func (c Config) InterBrokerListener() Listener {
	name := c.InterBrokerListenerName
	if name == "" {
		proto := c.Cluster.InterBrokerProtocol
		if proto == "" {
			proto = "PLAINTEXT"
		}
		for _, l := range c.AdvertisedListeners {
			if l.Name == proto {
				return l
			}
		}
		for _, l := range c.AdvertisedListeners {
			if l.SecurityProtocol == proto {
				return l
			}
		}
		if len(c.AdvertisedListeners) > 0 {
			return c.AdvertisedListeners[0]
		}
		return Listener{}
	}
	for _, l := range c.AdvertisedListeners {
		if l.Name == name {
			return l
		}
	}
	return Listener{Name: name}
}

func msProp(set func(c *Config, d time.Duration), min int64) func(*Config, string) error {
	return intProp(func(c *Config, v int64) { set(c, time.Duration(v)*time.Millisecond) }, min, math.MaxInt32)
}

// clusterProps are the cluster-mode properties, merged into props.
var clusterProps = map[string]prop{
	"zookeeper.connect": {"", kmsg.ConfigTypeString, "The ZooKeeper connection string (host:port[,host:port...][/chroot]); set, the broker runs in a cluster.", func(c *Config, v string) error {
		c.Cluster.ZookeeperConnect = strings.TrimSpace(v)
		return nil
	}},
	"zookeeper.session.timeout.ms":    {"18000", kmsg.ConfigTypeInt, "The ZooKeeper session timeout.", msProp(func(c *Config, d time.Duration) { c.Cluster.ZookeeperSessionTimeout = d }, 1)},
	"zookeeper.connection.timeout.ms": {"", kmsg.ConfigTypeInt, "How long to wait for a ZooKeeper session at start-up (unset: the session timeout).", msProp(func(c *Config, d time.Duration) { c.Cluster.ZookeeperConnectionTimeout = d }, 1)},
	"replica.lag.time.max.ms":         {"30000", kmsg.ConfigTypeLong, "A follower not caught up for this long leaves the ISR.", msProp(func(c *Config, d time.Duration) { c.Cluster.ReplicaLagTimeMax = d }, 1)},
	"replica.fetch.max.bytes":         {"1048576", kmsg.ConfigTypeInt, "The bytes a follower fetches per partition at most.", intProp(func(c *Config, v int64) { c.Cluster.ReplicaFetchMaxBytes = int32(v) }, 0, math.MaxInt32)},
	"replica.fetch.wait.max.ms":       {"500", kmsg.ConfigTypeInt, "How long a follower's fetch waits at the leader for data.", msProp(func(c *Config, d time.Duration) { c.Cluster.ReplicaFetchWaitMax = d }, 0)},
	"replica.fetch.min.bytes":         {"1", kmsg.ConfigTypeInt, "The bytes a follower's fetch waits for at least.", intProp(func(c *Config, v int64) { c.Cluster.ReplicaFetchMinBytes = int32(v) }, 0, math.MaxInt32)},
	"num.replica.fetchers":            {"1", kmsg.ConfigTypeInt, "Fetcher goroutines per leader broker.", intProp(func(c *Config, v int64) { c.Cluster.NumReplicaFetchers = int32(v) }, 1, 1024)},
	"replica.socket.timeout.ms":       {"30000", kmsg.ConfigTypeInt, "The socket timeout of inter-broker requests.", msProp(func(c *Config, d time.Duration) { c.Cluster.ReplicaSocketTimeout = d }, 1)},
	"unclean.leader.election.enable":  {"false", kmsg.ConfigTypeBoolean, "Whether a replica outside the ISR may become leader when no ISR member is left (data loss).", boolProp(func(c *Config, v bool) { c.Cluster.UncleanLeaderElection = v })},
	"auto.leader.rebalance.enable":    {"true", kmsg.ConfigTypeBoolean, "Whether the controller moves leadership back to preferred replicas.", boolProp(func(c *Config, v bool) { c.Cluster.AutoLeaderRebalance = v })},
	"leader.imbalance.check.interval.seconds": {"300", kmsg.ConfigTypeLong, "How often the controller checks leader imbalance.", intProp(func(c *Config, v int64) {
		c.Cluster.LeaderImbalanceCheckInterval = time.Duration(v) * time.Second
	}, 1, math.MaxInt32)},
	"leader.imbalance.per.broker.percentage": {"10", kmsg.ConfigTypeInt, "The leader imbalance per broker that triggers a rebalance.", intProp(func(c *Config, v int64) { c.Cluster.LeaderImbalancePercent = int32(v) }, 0, 100)},
	"controlled.shutdown.enable":             {"true", kmsg.ConfigTypeBoolean, "Whether a stopping broker first moves its leaderships away.", boolProp(func(c *Config, v bool) { c.Cluster.ControlledShutdown = v })},
	"controlled.shutdown.max.retries":        {"3", kmsg.ConfigTypeInt, "How often a controlled shutdown is retried.", intProp(func(c *Config, v int64) { c.Cluster.ControlledShutdownMaxRetries = int32(v) }, 0, math.MaxInt32)},
	"controlled.shutdown.retry.backoff.ms":   {"5000", kmsg.ConfigTypeLong, "The wait between controlled shutdown attempts.", msProp(func(c *Config, d time.Duration) { c.Cluster.ControlledShutdownRetryBackoff = d }, 0)},
	"security.inter.broker.protocol": {"PLAINTEXT", kmsg.ConfigTypeString, "The security protocol between brokers (names the inter-broker listener without inter.broker.listener.name).", func(c *Config, v string) error {
		v = strings.ToUpper(strings.TrimSpace(v))
		switch v {
		case "PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL":
			c.Cluster.InterBrokerProtocol = v
			return nil
		}
		return fmt.Errorf("unknown security protocol %q", v)
	}},
	"inter.broker.protocol.version": {protocol.DefaultIBP.String(), kmsg.ConfigTypeString, "The inter-broker protocol of a ZooKeeper-mode Kafka 3.0 to 3.9 cluster: the versions of the requests brokers send each other.", func(c *Config, v string) error {
		ibp, err := protocol.ParseIBP(v)
		c.Cluster.IBP = ibp
		return err
	}},
	"broker.rack": {"", kmsg.ConfigTypeString, "The rack of the broker, for rack-aware replica assignment.", func(c *Config, v string) error {
		c.Cluster.Rack = strings.TrimSpace(v)
		return nil
	}},
	// These two were parsed and ignored before cluster mode.
	"offsets.topic.replication.factor":                 {"3", kmsg.ConfigTypeShort, "The replication factor of the offsets topic (capped at the live brokers).", intProp(func(c *Config, v int64) { c.Cluster.OffsetsTopicReplicationFactor = int16(v) }, 1, math.MaxInt16)},
	"transaction.state.log.replication.factor":         {"3", kmsg.ConfigTypeShort, "The replication factor of the transaction topic (capped at the live brokers).", intProp(func(c *Config, v int64) { c.Cluster.TxnStateReplicationFactor = int16(v) }, 1, math.MaxInt16)},
	"transaction.state.log.min.isr":                    {"2", kmsg.ConfigTypeInt, "min.insync.replicas of the transaction topic.", intProp(func(c *Config, v int64) { c.Cluster.TxnStateMinISR = int32(v) }, 1, math.MaxInt32)},
	"share.coordinator.state.topic.replication.factor": {"3", kmsg.ConfigTypeShort, "The replication factor of the share-group state topic (capped at the live brokers).", intProp(func(c *Config, v int64) { c.Cluster.ShareStateReplicationFactor = int16(v) }, 1, math.MaxInt16)},
	"share.coordinator.state.topic.min.isr":            {"2", kmsg.ConfigTypeShort, "min.insync.replicas of the share-group state topic.", intProp(func(c *Config, v int64) { c.Cluster.ShareStateMinISR = int32(v) }, 1, math.MaxInt16)},
}

func init() {
	for k, p := range clusterProps {
		props[k] = p
	}
}
