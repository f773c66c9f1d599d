package network

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduceFrames sends 1 MiB Produce requests over one connection
// and reads the answers: the connection's allocations per request (frame
// buffers, decoding, the answer) with -benchmem.
func BenchmarkProduceFrames(b *testing.B) {
	s := NewServer(Config{
		Listeners:             []config.Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", SecurityProtocol: "PLAINTEXT"}},
		SocketRequestMaxBytes: 4 << 20,
		Logger:                slog.New(slog.NewTextHandler(io.Discard, nil)),
		Handler: HandlerFunc(func(_ *RequestContext, req protocol.Request) kmsg.Response {
			return req.Body.(*kmsg.ProduceRequest).ResponseKind()
		}),
	})
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	nc, err := net.Dial("tcp", s.Addrs()[0].String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = 1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = make([]byte, 1<<20)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	f := frame(req, 1)
	var size [4]byte
	b.SetBytes(int64(len(f)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := nc.Write(f); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			b.Fatal(err)
		}
		n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
		if _, err := io.CopyN(io.Discard, nc, int64(n)); err != nil {
			b.Fatal(err)
		}
	}
}
