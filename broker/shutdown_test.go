package broker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShutdownWithStuckClient: a client that pipelines fetches and never
// reads the answers fills its socket; Close still returns (after the write
// grace), and other clients were served meanwhile.
func TestShutdownWithStuckClient(t *testing.T) {
	old := network.ShutdownWriteGrace
	network.ShutdownWriteGrace = 200 * time.Millisecond
	defer func() { network.ShutdownWriteGrace = old }()

	b := startTestBroker(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := newClient(t, b, kgo.DefaultProduceTopic("stuck"), kgo.AllowAutoTopicCreation())
	big := make([]byte, 512<<10)
	rand.Read(big) // incompressible: the answers must really be large
	for i := 0; i < 4; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: big}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	nc, err := net.Dial("tcp", b.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 11
	fetch.MaxBytes = 50 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "stuck"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 50 << 20
	ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
	fetch.Topics = []kmsg.FetchRequestTopic{ft}
	for i := 0; i < 64; i++ { // ~128 MiB of answers, far beyond socket buffers
		body := fetch.AppendTo([]byte{0, 1, 0, 11, 0, 0, 0, byte(i), 0xff, 0xff})
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		if _, err := nc.Write(append(frame, body...)); err != nil {
			t.Fatal(err)
		}
	}
	// Another client is still served while the stuck one blocks its connection.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("still served")}).FirstErr(); err != nil {
		t.Fatalf("another client was blocked: %v", err)
	}
	cl.Close()
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return with a client that stopped reading")
	}
}
