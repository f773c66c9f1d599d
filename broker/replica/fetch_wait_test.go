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
	return parkedFetchIsolation(m, topic, partitions, minBytes, 0)
}

// parkedFetchIsolation is parkedFetch at an isolation level (1:
// read_committed).
func parkedFetchIsolation(m *Manager, topic string, partitions int32, minBytes int32, isolation int8) <-chan *kmsg.FetchResponse {
	req := kmsg.NewPtrFetchRequest()
	req.IsolationLevel = isolation
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

// singlePartition creates topic name with one partition and returns it.
func singlePartition(t *testing.T, m *Manager, name string) *Partition {
	t.Helper()
	top, kerrv, msg := m.CreateTopic(name, 1, 1, nil, false)
	if kerrv != nil {
		t.Fatalf("CreateTopic: %v %s", kerrv, msg)
	}
	return top.Partitions[0]
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
	if got := recordBytes(t, <-done); got < 3000 {
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
	p := singlePartition(t, m, "state")
	done := parkedFetch(m, "state", 1, 1<<30)
	waitWatched(t, p, 1)
	p.close()
	resp := <-done
	if code := resp.Topics[0].Partitions[0].ErrorCode; code == 0 {
		t.Fatal("closed partition answered without an error")
	}
	waitWatched(t, p, 0)
}

// answer waits for a parked fetch's answer; what names the change that
// should have completed it.
func answer(t *testing.T, done <-chan *kmsg.FetchResponse, what string) *kmsg.FetchResponse {
	t.Helper()
	select {
	case resp := <-done:
		return resp
	case <-time.After(20 * time.Second):
		t.Fatalf("the parked fetch did not answer after %s", what)
		return nil
	}
}

// recordBytes sums the record bytes of a fetch answer, failing on an error.
func recordBytes(t *testing.T, resp *kmsg.FetchResponse) int {
	t.Helper()
	var n int
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
			n += len(rp.RecordBatches)
		}
	}
	return n
}

// TestParkedReadCommittedFetchWakesWhenLSOMoves: a read_committed fetch
// parked at the LSO of an open transaction whose data (appended before it
// parked) is beyond MinBytes answers when the commit marker moves the LSO,
// although the marker alone is far below MinBytes. It used to wait for
// MaxWaitMs: the wait counted only bytes appended after the read.
func TestParkedReadCommittedFetchWakesWhenLSOMoves(t *testing.T) {
	m, _ := newTestManager(t)
	p := singlePartition(t, m, "lso")
	const pid = 5
	batch, err := records.Build(records.BatchSpec{Attributes: 0x10, FirstTimestamp: time.Now().UnixMilli(), ProducerID: pid, BaseSequence: 0},
		[]records.Record{{Value: make([]byte, 1000)}})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := records.ParseHeader(batch)
	if res := m.AppendRecords(p, batch, h); res.Err != nil {
		t.Fatal(res.Err)
	}
	if lso := p.LastStableOffset(); lso != 0 {
		t.Fatalf("setup: LSO %d with the transaction open, want 0", lso)
	}
	done := parkedFetchIsolation(m, "lso", 1, 500, 1)
	waitWatched(t, p, 1)
	select {
	case resp := <-done:
		t.Fatalf("answered with the transaction open: %+v", resp)
	default:
	}
	marked := make(chan error, 1)
	m.AppendMarker(p, pid, 0, records.ControlCommit, 0, time.Now().UnixMilli(), func(err error) { marked <- err })
	if err := <-marked; err != nil {
		t.Fatal(err)
	}
	if n := recordBytes(t, answer(t, done, "the commit marker moved the LSO")); n < 1000 {
		t.Fatalf("answer holds %d record bytes, want the committed 1000+", n)
	}
	waitWatched(t, p, 0)
}

// TestParkedFetchWakesWhenFollowerAdvancesHW: a consumer fetch parked on a
// leader whose log holds a batch its follower has not yet copied answers
// when the follower's next fetch moves the HW over the batch, with no
// append on the partition after it parked. It used to wait for MaxWaitMs.
func TestParkedFetchWakesWhenFollowerAdvancesHW(t *testing.T) {
	c := newTestCluster(t, 2, manualRC(), true, 1)
	all := []int32{1, 2}
	c.elect(0, 1, all, all, all...)
	c.mustProduce(1, 1, "m1")
	leader := c.part(1, 0)
	if hw := leader.HighWatermark(); hw != 0 {
		t.Fatalf("setup: HW %d before the follower fetched, want 0", hw)
	}
	done := parkedFetch(c.broker(1).m, c.topic.Name, 1, 1)
	waitWatched(t, leader, 1)
	c.step(2, 1) // the follower copies m1; the leader learns its LEO only at the next fetch
	select {
	case resp := <-done:
		t.Fatalf("answered before the HW moved: %+v", resp)
	default:
	}
	c.step(2, 1)
	if hw := leader.HighWatermark(); hw != 1 {
		t.Fatalf("HW %d after the follower's second fetch, want 1", hw)
	}
	if n := recordBytes(t, answer(t, done, "the follower's fetch moved the HW")); n == 0 {
		t.Fatal("the answer holds no records")
	}
}
