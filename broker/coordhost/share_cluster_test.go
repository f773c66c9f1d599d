package coordhost

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/coordinator/consumer"
	"github.com/kbroker/kbroker/coordinator/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remoteShareCoordinator is the Cluster of a clusterHost (broker 1) whose
// share coordinator, for every key, is broker 2: it keeps one
// share-partition's state, and onWrite decides each
// WriteShareGroupState's fate (store it or not, and the code answered).
type remoteShareCoordinator struct {
	mu      sync.Mutex
	state   *share.Snapshot
	writes  int
	onWrite func(s share.Snapshot) (store bool, code int16)
}

func (f *remoteShareCoordinator) BrokerID() int32                    { return 1 }
func (f *remoteShareCoordinator) LiveBrokers() int                   { return 2 }
func (f *remoteShareCoordinator) Topics() []consumer.TopicInfo       { return nil }
func (f *remoteShareCoordinator) Leader(string, int32) (int32, bool) { return 2, true }

func (f *remoteShareCoordinator) Send(_ context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.WriteShareGroupStateRequest:
		rp := r.Topics[0].Partitions[0]
		s := share.Snapshot{StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, StartOffset: rp.StartOffset}
		for _, b := range rp.StateBatches {
			s.Batches = append(s.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
		}
		f.mu.Lock()
		f.writes++
		onWrite := f.onWrite
		f.mu.Unlock()
		store, code := onWrite(s)
		f.mu.Lock()
		if store {
			f.state = &s
		}
		f.mu.Unlock()
		resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = r.Topics[0].TopicID
		p := kmsg.NewWriteShareGroupStateResponseTopicPartition()
		p.Partition, p.ErrorCode = rp.Partition, code
		rt.Partitions = append(rt.Partitions, p)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil
	case *kmsg.ReadShareGroupStateRequest:
		resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = r.Topics[0].TopicID
		p := kmsg.NewReadShareGroupStateResponseTopicPartition()
		p.Partition, p.StartOffset = r.Topics[0].Partitions[0].Partition, -1
		f.mu.Lock()
		if s := f.state; s != nil {
			p.StateEpoch, p.StartOffset = s.StateEpoch, s.StartOffset
			for _, b := range s.Batches {
				sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
				sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
				p.StateBatches = append(p.StateBatches, sb)
			}
		}
		f.mu.Unlock()
		rt.Partitions = append(rt.Partitions, p)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil
	}
	return nil, errors.New("unexpected request")
}

// newRemoteShareHost is a clusterHost leading partition 0 of topic "t",
// whose share coordinator is f (broker 2), and the state record of group
// "sg"'s share-partition t-0 that acknowledges offsets 0..4.
func newRemoteShareHost(t *testing.T, f *remoteShareCoordinator) (*clusterHost, share.StateRecord) {
	t.Helper()
	c := newShareStoreHost(t)
	c.h.SetCluster(f)
	c.move("t", 0, true)
	tp := share.TopicPartition{TopicID: c.ids["t"], Partition: 0}
	snap := share.Snapshot{StartOffset: 5, Batches: []share.StateBatch{{First: 5, Last: 6, State: share.PersistAvailable, Count: 1}}}
	return c, share.StateRecord{Group: "sg", TP: tp, CoordinatorKey: share.CoordinatorKey("sg", tp), Snapshot: &snap}
}

// TestShareWriteSettledAfterLeaderMove: a state write that the share
// coordinator appended but answered NOT_COORDINATOR (it lost its
// leadership meanwhile), while the data partition's leadership moved too,
// as a controlled shutdown moves both, is settled by reading the state
// back: a write that took effect succeeds (the next leader reads it, so
// its records are never delivered again and the member must hear that its
// acknowledgement held), one that did not fails (the next leader delivers
// them again).
func TestShareWriteSettledAfterLeaderMove(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored bool
	}{{"appended", true}, {"lost", false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := &remoteShareCoordinator{}
			c, r := newRemoteShareHost(t, f)
			f.onWrite = func(share.Snapshot) (bool, int16) {
				c.move("t", 0, false)
				return tc.stored, kerr.NotCoordinator.Code
			}
			err := c.h.shares.writeState(context.Background(), r)
			switch {
			case tc.stored && err != nil:
				t.Fatalf("a write that took effect failed: %v", err)
			case !tc.stored && !errors.Is(err, errShareNotLeader):
				t.Fatalf("a write that did not take effect: %v, want %v", err, errShareNotLeader)
			}
		})
	}
}

// TestShareWriterDrainsOnClose: closing the share host lets a write in
// flight finish and reports its outcome to its call, instead of failing
// the call while the write may still take effect.
func TestShareWriterDrainsOnClose(t *testing.T) {
	release := make(chan struct{})
	f := &remoteShareCoordinator{}
	c, r := newRemoteShareHost(t, f)
	f.onWrite = func(share.Snapshot) (bool, int16) {
		<-release
		return true, 0
	}
	job := &shareWriteJob{recs: []share.StateRecord{r}, done: make(chan error, 1)}
	c.h.shares.mu.Lock()
	c.h.shares.mu.cl.writer.push(job)
	c.h.shares.mu.Unlock()
	for {
		f.mu.Lock()
		n := f.writes
		f.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		c.h.CloseShares()
		close(closed)
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	if err := <-job.done; err != nil {
		t.Fatalf("the write in flight at close: %v, want its outcome (success)", err)
	}
	<-closed
}
