package protocol

import (
	"fmt"
	"strings"
)

// IBP is an inter.broker.protocol.version of a ZooKeeper-mode cluster:
// Kafka 3.0 to 3.9's MetadataVersions, in order. In ZooKeeper mode Kafka
// brokers do not negotiate the versions of the requests they send each
// other (Fetch, OffsetForLeaderEpoch, ListOffsets from a follower,
// LeaderAndIsr, UpdateMetadata, StopReplica from the controller); they
// derive them from this setting, and so does kbroker, so that a cluster
// of both kinds speaks one protocol during a rolling upgrade.
type IBP int

// The IBPs kbroker accepts, oldest first (Kafka's MetadataVersion names).
// The zero IBP is unset and means DefaultIBP.
const (
	IBP30IV0 IBP = iota + 1
	IBP30IV1
	IBP31IV0
	IBP32IV0
	IBP33IV0
	IBP33IV1
	IBP33IV2
	IBP33IV3
	IBP34IV0
	IBP35IV0
	IBP35IV1
	IBP35IV2
	IBP36IV0
	IBP36IV1
	IBP36IV2
	IBP37IV0
	IBP37IV1
	IBP37IV2
	IBP37IV3
	IBP37IV4
	IBP38IV0
	IBP39IV0
)

// DefaultIBP is Kafka 3.9's default inter.broker.protocol.version.
const DefaultIBP = IBP39IV0

// ibpNames are the IBPs' names, indexed by IBP-1.
var ibpNames = [...]string{
	"3.0-IV0", "3.0-IV1", "3.1-IV0", "3.2-IV0",
	"3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0",
	"3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
	"3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
}

// orDefault is v, or DefaultIBP for the zero IBP.
func (v IBP) orDefault() IBP {
	if v == 0 {
		return DefaultIBP
	}
	return v
}

// String is the IBP's name, e.g. "3.9-IV0".
func (v IBP) String() string {
	v = v.orDefault()
	if v < 1 || int(v) > len(ibpNames) {
		return fmt.Sprintf("IBP(%d)", int(v))
	}
	return ibpNames[v-1]
}

// ParseIBP reads an inter.broker.protocol.version as Kafka does: a full
// name ("3.5-IV1"), a release ("3.5", its latest IV) or a release with a
// patch number ("3.5.2", the same). Versions before 3.0 are refused:
// kbroker's brokers speak Kafka 3.x's inter-broker protocol only.
func ParseIBP(s string) (IBP, error) {
	s = strings.TrimSpace(s)
	release, iv, hasIV := strings.Cut(s, "-")
	if parts := strings.Split(release, "."); len(parts) == 3 && !hasIV {
		release = parts[0] + "." + parts[1]
	}
	found := IBP(0)
	for i, n := range ibpNames {
		r, v, _ := strings.Cut(n, "-")
		if r == release && (!hasIV || v == iv) {
			found = IBP(i + 1) // the last match: a release means its latest IV
		}
	}
	if found == 0 {
		return 0, fmt.Errorf("inter.broker.protocol.version %q: not a Kafka 3.0 to 3.9 version (3.0 … 3.9, or e.g. 3.5-IV1)", s)
	}
	return found, nil
}

// FetchVersion is the Fetch version a follower sends (Kafka's
// MetadataVersion.fetchRequestVersion).
func (v IBP) FetchVersion() int16 {
	v = v.orDefault()
	switch {
	case v >= IBP39IV0:
		return 17
	case v >= IBP37IV4:
		return 16
	case v >= IBP35IV1:
		return 15
	case v >= IBP35IV0:
		return 14
	case v >= IBP31IV0:
		return 13
	}
	return 12
}

// OffsetForLeaderEpochVersion is the OffsetForLeaderEpoch version a
// follower sends: 4 from Kafka 2.8 on, so in every 3.x.
func (v IBP) OffsetForLeaderEpochVersion() int16 { return 4 }

// ListOffsetsVersion is the ListOffsets version a follower sends (Kafka's
// listOffsetRequestVersion).
func (v IBP) ListOffsetsVersion() int16 {
	v = v.orDefault()
	switch {
	case v >= IBP39IV0:
		return 9
	case v >= IBP35IV0:
		return 8
	case v >= IBP30IV1:
		return 7
	}
	return 6
}

// LeaderAndISRVersion, UpdateMetadataVersion and StopReplicaVersion are
// the versions a ZooKeeper-mode controller sends (Kafka's
// ControllerChannelManager).
func (v IBP) LeaderAndISRVersion() int16 {
	v = v.orDefault()
	switch {
	case v >= IBP34IV0:
		return 7
	case v >= IBP32IV0:
		return 6
	}
	return 5
}

// UpdateMetadataVersion: see LeaderAndISRVersion.
func (v IBP) UpdateMetadataVersion() int16 {
	v = v.orDefault()
	if v >= IBP34IV0 {
		return 8
	}
	return 7
}

// StopReplicaVersion: see LeaderAndISRVersion.
func (v IBP) StopReplicaVersion() int16 {
	v = v.orDefault()
	if v >= IBP34IV0 {
		return 4
	}
	return 3
}
