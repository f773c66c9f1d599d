package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrMalformedHeader reports a request header that cannot be decoded.
var ErrMalformedHeader = errors.New("malformed request header")

// ErrUnknownAPIKey reports a request for an API key the broker does not know.
// Kafka closes the connection in this case.
var ErrUnknownAPIKey = errors.New("unknown api key")

// RequestHeader is a decoded request header (v0, v1 or v2).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      string
}

// Request is one decoded request: its header and, when the version is
// supported, its body. Body is nil when the version is unsupported; only
// ApiVersions is answered in that case (with UNSUPPORTED_VERSION), as Kafka does.
type Request struct {
	Header RequestHeader
	Body   kmsg.Request
}

// ParseRequest decodes the header and body of a request frame. It returns
// ErrUnknownAPIKey for keys outside the supported table, and an error for
// undecodable bytes; in both cases the caller should close the connection.
// An unsupported version of a known key yields a Request with a nil Body.
func ParseRequest(frame []byte) (Request, error) {
	if len(frame) < minRequestSize {
		return Request{}, fmt.Errorf("%w: %d bytes", ErrMalformedHeader, len(frame))
	}
	h := RequestHeader{
		APIKey:        int16(binary.BigEndian.Uint16(frame[0:])),
		APIVersion:    int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	vr, ok := Supported(h.APIKey)
	if !ok {
		vr, ok = InterBroker(h.APIKey)
	}
	if !ok {
		return Request{Header: h}, fmt.Errorf("%w %d (version %d)", ErrUnknownAPIKey, h.APIKey, h.APIVersion)
	}
	rest := frame[8:]
	idLen := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if idLen > 0 {
		if int(idLen) > len(rest) {
			return Request{Header: h}, fmt.Errorf("%w: client id length %d exceeds frame", ErrMalformedHeader, idLen)
		}
		h.ClientID = string(rest[:idLen])
		rest = rest[idLen:]
	} else if idLen < -1 {
		return Request{Header: h}, fmt.Errorf("%w: client id length %d", ErrMalformedHeader, idLen)
	}
	if h.APIVersion < vr.Min || h.APIVersion > vr.Max {
		return Request{Header: h}, nil
	}
	body := kmsg.RequestForKey(h.APIKey)
	body.SetVersion(h.APIVersion)
	if body.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return Request{Header: h}, fmt.Errorf("%w: %v", ErrMalformedHeader, err)
		}
	}
	if needsStopReplicaOrder(h.APIKey, h.APIVersion) {
		rest = append([]byte(nil), rest...) // the frame is not ours to reorder
		StopReplicaFromWire(h.APIKey, h.APIVersion, rest)
	}
	if err := body.ReadFrom(rest); err != nil {
		return Request{Header: h}, fmt.Errorf("decoding %s v%d body: %w", kmsg.NameForKey(h.APIKey), h.APIVersion, err)
	}
	return Request{Header: h, Body: body}, nil
}

// skipTags skips a tagged-field section (uvarint count, then per field a
// uvarint tag, a uvarint size and that many bytes).
func skipTags(b []byte) ([]byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < n; i++ {
		if _, b, err = uvarint(b); err != nil {
			return nil, err
		}
		var size uint64
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, errors.New("tagged field exceeds frame")
		}
		b = b[size:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, errors.New("bad uvarint")
	}
	return v, b[n:], nil
}

// AppendResponse appends a complete response frame (size, header, body) to dst.
// The header is v1 (with an empty tagged-field section) for flexible versions,
// except for ApiVersions, whose response header is always v0 (KIP-511).
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
