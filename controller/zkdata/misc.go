package zkdata

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ControllerRegistration is the ephemeral /controller: who is controller.
type ControllerRegistration struct {
	BrokerID  int32
	Timestamp int64
	// KRaftControllerEpoch is -1 in ZooKeeper mode (it is set only during a
	// KRaft migration, which kbroker does not do).
	KRaftControllerEpoch int32
}

type controllerJSON struct {
	Version              int    `json:"version"`
	BrokerID             int32  `json:"brokerid"`
	Timestamp            string `json:"timestamp"`
	KRaftControllerEpoch *int32 `json:"kraftControllerEpoch,omitempty"`
}

// Encode writes version 2 with kraftControllerEpoch, as Kafka 3.9.
func (c ControllerRegistration) Encode() ([]byte, error) {
	k := c.KRaftControllerEpoch
	return Marshal(controllerJSON{
		Version: controllerZNodeVersion, BrokerID: c.BrokerID,
		Timestamp: strconv.FormatInt(c.Timestamp, 10), KRaftControllerEpoch: &k,
	})
}

// DecodeControllerRegistration parses /controller, versions 1 and 2.
func DecodeControllerRegistration(data []byte) (ControllerRegistration, error) {
	var j controllerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return ControllerRegistration{}, fmt.Errorf("controller znode %q: %w", data, err)
	}
	c := ControllerRegistration{BrokerID: j.BrokerID, KRaftControllerEpoch: -1}
	if j.KRaftControllerEpoch != nil {
		c.KRaftControllerEpoch = *j.KRaftControllerEpoch
	}
	if j.Timestamp != "" {
		ts, err := strconv.ParseInt(j.Timestamp, 10, 64)
		if err != nil {
			return ControllerRegistration{}, fmt.Errorf("controller znode timestamp %q: %w", j.Timestamp, err)
		}
		c.Timestamp = ts
	}
	return c, nil
}

// EncodeControllerEpoch writes /controller_epoch: the decimal epoch, no JSON.
func EncodeControllerEpoch(epoch int32) []byte { return []byte(strconv.Itoa(int(epoch))) }

// DecodeControllerEpoch parses /controller_epoch.
func DecodeControllerEpoch(data []byte) (int32, error) {
	e, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("controller epoch %q: %w", data, err)
	}
	return int32(e), nil
}

// EncodeConfigEntity writes /config/<type>/<name>: {"version":1,"config":{...}}.
func EncodeConfigEntity(config map[string]string) ([]byte, error) {
	if config == nil {
		config = map[string]string{}
	}
	return Marshal(struct {
		Version int               `json:"version"`
		Config  map[string]string `json:"config"`
	}{configEntityVersion, config})
}

// DecodeConfigEntity parses /config/<type>/<name>; empty data is an empty config.
func DecodeConfigEntity(data []byte) (map[string]string, error) {
	out := map[string]string{}
	if len(data) == 0 {
		return out, nil
	}
	var j struct {
		Config map[string]string `json:"config"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("config znode %q: %w", data, err)
	}
	for k, v := range j.Config {
		out[k] = v
	}
	return out, nil
}

// EncodeConfigChange writes a /config/changes/config_change_<seq> body:
// {"version":2,"entity_path":"topics/<topic>"}.
func EncodeConfigChange(entityPath string) ([]byte, error) {
	return Marshal(struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
	}{configChangeVersion, entityPath})
}

// DecodeConfigChange parses a config change notification (version 2) and
// returns its entity path.
func DecodeConfigChange(data []byte) (string, error) {
	var j struct {
		Version    int    `json:"version"`
		EntityPath string `json:"entity_path"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return "", fmt.Errorf("config change %q: %w", data, err)
	}
	if j.Version != configChangeVersion {
		return "", fmt.Errorf("config change %q: unsupported version %d", data, j.Version)
	}
	return j.EntityPath, nil
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// EncodeIsrChange writes an /isr_change_notification/isr_change_<seq> body.
func EncodeIsrChange(tps []TopicPartition) ([]byte, error) {
	if tps == nil {
		tps = []TopicPartition{}
	}
	return Marshal(struct {
		Version    int              `json:"version"`
		Partitions []TopicPartition `json:"partitions"`
	}{isrChangeVersion, tps})
}

// DecodeIsrChange parses an ISR change notification.
func DecodeIsrChange(data []byte) ([]TopicPartition, error) {
	var j struct {
		Partitions []TopicPartition `json:"partitions"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("isr change %q: %w", data, err)
	}
	return j.Partitions, nil
}

// LogDirFailureEvent is the only event of a log dir event notification
// (Kafka's LogDirEventNotificationSequenceZNode.LogDirFailureEvent): some
// of the broker's log directories went offline.
const LogDirFailureEvent = 1

// EncodeLogDirEvent writes a /log_dir_event_notification/log_dir_event_<seq>
// body for broker, Kafka 3.9's bytes: {"version":1,"broker":<id>,"event":1}.
func EncodeLogDirEvent(broker int32) ([]byte, error) {
	return Marshal(struct {
		Version int   `json:"version"`
		Broker  int32 `json:"broker"`
		Event   int   `json:"event"`
	}{logDirEventVersion, broker, LogDirFailureEvent})
}

// DecodeLogDirEvent parses a log dir event notification and returns the
// broker it names. Like Kafka it reads only "broker", which must be present.
func DecodeLogDirEvent(data []byte) (int32, error) {
	var j struct {
		Broker *int32 `json:"broker"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return 0, fmt.Errorf("log dir event %q: %w", data, err)
	}
	if j.Broker == nil {
		return 0, fmt.Errorf("log dir event %q: no broker", data)
	}
	return *j.Broker, nil
}

// Reassignment is one partition of the legacy /admin/reassign_partitions.
type Reassignment struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// EncodeReassignments writes /admin/reassign_partitions (version 1).
func EncodeReassignments(rs []Reassignment) ([]byte, error) {
	if rs == nil {
		rs = []Reassignment{}
	}
	return Marshal(struct {
		Version    int            `json:"version"`
		Partitions []Reassignment `json:"partitions"`
	}{reassignmentVersion, rs})
}

// DecodeReassignments parses /admin/reassign_partitions.
func DecodeReassignments(data []byte) ([]Reassignment, error) {
	var j struct {
		Partitions []Reassignment `json:"partitions"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("reassign_partitions %q: %w", data, err)
	}
	return j.Partitions, nil
}

// EncodeClusterID writes /cluster/id. Kafka writes the version as a string.
func EncodeClusterID(id string) ([]byte, error) {
	return Marshal(struct {
		Version string `json:"version"`
		ID      string `json:"id"`
	}{clusterIDVersion, id})
}

// DecodeClusterID parses /cluster/id.
func DecodeClusterID(data []byte) (string, error) {
	var j struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &j); err != nil || j.ID == "" {
		return "", fmt.Errorf("cluster id %q: not {\"version\":\"1\",\"id\":...}", data)
	}
	return j.ID, nil
}

// ProducerIDBlock is /latest_producer_id_block: the last block of producer
// ids handed to a broker.
type ProducerIDBlock struct {
	BrokerID   int32
	BlockStart int64
	BlockEnd   int64 // inclusive
}

// Encode writes version 1; Kafka writes the bounds as strings.
func (p ProducerIDBlock) Encode() ([]byte, error) {
	return Marshal(struct {
		Version    int    `json:"version"`
		Broker     int32  `json:"broker"`
		BlockStart string `json:"block_start"`
		BlockEnd   string `json:"block_end"`
	}{producerIDBlockVersion, p.BrokerID, strconv.FormatInt(p.BlockStart, 10), strconv.FormatInt(p.BlockEnd, 10)})
}

// DecodeProducerIDBlock parses /latest_producer_id_block.
func DecodeProducerIDBlock(data []byte) (ProducerIDBlock, error) {
	var j struct {
		Broker     int32  `json:"broker"`
		BlockStart string `json:"block_start"`
		BlockEnd   string `json:"block_end"`
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return ProducerIDBlock{}, fmt.Errorf("producer id block %q: %w", data, err)
	}
	start, err1 := strconv.ParseInt(j.BlockStart, 10, 64)
	end, err2 := strconv.ParseInt(j.BlockEnd, 10, 64)
	if err1 != nil || err2 != nil || end < start {
		return ProducerIDBlock{}, fmt.Errorf("producer id block %q: bad bounds", data)
	}
	return ProducerIDBlock{BrokerID: j.Broker, BlockStart: start, BlockEnd: end}, nil
}
