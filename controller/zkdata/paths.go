// Package zkdata is Kafka 3.9's ZooKeeper layout: the znode paths a
// ZooKeeper-mode cluster uses and the JSON each one holds, as typed Go values
// with encoders and decoders (kafka/zk/ZkData.scala is the reference). It does
// no I/O, so an operator's zkCli.sh, Kafka's own tools and kbroker all read
// the same bytes.
//
// Encoders write exactly the keys and versions Kafka 3.9 writes; decoders
// accept what Kafka accepts (older versions, absent optional keys) and return
// an error, never a panic, for anything else.
package zkdata

import (
	"fmt"
	"strconv"
	"strings"
)

// Top-level znodes.
const (
	ControllerPath         = "/controller"
	ControllerEpochPath    = "/controller_epoch"
	BrokersPath            = "/brokers"
	BrokerIDsPath          = "/brokers/ids"
	TopicsPath             = "/brokers/topics"
	BrokerSeqIDPath        = "/brokers/seqid"
	ConfigPath             = "/config"
	ConfigChangesPath      = "/config/changes"
	AdminPath              = "/admin"
	DeleteTopicsPath       = "/admin/delete_topics"
	ReassignPartitionsPath = "/admin/reassign_partitions"
	ClusterPath            = "/cluster"
	ClusterIDPath          = "/cluster/id"
	IsrChangePath          = "/isr_change_notification"
	LogDirEventPath        = "/log_dir_event_notification"
	ProducerIDBlockPath    = "/latest_producer_id_block"
	ConsumersPath          = "/consumers"
	ConfigChangeSeqPrefix  = "config_change_"
	IsrChangeSeqPrefix     = "isr_change_"
	LogDirEventSeqPrefix   = "log_dir_event_"
	ConfigEntityTopics     = "topics"
	ConfigEntityBrokers    = "brokers"
	ConfigEntityClients    = "clients"
	ConfigEntityUsers      = "users"
	ConfigEntityIPs        = "ips"
	controllerZNodeVersion = 2
	topicZNodeVersion      = 3
	partitionStateVersion  = 1
	configEntityVersion    = 1
	configChangeVersion    = 2
	isrChangeVersion       = 1
	logDirEventVersion     = 1
	reassignmentVersion    = 1
	producerIDBlockVersion = 1
	clusterIDVersion       = "1"
)

// PersistentPaths are the znodes Kafka creates at start-up
// (ZkData.PersistentZkPaths): every broker makes sure they exist, so watches
// on their children can be set before anything is written under them.
var PersistentPaths = []string{
	ConsumersPath,
	BrokerIDsPath,
	TopicsPath,
	ConfigChangesPath,
	DeleteTopicsPath,
	BrokerSeqIDPath,
	IsrChangePath,
	ProducerIDBlockPath,
	LogDirEventPath,
	ConfigPath + "/" + ConfigEntityTopics,
	ConfigPath + "/" + ConfigEntityClients,
	ConfigPath + "/" + ConfigEntityUsers,
	ConfigPath + "/" + ConfigEntityBrokers,
	ConfigPath + "/" + ConfigEntityIPs,
}

// BrokerPath is /brokers/ids/<id>, an ephemeral znode owned by that broker's session.
func BrokerPath(id int32) string { return BrokerIDsPath + "/" + strconv.Itoa(int(id)) }

// TopicPath is /brokers/topics/<topic>: the replica assignment.
func TopicPath(topic string) string { return TopicsPath + "/" + topic }

// PartitionsPath is /brokers/topics/<topic>/partitions.
func PartitionsPath(topic string) string { return TopicPath(topic) + "/partitions" }

// PartitionPath is /brokers/topics/<topic>/partitions/<p>.
func PartitionPath(topic string, p int32) string {
	return PartitionsPath(topic) + "/" + strconv.Itoa(int(p))
}

// PartitionStatePath is /brokers/topics/<topic>/partitions/<p>/state.
func PartitionStatePath(topic string, p int32) string { return PartitionPath(topic, p) + "/state" }

// TopicConfigPath is /config/topics/<topic>.
func TopicConfigPath(topic string) string { return ConfigEntityPath(ConfigEntityTopics, topic) }

// ConfigEntityPath is /config/<type>/<name>.
func ConfigEntityPath(entityType, name string) string {
	return ConfigPath + "/" + entityType + "/" + name
}

// DeleteTopicPath is /admin/delete_topics/<topic>, the marker a DeleteTopics
// request leaves for the controller.
func DeleteTopicPath(topic string) string { return DeleteTopicsPath + "/" + topic }

// ConfigChangeSeqPath is the prefix of a sequential /config/changes/config_change_ znode.
func ConfigChangeSeqPath() string { return ConfigChangesPath + "/" + ConfigChangeSeqPrefix }

// IsrChangeSeqPath is the prefix of a sequential /isr_change_notification/isr_change_ znode.
func IsrChangeSeqPath() string { return IsrChangePath + "/" + IsrChangeSeqPrefix }

// LogDirEventSeqPath is the prefix of a sequential
// /log_dir_event_notification/log_dir_event_ znode.
func LogDirEventSeqPath() string { return LogDirEventPath + "/" + LogDirEventSeqPrefix }

// ParseBrokerID parses a child name of /brokers/ids.
func ParseBrokerID(child string) (int32, error) {
	id, err := strconv.ParseInt(child, 10, 32)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("broker znode %q is not a broker id", child)
	}
	return int32(id), nil
}

// ParsePartitionID parses a child name of /brokers/topics/<t>/partitions.
func ParsePartitionID(child string) (int32, error) {
	p, err := strconv.ParseInt(child, 10, 32)
	if err != nil || p < 0 {
		return 0, fmt.Errorf("partition znode %q is not a partition id", child)
	}
	return int32(p), nil
}

// SequenceNumber returns the sequence suffix of a sequential znode name
// (isr_change_0000000003 → "0000000003").
func SequenceNumber(name, prefix string) string {
	if i := strings.LastIndex(name, prefix); i >= 0 {
		return name[i+len(prefix):]
	}
	return name
}
