package zkdata

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// TopicAssignment is /brokers/topics/<topic>: the replicas of every
// partition, the topic id and any reassignment in progress.
type TopicAssignment struct {
	// TopicID is zero when the znode has none (written before Kafka 2.8).
	TopicID [16]byte
	// Partitions maps a partition to its replicas, the first being the
	// preferred leader.
	Partitions map[int32][]int32
	// AddingReplicas and RemovingReplicas are set during a reassignment
	// (KIP-455); partitions without one are absent.
	AddingReplicas   map[int32][]int32
	RemovingReplicas map[int32][]int32
}

type topicJSON struct {
	Version          int                `json:"version"`
	Partitions       map[string][]int32 `json:"partitions"`
	AddingReplicas   map[string][]int32 `json:"adding_replicas"`
	RemovingReplicas map[string][]int32 `json:"removing_replicas"`
	TopicID          string             `json:"topic_id,omitempty"`
}

// Encode writes version 3, as Kafka 3.9: partitions, adding_replicas and
// removing_replicas always present (empty objects when there is nothing),
// topic_id when set.
func (t TopicAssignment) Encode() ([]byte, error) {
	j := topicJSON{
		Version:          topicZNodeVersion,
		Partitions:       intKeys(t.Partitions),
		AddingReplicas:   intKeys(t.AddingReplicas),
		RemovingReplicas: intKeys(t.RemovingReplicas),
	}
	if t.TopicID != ([16]byte{}) {
		j.TopicID = EncodeUUID(t.TopicID)
	}
	return Marshal(j)
}

// DecodeTopicAssignment parses /brokers/topics/<topic> of any version.
func DecodeTopicAssignment(topic string, data []byte) (TopicAssignment, error) {
	var j topicJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return TopicAssignment{}, fmt.Errorf("topic %s assignment %q: %w", topic, data, err)
	}
	var t TopicAssignment
	var err error
	if j.TopicID != "" {
		if t.TopicID, err = DecodeUUID(j.TopicID); err != nil {
			return TopicAssignment{}, fmt.Errorf("topic %s: %w", topic, err)
		}
	}
	if t.Partitions, err = parseIntKeys(j.Partitions); err != nil {
		return TopicAssignment{}, fmt.Errorf("topic %s partitions: %w", topic, err)
	}
	if t.AddingReplicas, err = parseIntKeys(j.AddingReplicas); err != nil {
		return TopicAssignment{}, fmt.Errorf("topic %s adding_replicas: %w", topic, err)
	}
	if t.RemovingReplicas, err = parseIntKeys(j.RemovingReplicas); err != nil {
		return TopicAssignment{}, fmt.Errorf("topic %s removing_replicas: %w", topic, err)
	}
	return t, nil
}

// PartitionIDs returns the topic's partitions in ascending order.
func (t TopicAssignment) PartitionIDs() []int32 {
	ids := make([]int32, 0, len(t.Partitions))
	for p := range t.Partitions {
		ids = append(ids, p)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func intKeys(m map[int32][]int32) map[string][]int32 {
	out := make(map[string][]int32, len(m))
	for k, v := range m {
		if v == nil {
			v = []int32{}
		}
		out[strconv.Itoa(int(k))] = v
	}
	return out
}

func parseIntKeys(m map[string][]int32) (map[int32][]int32, error) {
	out := make(map[int32][]int32, len(m))
	for k, v := range m {
		p, err := ParsePartitionID(k)
		if err != nil {
			return nil, err
		}
		out[p] = v
	}
	return out, nil
}

// EncodeUUID is Kafka's Uuid.toString: URL-safe base64 without padding.
func EncodeUUID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// DecodeUUID parses Kafka's Uuid string form.
func DecodeUUID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("uuid %q is not 16 bytes of URL-safe base64", s)
	}
	copy(id[:], b)
	return id, nil
}
