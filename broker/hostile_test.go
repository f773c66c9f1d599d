package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heapInuse is HeapInuse after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// waitUntil polls cond until it holds or 30 s pass.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// metadataWorks checks that the broker answers a new connection.
func metadataWorks(t *testing.T, b *Broker) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 1
	if err := rawConn(t, b).roundTrip(req, resp); err != nil {
		t.Fatalf("broker no longer serves: %v", err)
	}
	if len(resp.Brokers) != 1 {
		t.Fatalf("metadata lists %d brokers", len(resp.Brokers))
	}
}

// TestMemoryAttackBounded reproduces issue 10's memory attack: 200
// connections each declare a frame of 100 MiB, send 8 bytes of it and hold,
// for three rounds. Before, each round cost about 2 GB that stayed; now a
// frame's buffer follows the bytes that arrived and queued.max.request.bytes
// stops the readers, so the heap stays within a few tens of MiB, the pool
// empties when the connections go, and the broker keeps serving.
func TestMemoryAttackBounded(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	addr := b.Addrs()[0].String()
	base := heapInuse()
	var peak uint64
	for round := 0; round < 3; round++ {
		conns := make([]net.Conn, 0, 200)
		for i := 0; i < 200; i++ {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, nc)
			if _, err := nc.Write([]byte("\x06\x3f\xff\xff\x00\x12\x00\x03\x00\x00\x00\x01")); err != nil {
				t.Fatal(err)
			}
		}
		// The pool admits frames until it is full (non-strict: one past it),
		// then the other readers wait without reading.
		waitUntil(t, "the pool to fill", func() bool { return b.net.QueuedRequestBytes() >= 512<<20 })
		if h := heapInuse(); h > peak {
			peak = h
		}
		for _, nc := range conns {
			nc.Close()
		}
		waitUntil(t, "the pool to empty", func() bool { return b.net.QueuedRequestBytes() == 0 })
	}
	end := heapInuse()
	t.Logf("heap in use: %d MiB before, %d MiB peak with 200 hostile connections, %d MiB after three rounds",
		base>>20, peak>>20, end>>20)
	if peak > base+96<<20 {
		t.Fatalf("heap grew by %d MiB with the attack's connections open", (peak-base)>>20)
	}
	if end > base+32<<20 {
		t.Fatalf("heap grew by %d MiB after three rounds", (end-base)>>20)
	}
	metadataWorks(t, b)
}

// TestHugeArrayCountsRefused sends requests whose arrays declare 2^31-1
// elements in a 100-byte frame (Metadata v1 and v12, Produce v9): each
// closes its connection without allocating for the declared count, and the
// broker keeps serving.
func TestHugeArrayCountsRefused(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	header := func(key, version int16, flexible bool) []byte {
		h := binary.BigEndian.AppendUint16(nil, uint16(key))
		h = binary.BigEndian.AppendUint16(h, uint16(version))
		h = binary.BigEndian.AppendUint32(h, 1)
		h = append(h, 0, 1, 'c')
		if flexible {
			h = append(h, 0)
		}
		return h
	}
	frames := map[string][]byte{
		"Metadata v1":  binary.BigEndian.AppendUint32(header(int16(kmsg.Metadata), 1, false), 0x7fffffff),
		"Metadata v12": binary.AppendUvarint(header(int16(kmsg.Metadata), 12, true), 0x80000000),
		"Produce v9": binary.AppendUvarint(
			binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(append(header(int16(kmsg.Produce), 9, true), 0), 1), 1000),
			0x80000000),
	}
	for name, body := range frames {
		body = append(body, make([]byte, 100-len(body))...)
		frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		nc, err := net.Dial("tcp", b.Addrs()[0].String())
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, nc); err != nil || n != 0 {
			t.Fatalf("%s: read %d bytes, %v; want the connection closed unanswered", name, n, err)
		}
		nc.Close()
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
			t.Fatalf("%s: %d MiB allocated for a 100-byte frame", name, d>>20)
		}
		metadataWorks(t, b)
	}
}

// TestFetchMaxBytes: the broker's fetch.max.bytes caps a Fetch response
// whatever MaxBytes the client asks, and still returns the first batch whole
// when it alone is larger.
func TestFetchMaxBytes(t *testing.T) {
	for _, tc := range []struct {
		limit       string
		wantBatches int
	}{{"2500", 2}, {"100", 1}} {
		b := startTestBroker(t, t.TempDir(), map[string]string{"fetch.max.bytes": tc.limit})
		cl := newClient(t, b, kgo.DefaultProduceTopic("fmb"), kgo.AllowAutoTopicCreation(),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		for i := 0; i < 5; i++ { // five batches of about 1 KiB
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: bytes.Repeat([]byte{'x'}, 1000)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.MaxBytes = 50 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "fmb"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 50 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		if err := rawConn(t, b).roundTrip(req, resp); err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatal(err)
		}
		n := 0
		for rest := p.RecordBatches; len(rest) >= 12; n++ {
			rest = rest[12+int(binary.BigEndian.Uint32(rest[8:])):]
		}
		if n != tc.wantBatches {
			t.Fatalf("fetch.max.bytes=%s: %d batches (%d bytes) for a request of 50 MiB, want %d",
				tc.limit, n, len(p.RecordBatches), tc.wantBatches)
		}
	}
}
