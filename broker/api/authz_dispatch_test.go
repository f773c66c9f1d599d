package api

import (
	"reflect"
	"testing"

	"github.com/kbroker/kbroker/broker/authz"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestErrorResponseSetsTheCode: every request type that checkRequest may
// refuse with errorResponse has a top-level ErrorCode, so a refusal can
// never read as a success.
func TestErrorResponseSetsTheCode(t *testing.T) {
	for _, req := range []kmsg.Request{
		kmsg.NewPtrJoinGroupRequest(), kmsg.NewPtrSyncGroupRequest(), kmsg.NewPtrHeartbeatRequest(), kmsg.NewPtrLeaveGroupRequest(),
		kmsg.NewPtrConsumerGroupHeartbeatRequest(), kmsg.NewPtrShareGroupHeartbeatRequest(), kmsg.NewPtrShareFetchRequest(),
		kmsg.NewPtrShareAcknowledgeRequest(), kmsg.NewPtrAlterShareGroupOffsetsRequest(), kmsg.NewPtrDeleteShareGroupOffsetsRequest(),
		kmsg.NewPtrOffsetDeleteRequest(), kmsg.NewPtrAddOffsetsToTxnRequest(), kmsg.NewPtrEndTxnRequest(), kmsg.NewPtrAddPartitionsToTxnRequest(),
		kmsg.NewPtrListConfigResourcesRequest(), kmsg.NewPtrDescribeClientQuotasRequest(), kmsg.NewPtrDescribeLogDirsRequest(),
		kmsg.NewPtrAlterPartitionAssignmentsRequest(), kmsg.NewPtrListPartitionReassignmentsRequest(), kmsg.NewPtrUpdateFeaturesRequest(),
		kmsg.NewPtrDescribeUserSCRAMCredentialsRequest(), kmsg.NewPtrLeaderAndISRRequest(), kmsg.NewPtrStopReplicaRequest(),
		kmsg.NewPtrUpdateMetadataRequest(), kmsg.NewPtrControlledShutdownRequest(),
	} {
		resp := errorResponse(req, kerr.GroupAuthorizationFailed)
		f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
		if !f.IsValid() || f.Int() != int64(kerr.GroupAuthorizationFailed.Code) {
			t.Errorf("%s: the refusal has no top-level error code", kmsg.NameForKey(req.Key()))
		}
	}
}

func TestSplit(t *testing.T) {
	kept, denied := split([]int{1, 2, 3, 4}, func(i int) bool { return i%2 == 0 })
	if !reflect.DeepEqual(kept, []int{2, 4}) || !reflect.DeepEqual(denied, []int{1, 3}) {
		t.Fatalf("split = %v, %v", kept, denied)
	}
	if i := lastColon("group:with:colons:topicid:0", 2); i != len("group:with:colons") {
		t.Fatalf("lastColon = %d", i)
	}
}

// TestCheckRequestEveryKey runs the checks of every handled key with an
// authorizer that denies everything, on empty requests and on the
// handler-shaped default responses: nothing panics, and a whole refusal
// answers with the request's own response type.
func TestCheckRequestEveryKey(t *testing.T) {
	b := &API{authz: authz.New(authz.Config{})}
	ctx := &network.RequestContext{Principal: "User:alice", RemoteAddr: "127.0.0.1:1"}
	for _, k := range HandledKeys() {
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			c := b.checkRequest(ctx, req)
			if c.resp != nil && c.resp.Key() != k {
				t.Errorf("%s v%d: refused with a %s", kmsg.NameForKey(k), v, kmsg.NameForKey(c.resp.Key()))
			}
			c.finish(req.ResponseKind())
			c.finish(nil)
		}
	}
}
