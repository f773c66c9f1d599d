package kconn

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RoundTripReuse reads each answer into the caller's buffer: a smaller
// answer reuses its backing array, a larger one grows it, and every
// answer decodes whole.
func TestRoundTripReuse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sizes := []int{20, 5, 40} // ApiKeys per answer, one answer per request
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		for _, n := range sizes {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				served <- err
				return
			}
			body := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(c, body); err != nil {
				served <- err
				return
			}
			resp := kmsg.NewPtrApiVersionsResponse()
			for k := range n {
				ak := kmsg.NewApiVersionsResponseApiKey()
				ak.ApiKey, ak.MaxVersion = int16(k), int16(k%7)
				resp.ApiKeys = append(resp.ApiKeys, ak)
			}
			out := binary.BigEndian.AppendUint32(nil, 0)
			out = append(out, body[4:8]...) // correlation id
			out = resp.AppendTo(out)
			binary.BigEndian.PutUint32(out, uint32(len(out)-4))
			if _, err := c.Write(out); err != nil {
				served <- err
				return
			}
		}
		served <- nil
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, ln.Addr().String(), Options{ClientID: "test", MaxResponse: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var buf []byte
	var first *byte
	for i, n := range sizes {
		r, err := c.RoundTripReuse(apiVersions(), 5*time.Second, &buf)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		keys := r.(*kmsg.ApiVersionsResponse).ApiKeys
		if len(keys) != n || keys[n-1].ApiKey != int16(n-1) || keys[n-1].MaxVersion != int16((n-1)%7) {
			t.Fatalf("answer %d decoded %d keys (last %+v), want %d", i, len(keys), keys[len(keys)-1], n)
		}
		switch i {
		case 0:
			first = &buf[:1][0]
		case 1:
			if &buf[:1][0] != first {
				t.Fatal("a smaller answer did not reuse the buffer")
			}
		case 2:
			if &buf[:1][0] == first {
				t.Fatal("a larger answer was read into the old, smaller buffer")
			}
		}
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
