package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStopReplicaV4WireOrder: StopReplica v4 as Kafka 3.9 lays it out
// (ControllerId, isKRaftController, ControllerEpoch, BrokerEpoch, …;
// StopReplicaRequest.json) is what StopReplicaToWire makes of kmsg's
// encoding, and StopReplicaFromWire brings it back to what kmsg decodes
// with the same fields. Older versions and other keys are untouched.
func TestStopReplicaV4WireOrder(t *testing.T) {
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version, req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 4, 7, 3, 0x1122334455
	body := req.AppendTo(nil)
	StopReplicaToWire(int16(kmsg.StopReplica), 4, body)
	want := binary.BigEndian.AppendUint32(nil, 7)
	want = append(want, 0) // isKRaftController
	want = binary.BigEndian.AppendUint32(want, 3)
	want = binary.BigEndian.AppendUint64(want, 0x1122334455)
	if !bytes.HasPrefix(body, want) {
		t.Fatalf("wire body starts % x, want % x", body[:len(want)], want)
	}
	StopReplicaFromWire(int16(kmsg.StopReplica), 4, body)
	got := kmsg.NewPtrStopReplicaRequest()
	got.Version = 4
	if err := got.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	if got.ControllerID != 7 || got.ControllerEpoch != 3 || got.BrokerEpoch != 0x1122334455 || got.IsKRaftController {
		t.Fatalf("decoded %+v", got)
	}
	for _, tc := range []struct{ key, version int16 }{{int16(kmsg.StopReplica), 3}, {int16(kmsg.LeaderAndISR), 7}} {
		b := []byte{0, 0, 0, 7, 0, 0, 0, 3, 1, 9, 9}
		orig := bytes.Clone(b)
		StopReplicaToWire(tc.key, tc.version, b)
		StopReplicaFromWire(tc.key, tc.version, b)
		if !bytes.Equal(b, orig) {
			t.Errorf("key %d v%d changed: % x", tc.key, tc.version, b)
		}
	}
	StopReplicaFromWire(int16(kmsg.StopReplica), 4, []byte{1, 2}) // short: left alone, no panic
}
