package zkcontroller

import (
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLeaderAndISRResults(t *testing.T) {
	ctx := controller.NewContext(1, 1, 0)
	ctx.AddTopic("t", zkdata.TopicAssignment{TopicID: [16]byte{7}, Partitions: map[int32][]int32{0: {1}, 1: {1}, 2: {1}}})
	// v5+: by topic id; an unknown id is skipped; other errors are neither.
	resp := kmsg.NewPtrLeaderAndISRResponse()
	t1 := kmsg.NewLeaderAndISRResponseTopic()
	t1.TopicID = [16]byte{7}
	for p, code := range []int16{kerr.KafkaStorageError.Code, 0, kerr.StaleControllerEpoch.Code} {
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Partition, rp.ErrorCode = int32(p), code
		t1.Partitions = append(t1.Partitions, rp)
	}
	t2 := kmsg.NewLeaderAndISRResponseTopic()
	t2.TopicID = [16]byte{9}
	t2.Partitions = append(t2.Partitions, t1.Partitions[0])
	resp.Topics = append(resp.Topics, t1, t2)
	stored, ok := LeaderAndISRResults(resp, ctx)
	if !reflect.DeepEqual(stored, []controller.TopicPartition{{Topic: "t", Partition: 0}}) ||
		!reflect.DeepEqual(ok, []controller.TopicPartition{{Topic: "t", Partition: 1}}) {
		t.Fatalf("v5: stored %v ok %v", stored, ok)
	}
	// v0-v4: by topic name.
	old := kmsg.NewPtrLeaderAndISRResponse()
	p := kmsg.NewLeaderAndISRResponseTopicPartition()
	p.Topic, p.Partition, p.ErrorCode = "t", 2, kerr.KafkaStorageError.Code
	old.Partitions = append(old.Partitions, p)
	if stored, ok = LeaderAndISRResults(old, ctx); len(stored) != 1 || stored[0].Partition != 2 || len(ok) != 0 {
		t.Fatalf("v4: stored %v ok %v", stored, ok)
	}
}
