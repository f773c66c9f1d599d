package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// kmsg (v1.15) writes and reads StopReplica v4's isKRaftController (KIP-866)
// after ControllerEpoch; Kafka's schema (StopReplicaRequest.json, as every
// Kafka 3.4+ broker and controller sends it) has it right after
// ControllerId, as in LeaderAndIsr v7 and UpdateMetadata v8, which kmsg
// orders correctly. Between kbroker brokers either order would do; with a
// Kafka broker on the other side the difference shifts ControllerEpoch by
// a byte: a Kafka broker read kbroker's controller epoch 1 as 256 and then
// refused every later request of that controller as stale, and kbroker
// read a Kafka controller's epoch as 0. StopReplica v4 bodies are
// therefore reordered between kmsg's layout and the wire's, in place:
// bytes 4..8 hold ControllerEpoch (4) then the flag (1) in kmsg's layout,
// the flag then ControllerEpoch on the wire.

// stopReplicaFlagEnd is the end of the reordered region.
const stopReplicaFlagEnd = 9

// needsStopReplicaOrder reports whether a body of key at version is one
// whose order kmsg gets wrong.
func needsStopReplicaOrder(key, version int16) bool {
	return key == int16(kmsg.StopReplica) && version >= 4
}

// StopReplicaToWire turns the encoding kmsg made of a request (key,
// version) into Kafka's field order, in place; other requests are left
// as they are. A body too short to hold the fields is left too (it is
// malformed either way).
func StopReplicaToWire(key, version int16, body []byte) {
	if !needsStopReplicaOrder(key, version) || len(body) < stopReplicaFlagEnd {
		return
	}
	flag := body[8]
	copy(body[5:9], body[4:8])
	body[4] = flag
}

// StopReplicaFromWire turns a request body as Kafka orders it into the
// order kmsg decodes, in place; see StopReplicaToWire.
func StopReplicaFromWire(key, version int16, body []byte) {
	if !needsStopReplicaOrder(key, version) || len(body) < stopReplicaFlagEnd {
		return
	}
	flag := body[4]
	copy(body[4:8], body[5:9])
	body[8] = flag
}
