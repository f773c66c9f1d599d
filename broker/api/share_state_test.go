package api

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/authz"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type noISRWrites struct{}

func (noISRWrites) ChangeISR(_ string, _ int32, cur replica.PartitionState, _ []int32) (replica.PartitionState, error) {
	return cur, replica.ErrStaleISRVersion
}

// shareStateAPI is an API over a real coordhost.Host and replica.Manager in
// cluster mode (broker 1 of a cluster whose broker 2 never answers), which
// leads both partitions of __share_group_state; it returns the API and the
// id of data topic "t".
func shareStateAPI(t *testing.T) (*API, [16]byte) {
	t.Helper()
	dir := t.TempDir()
	cfg, _, err := config.ParseConfig(map[string]string{
		"log.dirs":          filepath.Join(dir, "data"),
		"broker.id":         "1",
		"zookeeper.connect": "127.0.0.1:1/unused",
	})
	if err != nil {
		t.Fatal(err)
	}
	out := io.Discard
	if os.Getenv("KBROKER_TEST_LOG") != "" {
		out = os.Stderr
	}
	cfg.Logger = slog.New(slog.NewTextHandler(out, nil))
	cfg.Now = time.Now
	closing := make(chan struct{})
	rm := replica.NewManager(cfg, closing)
	if err := rm.OpenDirs(nil); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "meta"), 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := controller.OpenFileStore(filepath.Join(dir, "meta"), "cluster", nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][16]byte{}
	for _, top := range []controller.Topic{
		{Name: share.StateTopic, Partitions: 2, ReplicationFactor: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "t", Partitions: 2, ReplicationFactor: 2},
	} {
		top.ID = controller.NewTopicID()
		ids[top.Name] = top.ID
		if err := store.CreateTopic(top); err != nil {
			t.Fatal(err)
		}
	}
	if err := rm.Load(store); err != nil {
		t.Fatal(err)
	}
	rm.SetReplicationConfig(replica.ReplicationConfig{LagTimeMax: time.Hour, FetchWaitMax: 10 * time.Millisecond, FetchBackoff: 50 * time.Millisecond})
	rm.SetCluster(1, noISRWrites{}, func(int32) (string, bool) { return "", false })
	h := coordhost.NewHost(cfg, rm, closing)
	rm.OnLeadershipChange(h.OnLeadershipChange)
	if err := h.Load(store); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(closing)
		h.CloseShares()
		h.Close()
		rm.Stop()
		if err := rm.CloseStorage(); err != nil {
			t.Error(err)
		}
		store.Close()
	})
	for part := range int32(2) {
		st := replica.PartitionState{Leader: 1, LeaderEpoch: 1, ControllerEpoch: 1, ISR: []int32{1}, Replicas: []int32{1, 2}, ZKVersion: 1}
		if err := rm.MakeLeader(share.StateTopic, part, ids[share.StateTopic], st); err != nil {
			t.Fatal(err)
		}
	}
	// Wait for both partitions to load.
	deadline := time.Now().Add(10 * time.Second)
	for part := range int32(2) {
		for {
			tp := share.TopicPartition{TopicID: ids["t"], Partition: part}
			_, _, code := h.ShareStateRead("probe", tp, -1)
			if code != kerr.CoordinatorLoadInProgress.Code {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("share coordinator partitions still loading")
			}
			time.Sleep(time.Millisecond)
		}
	}
	return &API{cfg: cfg, log: cfg.Logger, co: h}, ids["t"]
}

// roundTrip encodes resp and decodes it again at its version, as the
// client would.
func roundTrip[T kmsg.Response](t *testing.T, resp kmsg.Response) T {
	t.Helper()
	b := resp.AppendTo(nil)
	out := kmsg.ResponseForKey(resp.Key())
	out.SetVersion(resp.GetVersion())
	if err := out.ReadFrom(b); err != nil {
		t.Fatalf("%s v%d does not decode: %v", kmsg.NameForKey(resp.Key()), resp.GetVersion(), err)
	}
	return out.(T)
}

// TestShareStateRPCs drives the five share coordinator RPCs through their
// handlers over a real store: initialize, write, read, summary, delete,
// with Kafka's per-partition errors.
func TestShareStateRPCs(t *testing.T) {
	b, tid := shareStateAPI(t)
	ctx := &network.RequestContext{Principal: "User:ANONYMOUS", RemoteAddr: "127.0.0.1:1"}
	const g = "sg"

	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = g
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = tid
	it.Partitions = []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 1, StartOffset: 5}, {Partition: -1, StateEpoch: 1, StartOffset: 0}}
	init.Topics = []kmsg.InitializeShareGroupStateRequestTopic{it}
	ir := roundTrip[*kmsg.InitializeShareGroupStateResponse](t, b.handleInitializeShareGroupState(ctx, init))
	if len(ir.Topics) != 1 || len(ir.Topics[0].Partitions) != 2 || ir.Topics[0].Partitions[0].ErrorCode != 0 ||
		ir.Topics[0].Partitions[1].ErrorCode != kerr.InvalidRequest.Code || ir.Topics[0].TopicID != tid {
		t.Fatalf("initialize: %+v", ir)
	}

	for v := int16(0); v <= 1; v++ {
		w := kmsg.NewPtrWriteShareGroupStateRequest()
		w.Version, w.GroupID = v, g
		wt := kmsg.NewWriteShareGroupStateRequestTopic()
		wt.TopicID = tid
		wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = 0, 1, 4, 5
		wp.StateBatches = []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
			{FirstOffset: 5, LastOffset: 6, DeliveryState: share.PersistAcknowledged, DeliveryCount: 1},
			{FirstOffset: 7, LastOffset: 7, DeliveryState: share.PersistAvailable, DeliveryCount: 3},
		}
		wt.Partitions = []kmsg.WriteShareGroupStateRequestTopicPartition{wp}
		w.Topics = []kmsg.WriteShareGroupStateRequestTopic{wt}
		wr := roundTrip[*kmsg.WriteShareGroupStateResponse](t, b.handleWriteShareGroupState(ctx, w))
		if len(wr.Topics) != 1 || len(wr.Topics[0].Partitions) != 1 || wr.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("write v%d: %+v", v, wr)
		}
	}
	// A write of a deposed leader (epoch 3 < 4) is fenced.
	w := kmsg.NewPtrWriteShareGroupStateRequest()
	w.GroupID = g
	w.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 1, LeaderEpoch: 3, StartOffset: 5}}}}
	wr := b.handleWriteShareGroupState(ctx, w).(*kmsg.WriteShareGroupStateResponse)
	if p := wr.Topics[0].Partitions[0]; p.ErrorCode != kerr.FencedLeaderEpoch.Code || p.ErrorMessage == nil {
		t.Fatalf("stale write: %+v", p)
	}

	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = g
	r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: 4}, {Partition: 1, LeaderEpoch: 4}}}}
	rr := roundTrip[*kmsg.ReadShareGroupStateResponse](t, b.handleReadShareGroupState(ctx, r))
	p0, p1 := rr.Topics[0].Partitions[0], rr.Topics[0].Partitions[1]
	if p0.ErrorCode != 0 || p0.StateEpoch != 1 || p0.StartOffset != 5 || len(p0.StateBatches) != 2 ||
		p0.StateBatches[1].DeliveryCount != 3 || p0.StateBatches[0].DeliveryState != share.PersistAcknowledged {
		t.Fatalf("read of partition 0: %+v", p0)
	}
	if p1.ErrorCode != 0 || p1.StartOffset != -1 || p1.StateEpoch != 0 || len(p1.StateBatches) != 0 {
		t.Fatalf("read of a partition with no state: %+v", p1)
	}

	for v := int16(0); v <= 1; v++ {
		sr := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		sr.Version, sr.GroupID = v, g
		sr.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: tid, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
		srr := roundTrip[*kmsg.ReadShareGroupStateSummaryResponse](t, b.handleReadShareGroupStateSummary(ctx, sr))
		s0, s1 := srr.Topics[0].Partitions[0], srr.Topics[0].Partitions[1]
		wantDone := int32(2)
		if v == 0 {
			wantDone = -1 // not in v0: decodes as the default
		}
		if s0.ErrorCode != 0 || s0.StateEpoch != 1 || s0.LeaderEpoch != 4 || s0.StartOffset != 5 || s0.DeliveryCompleteCount != wantDone {
			t.Fatalf("summary v%d of partition 0: %+v", v, s0)
		}
		if s1.ErrorCode != 0 || s1.StartOffset != -1 {
			t.Fatalf("summary v%d of a partition with no state: %+v", v, s1)
		}
	}

	d := kmsg.NewPtrDeleteShareGroupStateRequest()
	d.GroupID = g
	d.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	dr := roundTrip[*kmsg.DeleteShareGroupStateResponse](t, b.handleDeleteShareGroupState(ctx, d))
	for _, p := range dr.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("delete: %+v", p)
		}
	}
	rr = b.handleReadShareGroupState(ctx, r).(*kmsg.ReadShareGroupStateResponse)
	if p := rr.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StartOffset != -1 {
		t.Fatalf("read after delete: %+v", p)
	}

	// Kafka answers a request without a group id, topics or partitions
	// with an empty response.
	empty := kmsg.NewPtrReadShareGroupStateRequest()
	empty.Topics = r.Topics
	if er := b.handleReadShareGroupState(ctx, empty).(*kmsg.ReadShareGroupStateResponse); len(er.Topics) != 0 {
		t.Fatalf("request without a group id: %+v", er)
	}
	noParts := kmsg.NewPtrWriteShareGroupStateRequest()
	noParts.GroupID = g
	noParts.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: tid}}
	if er := b.handleWriteShareGroupState(ctx, noParts).(*kmsg.WriteShareGroupStateResponse); len(er.Topics) != 0 {
		t.Fatalf("request with a topic without partitions: %+v", er)
	}
}

// TestShareStateRPCsNeedClusterAction: without CLUSTER_ACTION on the
// cluster every partition of every share coordinator RPC answers
// CLUSTER_AUTHORIZATION_FAILED, and the handler does not run.
func TestShareStateRPCsNeedClusterAction(t *testing.T) {
	b := &API{authz: authz.New(authz.Config{})}
	ctx := &network.RequestContext{Principal: "User:alice", RemoteAddr: "127.0.0.1:1"}
	tid := [16]byte{1}
	reqs := []kmsg.Request{
		&kmsg.InitializeShareGroupStateRequest{GroupID: "g", Topics: []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}},
		&kmsg.ReadShareGroupStateRequest{GroupID: "g", Topics: []kmsg.ReadShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}},
		&kmsg.WriteShareGroupStateRequest{GroupID: "g", Topics: []kmsg.WriteShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}},
		&kmsg.DeleteShareGroupStateRequest{GroupID: "g", Topics: []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}},
		&kmsg.ReadShareGroupStateSummaryRequest{GroupID: "g", Topics: []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: tid, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}},
	}
	for _, req := range reqs {
		c := b.checkRequest(ctx, req)
		if c.resp == nil {
			t.Fatalf("%s: allowed without CLUSTER_ACTION", kmsg.NameForKey(req.Key()))
		}
		var codes []int16
		switch r := c.resp.(type) {
		case *kmsg.InitializeShareGroupStateResponse:
			for _, p := range r.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
		case *kmsg.ReadShareGroupStateResponse:
			for _, p := range r.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
		case *kmsg.WriteShareGroupStateResponse:
			for _, p := range r.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
		case *kmsg.DeleteShareGroupStateResponse:
			for _, p := range r.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
		case *kmsg.ReadShareGroupStateSummaryResponse:
			for _, p := range r.Topics[0].Partitions {
				codes = append(codes, p.ErrorCode)
			}
		default:
			t.Fatalf("%s: refused with a %T", kmsg.NameForKey(req.Key()), c.resp)
		}
		if len(codes) != 2 || codes[0] != kerr.ClusterAuthorizationFailed.Code || codes[1] != kerr.ClusterAuthorizationFailed.Code {
			t.Fatalf("%s: refused with codes %v", kmsg.NameForKey(req.Key()), codes)
		}
	}
}

// TestShareStateRPCsAdvertised: the five keys are in protocol's table with
// the versions kmsg knows.
func TestShareStateRPCsAdvertised(t *testing.T) {
	for key, max := range map[kmsg.Key]int16{
		kmsg.InitializeShareGroupState: 0, kmsg.ReadShareGroupState: 0, kmsg.WriteShareGroupState: 1,
		kmsg.DeleteShareGroupState: 0, kmsg.ReadShareGroupStateSummary: 1,
	} {
		vr, ok := protocol.Supported(int16(key))
		if !ok || vr.Min != 0 || vr.Max != max {
			t.Errorf("%s: %+v %v", kmsg.NameForKey(int16(key)), vr, ok)
		}
	}
}
