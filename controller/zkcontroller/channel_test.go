package zkcontroller

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeBroker answers controller requests the way a broker's network layer
// does: it parses the request header (v1, or v2 with tags for flexible
// versions), decodes the body with kmsg and writes an answer with the
// matching correlation id. It drops the first connection after reading one
// request, so the channel's retry is exercised.
type fakeBroker struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	got  []kmsg.Request
	conn int
}

func startFakeBroker(t *testing.T) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeBroker{ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conn++
			first := f.conn == 1
			f.mu.Unlock()
			f.wg.Add(1)
			go f.serve(t, c, first)
		}
	}()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fakeBroker) serve(t *testing.T, c net.Conn, dropFirst bool) {
	defer f.wg.Done()
	defer c.Close()
	for {
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, body); err != nil {
			return
		}
		if dropFirst {
			return // lose the request: the channel must resend it
		}
		b := kbin.Reader{Src: body}
		key, version, corr := b.Int16(), b.Int16(), b.Int32()
		b.NullableString()
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.IsFlexible() {
			kmsg.SkipTags(&b)
		}
		if err := req.ReadFrom(b.Src); err != nil {
			t.Errorf("decoding %s: %v", kmsg.NameForKey(key), err)
			return
		}
		f.mu.Lock()
		f.got = append(f.got, req)
		f.mu.Unlock()
		resp := req.ResponseKind()
		out := kbin.AppendInt32(nil, corr)
		if req.IsFlexible() {
			out = append(out, 0)
		}
		out = resp.AppendTo(out)
		frame := kbin.AppendInt32(nil, int32(len(out)))
		if _, err := c.Write(append(frame, out...)); err != nil {
			return
		}
	}
}

func (f *fakeBroker) received() []kmsg.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kmsg.Request(nil), f.got...)
}

func TestTCPChannelSendsInOrderAndRetries(t *testing.T) {
	f := startFakeBroker(t)
	var mu sync.Mutex
	var answered []int16
	ch := NewTCPChannel(kconn.Options{ClientID: "controller-1"}, nil, func(broker int32, req kmsg.Request, resp kmsg.Response) {
		mu.Lock()
		answered = append(answered, resp.Key())
		mu.Unlock()
	})
	ch.backoff = 10 * time.Millisecond
	defer ch.Close()
	ch.AddBroker(7, f.ln.Addr().String())
	lair := kmsg.NewPtrLeaderAndISRRequest()
	lair.Version, lair.ControllerEpoch, lair.BrokerEpoch = 7, 3, 44
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version = 8
	sr := kmsg.NewPtrStopReplicaRequest()
	sr.Version = 4
	ch.Send(7, lair)
	ch.Send(7, um)
	ch.Send(7, sr)
	ch.Send(8, sr) // no queue: dropped
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(answered)
		mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 answered", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := f.received()
	if len(got) != 3 || got[0].Key() != 4 || got[1].Key() != 6 || got[2].Key() != 5 {
		t.Fatalf("received %v", got)
	}
	if r := got[0].(*kmsg.LeaderAndISRRequest); r.ControllerEpoch != 3 || r.BrokerEpoch != 44 {
		t.Fatalf("LeaderAndIsr %+v", r)
	}
	if !equal16(answered, []int16{4, 6, 5}) {
		t.Fatalf("answers %v", answered)
	}
}

// SendAfter holds a request until the other brokers' queues answered what
// was queued before it: broker 1's UpdateMetadata is answered before
// broker 2's is sent, though broker 1 loses its first connection.
func TestTCPChannelSendAfterWaitsForOthers(t *testing.T) {
	slow, fast := startFakeBroker(t), startFakeBroker(t)
	var mu sync.Mutex
	var order []int32
	ch := NewTCPChannel(kconn.Options{ClientID: "controller-2"}, nil, func(broker int32, _ kmsg.Request, _ kmsg.Response) {
		mu.Lock()
		order = append(order, broker)
		mu.Unlock()
	})
	ch.backoff = 50 * time.Millisecond
	defer ch.Close()
	ch.AddBroker(1, slow.ln.Addr().String())
	ch.AddBroker(2, fast.ln.Addr().String())
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version = 8
	ch.Send(1, um)
	ch.SendAfter(2, um, []int32{1, 2, 9}) // itself and unknown brokers do not gate
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(order)
		mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 2 answered", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if order[0] != 1 || order[1] != 2 {
		t.Fatalf("answered in broker order %v, want [1 2]", order)
	}
}

// Removing the broker a request waits for releases it at once.
func TestTCPChannelSendAfterReleasedByRemoval(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	f := startFakeBroker(t)
	answered := make(chan int32, 4)
	ch := NewTCPChannel(kconn.Options{ClientID: "c"}, nil, func(broker int32, _ kmsg.Request, _ kmsg.Response) { answered <- broker })
	ch.backoff = 5 * time.Millisecond
	defer ch.Close()
	ch.AddBroker(1, dead)
	ch.AddBroker(2, f.ln.Addr().String())
	ch.Send(1, kmsg.NewPtrUpdateMetadataRequest())
	ch.SendAfter(2, kmsg.NewPtrUpdateMetadataRequest(), []int32{1})
	ch.RemoveBroker(1)
	select {
	case b := <-answered:
		if b != 2 {
			t.Fatalf("broker %d answered", b)
		}
	case <-time.After(GateTimeout / 2): // the gate's own bound is not the release
		t.Fatal("the gated request waited for a removed broker")
	}
}

func equal16(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Removing a broker stops its sender even while it cannot connect.
func TestTCPChannelRemoveWhileUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ch := NewTCPChannel(kconn.Options{ClientID: "c"}, nil, nil)
	ch.backoff = 5 * time.Millisecond
	ch.AddBroker(1, addr)
	ch.Send(1, kmsg.NewPtrStopReplicaRequest())
	done := make(chan struct{})
	go func() { ch.RemoveBroker(1); ch.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RemoveBroker blocked")
	}
}

func TestResponseErrors(t *testing.T) {
	lair := kmsg.NewPtrLeaderAndISRResponse()
	lair.Version = 7
	topic := kmsg.NewLeaderAndISRResponseTopic()
	topic.TopicID = [16]byte{1}
	ok, stale := kmsg.NewLeaderAndISRResponseTopicPartition(), kmsg.NewLeaderAndISRResponseTopicPartition()
	stale.Partition, stale.ErrorCode = 3, 11 // STALE_CONTROLLER_EPOCH
	topic.Partitions = append(topic.Partitions, ok, stale)
	lair.Topics = append(lair.Topics, topic)
	errs := ResponseErrors(lair)
	if len(errs) != 1 || errs["AQAAAAAAAAAAAAAAAAAAAA-3"] == nil {
		t.Fatalf("%v", errs)
	}
	sr := kmsg.NewPtrStopReplicaResponse()
	sr.ErrorCode = 77 // STALE_BROKER_EPOCH
	if errs := ResponseErrors(sr); len(errs) != 1 || errs[""] == nil {
		t.Fatalf("%v", errs)
	}
	if errs := ResponseErrors(kmsg.NewPtrUpdateMetadataResponse()); len(errs) != 0 {
		t.Fatalf("%v", errs)
	}
}

// Drain returns once what was queued is answered, though the broker lost
// the first request (a resend after the backoff), so a Close after it
// drops nothing; for a broker that cannot be reached it returns when its
// context ends.
func TestTCPChannelDrain(t *testing.T) {
	f := startFakeBroker(t)
	ch := NewTCPChannel(kconn.Options{ClientID: "controller-3"}, nil, nil)
	ch.backoff = 200 * time.Millisecond
	ch.AddBroker(1, f.ln.Addr().String())
	for range 3 {
		um := kmsg.NewPtrUpdateMetadataRequest()
		um.Version = 8
		ch.Send(1, um)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch.Drain(ctx)
	if ctx.Err() != nil {
		t.Fatal("Drain waited until its context ended")
	}
	ch.Close()
	if got := f.received(); len(got) != 3 {
		t.Fatalf("the broker received %d of 3 requests before Close", len(got))
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	ch = NewTCPChannel(kconn.Options{ClientID: "controller-3"}, nil, nil)
	ch.backoff = 5 * time.Millisecond
	defer ch.Close()
	ch.AddBroker(2, dead)
	ch.Send(2, kmsg.NewPtrUpdateMetadataRequest())
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	ch.Drain(ctx)
	if ctx.Err() == nil {
		t.Fatal("Drain returned before the unreachable broker answered or its context ended")
	}
}
