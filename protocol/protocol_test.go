package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeRequest builds a request frame body (without the size prefix) the way a client does.
func encodeRequest(req kmsg.Request, correlationID int32, clientID string) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

func sized(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestReadFrame(t *testing.T) {
	body := bytes.Repeat([]byte{7}, 20)
	for _, tc := range []struct {
		name string
		in   []byte
		max  int32
		want error
	}{
		{"ok", sized(body), 100, nil},
		{"too large", sized(body), 19, ErrFrameTooLarge},
		{"negative", []byte{0xff, 0xff, 0xff, 0xf0}, 100, ErrBadFrameSize},
		{"too small", sized([]byte{1, 2}), 100, ErrBadFrameSize},
		{"truncated body", sized(body)[:10], 100, io.ErrUnexpectedEOF},
		{"empty", nil, 100, io.EOF},
		{"truncated size", []byte{0, 0}, 100, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFrame(bytes.NewReader(tc.in), tc.max, nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err == nil && !bytes.Equal(got, body) {
				t.Fatalf("body = %x", got)
			}
		})
	}
}

func TestParseRequestRoundTrip(t *testing.T) {
	for _, v := range []int16{0, 4, 9, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		topic := "orders"
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
		got, err := ParseRequest(encodeRequest(req, 42, "client-1"))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if got.Header.CorrelationID != 42 || got.Header.ClientID != "client-1" || got.Header.APIVersion != v {
			t.Fatalf("v%d: header %+v", v, got.Header)
		}
		m, ok := got.Body.(*kmsg.MetadataRequest)
		if !ok || len(m.Topics) != 1 || *m.Topics[0].Topic != "orders" {
			t.Fatalf("v%d: body %+v", v, got.Body)
		}
	}
}

func TestParseRequestErrors(t *testing.T) {
	api := kmsg.NewPtrApiVersionsRequest()
	api.Version = 99
	unsupported, err := ParseRequest(encodeRequest(api, 7, ""))
	if err != nil || unsupported.Body != nil || unsupported.Header.CorrelationID != 7 {
		t.Fatalf("unsupported version: %+v, %v", unsupported, err)
	}

	unknown := []byte{0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0xff, 0xff}
	if _, err := ParseRequest(unknown); !errors.Is(err, ErrUnknownAPIKey) {
		t.Fatalf("unknown key: %v", err)
	}
	badClientID := []byte{0, 3, 0, 1, 0, 0, 0, 1, 0x7f, 0xff}
	if _, err := ParseRequest(badClientID); !errors.Is(err, ErrMalformedHeader) {
		t.Fatalf("bad client id: %v", err)
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	frame := encodeRequest(meta, 1, "x")
	if _, err := ParseRequest(frame[:len(frame)-2]); err == nil {
		t.Fatal("truncated body decoded without error")
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	api := kmsg.NewPtrApiVersionsResponse()
	api.Version = 3
	meta := kmsg.NewPtrMetadataResponse()
	meta.Version = 9
	old := kmsg.NewPtrMetadataResponse()
	old.Version = 1
	for _, tc := range []struct {
		resp    kmsg.Response
		tagByte bool
	}{{api, false}, {meta, true}, {old, false}} {
		b := AppendResponse(nil, 5, tc.resp)
		if int(binary.BigEndian.Uint32(b)) != len(b)-4 {
			t.Fatalf("size prefix %d for %d bytes", binary.BigEndian.Uint32(b), len(b))
		}
		if binary.BigEndian.Uint32(b[4:]) != 5 {
			t.Fatal("correlation id")
		}
		body := b[8:]
		if tc.tagByte {
			if body[0] != 0 {
				t.Fatal("missing empty tag section")
			}
			body = body[1:]
		}
		fresh := tc.resp.(interface{ ReadFrom([]byte) error })
		if err := fresh.ReadFrom(body); err != nil {
			t.Fatalf("%T v%d: body does not decode: %v", tc.resp, tc.resp.GetVersion(), err)
		}
	}
}

func TestSupportedTable(t *testing.T) {
	for _, k := range SupportedKeys() {
		vr, _ := Supported(k)
		req := kmsg.RequestForKey(k)
		if req == nil || vr.Min > vr.Max || vr.Max > req.MaxVersion() {
			t.Fatalf("key %d: range %+v beyond kmsg", k, vr)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	f.Add(encodeRequest(meta, 1, "c"))
	prod := kmsg.NewPtrProduceRequest()
	prod.Version = 9
	prod.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: []byte{1, 2, 3}}}}}
	f.Add(encodeRequest(prod, 2, ""))
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 16
	f.Add(encodeRequest(fetch, 3, "x"))
	api := kmsg.NewPtrApiVersionsRequest()
	api.Version = 3
	f.Add(encodeRequest(api, 4, "x"))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseRequest(b)
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add(sized([]byte("0123456789abc")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 12, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		frame, err := ReadFrame(bytes.NewReader(b), 1<<16, nil)
		if err == nil && len(frame) != int(binary.BigEndian.Uint32(b)) {
			t.Fatalf("frame of %d bytes for declared %d", len(frame), binary.BigEndian.Uint32(b))
		}
	})
}
