package replica

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// parkedFetch starts a fetch of every partition of topic from offset 0 with
// minBytes and a wait far beyond the test, and returns its answer's channel.
func parkedFetch(m *Manager, topic string, partitions int32, minBytes int32) <-chan *kmsg.FetchResponse {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis = 600_000
	req.MinBytes = minBytes
	req.MaxBytes = 1 << 30
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for i := int32(0); i < partitions; i++ {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = i
		rp.PartitionMaxBytes = 1 << 20
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	out := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		m.Fetch(req, resp)
		out <- resp
	}()
	return out
}

// waitWatched waits until p has n parked watchers.
func waitWatched(t *testing.T, p *Partition, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		p.mu.Lock()
		got := len(p.mu.watchers)
		p.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d watchers on partition %d, want %d", got, p.Index, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func appendValue(t *testing.T, m *Manager, p *Partition, size int) {
	t.Helper()
	batch, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, BaseSequence: -1},
		[]records.Record{{Value: make([]byte, size)}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := records.ParseHeader(batch)
	if res := m.AppendRecords(p, batch, h); res.Err != nil {
		t.Fatal(res.Err)
	}
}

// TestParkedFetchCompletesOnArrivals: a fetch parked below MinBytes answers
// once appends to its partitions (any of them) add up to MinBytes, with
// those records, and leaves no watcher behind.
func TestParkedFetchCompletesOnArrivals(t *testing.T) {
	m, _ := newTestManager(t)
	top, kerrv, msg := m.CreateTopic("arrivals", 3, 1, nil, false)
	if kerrv != nil {
		t.Fatalf("CreateTopic: %v %s", kerrv, msg)
	}
	done := parkedFetch(m, "arrivals", 3, 3000)
	for _, p := range top.Partitions {
		waitWatched(t, p, 1)
	}
	// Three appends of about 1 KiB to different partitions: the third
	// passes MinBytes.
	for i := range 3 {
		select {
		case resp := <-done:
			t.Fatalf("answered after %d appends, before MinBytes: %+v", i, resp)
		default:
		}
		appendValue(t, m, top.Partitions[i], 1000)
	}
	resp := <-done
	var got int
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			got += len(rp.RecordBatches)
		}
	}
	if got < 3000 {
		t.Fatalf("answer holds %d record bytes, want >= 3000", got)
	}
	for _, p := range top.Partitions {
		waitWatched(t, p, 0)
	}
}

// TestParkedFetchWokenByStateChange: a parked fetch whose partition stops
// being served (StopReplica) reads again and answers its error at once,
// without any data arriving.
func TestParkedFetchWokenByStateChange(t *testing.T) {
	m, _ := newTestManager(t)
	top, kerrv, msg := m.CreateTopic("state", 1, 1, nil, false)
	if kerrv != nil {
		t.Fatalf("CreateTopic: %v %s", kerrv, msg)
	}
	p := top.Partitions[0]
	done := parkedFetch(m, "state", 1, 1<<30)
	waitWatched(t, p, 1)
	p.close()
	resp := <-done
	if code := resp.Topics[0].Partitions[0].ErrorCode; code == 0 {
		t.Fatal("closed partition answered without an error")
	}
	waitWatched(t, p, 0)
}
