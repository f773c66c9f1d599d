package compat

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawTimeout bounds every raw read or write.
const rawTimeout = 10 * time.Second

// rawDial opens a plain TCP connection to the broker, closed at cleanup.
func rawDial(t testing.TB, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, rawTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// appendRequest appends one framed request: int32 size, int16 key, int16
// version, int32 correlation id, int16-length client id, an empty tagged
// field section when flexible, then body.
func appendRequest(dst []byte, key, version int16, corr int32, flexible bool, body []byte) []byte {
	const clientID = "compat-raw"
	hdr := binary.BigEndian.AppendUint16(nil, uint16(key))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(version))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(corr))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(len(clientID)))
	hdr = append(hdr, clientID...)
	if flexible {
		hdr = append(hdr, 0)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(hdr)+len(body)))
	dst = append(dst, hdr...)
	return append(dst, body...)
}

// appendKmsg frames req at its version with correlation id corr.
func appendKmsg(dst []byte, req kmsg.Request, corr int32) []byte {
	return appendRequest(dst, req.Key(), req.GetVersion(), corr, req.IsFlexible(), req.AppendTo(nil))
}

// readFrame reads one response frame and returns its correlation id and the
// bytes after it.
func readFrame(t testing.TB, r io.Reader) (int32, []byte) {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		t.Fatalf("reading response size: %v", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		t.Fatalf("response frame size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatalf("reading %d-byte response: %v", n, err)
	}
	return int32(binary.BigEndian.Uint32(buf)), buf[4:]
}

// decodeResponse decodes body as the response to req, skipping the response
// header's tagged fields when flexible (never for ApiVersions).
func decodeResponse(t testing.TB, req kmsg.Request, body []byte) kmsg.Response {
	t.Helper()
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if len(body) == 0 || body[0] != 0 {
			t.Fatalf("response header tagged fields: want one 0 byte, have % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %T v%d: %v", resp, req.GetVersion(), err)
	}
	return resp
}

// expectClosed fails unless the broker closes conn (EOF or reset) within
// rawTimeout. Bytes sent before the close are logged.
func expectClosed(t testing.TB, conn net.Conn, what string) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(rawTimeout)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	got, err := io.ReadAll(conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: broker kept the connection open for %v", what, rawTimeout)
	}
	if len(got) > 0 {
		t.Logf("%s: broker answered %d bytes before closing: % x", what, len(got), got[:min(len(got), 32)])
	}
}

// roundTrip checks that a franz-go client can still produce and consume.
func roundTrip(t testing.TB, cl *kgo.Client, addr, topic string, seq *int) {
	t.Helper()
	r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "after-%d", *seq)}
	produceSync(t, cl, []*kgo.Record{r})
	*seq++
	got := consumeN(t, addr, topic, 1, *seq)
	if last := got[len(got)-1]; string(last.Value) != string(r.Value) {
		t.Fatalf("last record %q, want %q", last.Value, r.Value)
	}
}

// TestProtocolBadInput sends malformed input on raw connections; the broker
// must close each such connection and keep serving other clients.
func TestProtocolBadInput(t *testing.T) {
	b := startBroker(t, t.TempDir(), "socket.request.max.bytes=100000")
	const topic = "survivor"
	createTopic(t, newAdmin(t, b.Addr()), topic, 1, nil)
	cl := newKgo(t, b.Addr())
	seq := 0
	roundTrip(t, cl, b.Addr(), topic, &seq)

	huge := binary.BigEndian.AppendUint32(nil, 200000)
	huge = append(huge, appendRequest(nil, 18, 0, 1, false, nil)[4:]...)
	truncated := appendKmsg(nil, kmsg.NewPtrMetadataRequest(), 1)

	cases := []struct {
		name      string
		send      []byte
		closeSelf bool // we close after sending; the broker must survive
	}{
		{"frame above socket.request.max.bytes", huge, false},
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false},
		{"garbage frame", append(binary.BigEndian.AppendUint32(nil, 12), 0xff, 0xfe, 0xfd, 0xfc, 1, 2, 3, 4, 5, 6, 7, 8), false},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0xfffffff0), false},
		{"unknown api key 999", appendRequest(nil, 999, 0, 7, false, nil), false},
		{"truncated frame then close", truncated[:len(truncated)/2], true},
		{"size only then close", []byte{0, 0, 0, 50}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := rawDial(t, b.Addr())
			if err := conn.SetWriteDeadline(time.Now().Add(rawTimeout)); err != nil {
				t.Fatalf("deadline: %v", err)
			}
			if _, err := conn.Write(c.send); err != nil {
				t.Fatalf("write: %v", err)
			}
			if c.closeSelf {
				_ = conn.Close()
			} else {
				expectClosed(t, conn, c.name)
			}
			b.Alive()
			roundTrip(t, cl, b.Addr(), topic, &seq)
		})
	}
}

// TestProtocolApiVersions checks ApiVersions v0 and the answer to a version
// the broker does not know.
func TestProtocolApiVersions(t *testing.T) {
	b := startBroker(t, t.TempDir())
	conn := rawDial(t, b.Addr())
	if err := conn.SetDeadline(time.Now().Add(rawTimeout)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	rd := bufio.NewReader(conn)

	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	if _, err := conn.Write(appendKmsg(nil, req, 41)); err != nil {
		t.Fatalf("write: %v", err)
	}
	corr, body := readFrame(t, rd)
	if corr != 41 {
		t.Fatalf("correlation id %d, want 41", corr)
	}
	resp := decodeResponse(t, req, body).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions v0 error %d", resp.ErrorCode)
	}
	checkAdvertised(t, resp)

	// Version 99: header v2 (flexible, as a client sends for v3+); Kafka
	// answers UNSUPPORTED_VERSION with a v0 body listing what it supports.
	if _, err := conn.Write(appendRequest(nil, 18, 99, 42, true, []byte{0, 0, 0})); err != nil {
		t.Fatalf("write: %v", err)
	}
	corr, body = readFrame(t, rd)
	if corr != 42 {
		t.Fatalf("correlation id %d, want 42", corr)
	}
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.SetVersion(0)
	if err := v0.ReadFrom(body); err != nil {
		t.Fatalf("ApiVersions v99 answer is not a v0 body: %v (% x)", err, body[:min(len(body), 32)])
	}
	if v0.ErrorCode != 35 {
		t.Fatalf("ApiVersions v99 error %d, want 35 (UNSUPPORTED_VERSION)", v0.ErrorCode)
	}
	checkAdvertised(t, v0)

	// The connection stays usable afterwards.
	req3 := kmsg.NewPtrApiVersionsRequest()
	req3.SetVersion(3)
	req3.ClientSoftwareName = "compat"
	req3.ClientSoftwareVersion = "1.0"
	if _, err := conn.Write(appendKmsg(nil, req3, 43)); err != nil {
		t.Fatalf("write: %v", err)
	}
	corr, body = readFrame(t, rd)
	if corr != 43 {
		t.Fatalf("correlation id %d, want 43", corr)
	}
	if r := decodeResponse(t, req3, body).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("ApiVersions v3 error %d", r.ErrorCode)
	}
}

// checkAdvertised fails unless resp lists the APIs the single-broker core
// must serve, with ApiVersions reaching at least v3.
func checkAdvertised(t testing.TB, resp *kmsg.ApiVersionsResponse) {
	t.Helper()
	have := make(map[int16]kmsg.ApiVersionsResponseApiKey)
	for _, k := range resp.ApiKeys {
		have[k.ApiKey] = k
	}
	for _, key := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.ApiVersions,
		kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.DescribeConfigs, kmsg.InitProducerID, kmsg.DescribeCluster} {
		k, ok := have[key.Int16()]
		if !ok {
			t.Errorf("ApiVersions does not list %s (%d)", key.Name(), key)
			continue
		}
		if k.MinVersion > k.MaxVersion || k.MinVersion < 0 {
			t.Errorf("%s versions %d..%d", key.Name(), k.MinVersion, k.MaxVersion)
		}
	}
	if k := have[kmsg.ApiVersions.Int16()]; k.MaxVersion < 3 {
		t.Errorf("ApiVersions max version %d, want >= 3", k.MaxVersion)
	}
}

// TestProtocolPipelining writes several requests back to back on one
// connection and checks that the answers come back in request order.
func TestProtocolPipelining(t *testing.T) {
	b := startBroker(t, t.TempDir())
	createTopic(t, newAdmin(t, b.Addr()), "piped", 2, nil)
	conn := rawDial(t, b.Addr())
	if err := conn.SetDeadline(time.Now().Add(rawTimeout)); err != nil {
		t.Fatalf("deadline: %v", err)
	}
	rd := bufio.NewReader(conn)

	// Learn the Metadata versions first, on the same connection.
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	if _, err := conn.Write(appendKmsg(nil, av, 100)); err != nil {
		t.Fatalf("write: %v", err)
	}
	_, body := readFrame(t, rd)
	minV, maxV := int16(-1), int16(-1)
	for _, k := range decodeResponse(t, av, body).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == kmsg.Metadata.Int16() {
			minV, maxV = max(k.MinVersion, 1), min(k.MaxVersion, kmsg.NewPtrMetadataRequest().MaxVersion())
		}
	}
	if minV < 0 || maxV < minV {
		t.Fatalf("no usable Metadata versions advertised (%d..%d)", minV, maxV)
	}

	var reqs []kmsg.Request
	for i := 0; i < 10; i++ {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(minV + int16(i)%(maxV-minV+1)) // non-flexible and flexible versions
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("piped")
		md.Topics = append(md.Topics, rt)
		reqs = append(reqs, md)
	}
	// Then interleave different APIs, which a broker may handle at
	// different speeds but must still answer in order.
	for i := 0; i < 10; i++ {
		if i%2 == 0 {
			avi := kmsg.NewPtrApiVersionsRequest()
			avi.SetVersion(int16(i % 4))
			reqs = append(reqs, avi)
			continue
		}
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(maxV)
		reqs = append(reqs, md)
	}
	var out []byte
	for i, r := range reqs {
		out = appendKmsg(out, r, int32(i+1))
	}
	if _, err := conn.Write(out); err != nil {
		t.Fatalf("write: %v", err)
	}
	for i, r := range reqs {
		corr, body := readFrame(t, rd)
		if corr != int32(i+1) {
			t.Fatalf("response #%d has correlation id %d, want %d (responses out of order)", i+1, corr, i+1)
		}
		switch resp := decodeResponse(t, r, body).(type) {
		case *kmsg.MetadataResponse:
			if md := r.(*kmsg.MetadataRequest); len(md.Topics) == 1 {
				if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 2 {
					t.Fatalf("Metadata v%d response #%d: topics %+v", r.GetVersion(), i+1, resp.Topics)
				}
			}
		case *kmsg.ApiVersionsResponse:
			if resp.ErrorCode != 0 {
				t.Fatalf("ApiVersions v%d response #%d: error %d", r.GetVersion(), i+1, resp.ErrorCode)
			}
		}
	}
}
