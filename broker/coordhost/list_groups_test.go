package coordhost

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListGroupsListsConsumerGroupOnce: a KIP-848 group that committed
// offsets is listed once, as a consumer group.
func TestListGroupsListsConsumerGroupOnce(t *testing.T) {
	h, _ := newGroupsHost(t, 2)
	r := consumerJoin(t, h, "cg", "member-1")
	if r.ErrorCode != 0 {
		t.Fatalf("heartbeat: %d", r.ErrorCode)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version = 9
	oc.Group, oc.MemberID, oc.Generation = "cg", "member-1", r.MemberEpoch
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	cr := await(t, groupRequest(t, h, oc), "commit").(*kmsg.OffsetCommitResponse)
	if cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %d", cr.Topics[0].Partitions[0].ErrorCode)
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lr := await(t, groupRequest(t, h, lg), "list").(*kmsg.ListGroupsResponse)
	if len(lr.Groups) != 1 || lr.Groups[0].GroupType != "consumer" {
		t.Fatalf("ListGroups: %+v", lr.Groups)
	}
}
