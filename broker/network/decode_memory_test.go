//go:build !race

// The race detector changes allocation sizes, so these measurements run
// without it.

package network

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"testing"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// slicePaths lists the paths (field indexes) to every slice field of
// struct or primitive elements reachable from t, []byte excluded.
func slicePaths(t reflect.Type, prefix []int, out *[][]int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() || f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() == reflect.Uint8 {
			continue
		}
		p := append(append([]int(nil), prefix...), i)
		*out = append(*out, p)
		if f.Type.Elem().Kind() == reflect.Struct {
			slicePaths(f.Type.Elem(), p, out)
		}
	}
}

// fill sets the slice at path in v: n zero elements at its end, one element
// at each slice above it.
func fill(v reflect.Value, path []int, n int) {
	f := v.Field(path[0])
	if len(path) == 1 {
		f.Set(reflect.MakeSlice(f.Type(), n, n))
		return
	}
	if f.Len() == 0 {
		f.Set(reflect.MakeSlice(f.Type(), 1, 1))
	}
	fill(f.Index(0), path[1:], n)
}

// decodeAmplification is the bytes allocated decoding frame, per frame
// byte, and the decoded request's decodedBytes estimate.
func decodeAmplification(frame []byte) (float64, int64, error) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req, err := protocol.ParseRequest(frame)
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(len(frame)), decodedBytes(req.Body), err
}

const maxDecodeAmplification = decodeFactor

// probeBytes is the size of the arrays the test builds.
const probeBytes = 16 << 10

// TestDecodeMemoryBoundedByFrameSize fills, for every advertised API and
// version, each array of the request (and each nested one) with as many
// minimal elements as probeBytes allow, and also declares up to one element
// per byte that follows (a hostile frame): decoding allocates at most
// decodeFactor bytes per frame byte, and decodedBytes accounts for what an
// honest request allocates. The worst case is logged.
func TestDecodeMemoryBoundedByFrameSize(t *testing.T) {
	worst, worstWhat := 0.0, ""
	for _, key := range protocol.SupportedKeys() {
		vr, _ := protocol.Supported(key)
		for v := vr.Min; v <= vr.Max; v++ {
			var paths [][]int
			slicePaths(reflect.TypeOf(kmsg.RequestForKey(key)).Elem(), nil, &paths)
			for _, p := range paths {
				req := kmsg.RequestForKey(key)
				req.SetVersion(v)
				fill(reflect.ValueOf(req).Elem(), p, 1)
				one := len(req.AppendTo(nil))
				fill(reflect.ValueOf(req).Elem(), p, 0)
				zero := len(req.AppendTo(nil))
				if one == zero {
					continue // the field is not on the wire at this version
				}
				n := probeBytes / (one - zero)
				fill(reflect.ValueOf(req).Elem(), p, n)
				f := requestFrame(req)
				amp, est, err := decodeAmplification(f)
				if err != nil {
					t.Fatalf("%s v%d: %v", kmsg.NameForKey(key), v, err)
				}
				what := fmt.Sprintf("%s v%d %v (%d elements of %d bytes)", kmsg.NameForKey(key), v, p, n, one-zero)
				if alloc := amp * float64(len(f)); alloc > 1.5*float64(est)+4096 {
					t.Errorf("%s: decoding allocated %.0f bytes, decodedBytes estimates %d", what, alloc, est)
				}
				if amp > worst {
					worst, worstWhat = amp, what
				}
				if amp > maxDecodeAmplification {
					t.Errorf("%s: decoding allocates %.1f bytes per frame byte, over %d", what, amp, maxDecodeAmplification)
				}
				// A hostile frame: the array declares count elements and
				// only probeBytes zero bytes follow, for counts up to one
				// per byte (kmsg's minimum-size check refuses the largest).
				fill(reflect.ValueOf(req).Elem(), p, 0)
				z := requestFrame(req)
				fill(reflect.ValueOf(req).Elem(), p, 1)
				o := requestFrame(req)
				at := 0
				for at < len(z) && z[at] == o[at] {
					at++
				}
				for _, div := range []int{1, 2, 3, 4, 6, 8, 16} {
					count := probeBytes / div
					var hostile []byte
					if req.IsFlexible() {
						hostile = binary.AppendUvarint(append([]byte(nil), z[:at]...), uint64(count)+1)
						hostile = append(append(hostile, make([]byte, probeBytes)...), z[at+1:]...)
					} else {
						hostile = binary.BigEndian.AppendUint32(append([]byte(nil), z[:at-3]...), uint32(count))
						hostile = append(append(hostile, make([]byte, probeBytes)...), z[at+1:]...)
					}
					amp, _, _ := decodeAmplification(hostile)
					what := fmt.Sprintf("%s v%d %v declaring %d elements in %d bytes", kmsg.NameForKey(key), v, p, count, probeBytes)
					if amp > worst {
						worst, worstWhat = amp, what
					}
					if amp > maxDecodeAmplification {
						t.Errorf("%s: decoding allocates %.1f bytes per frame byte, over %d", what, amp, maxDecodeAmplification)
					}
				}
			}
		}
	}
	t.Logf("worst decode amplification %.1f: %s", worst, worstWhat)
}

// requestFrame is the body of a request frame (header v1/v2 and body),
// without the size prefix, as ParseRequest takes it.
func requestFrame(req kmsg.Request) []byte {
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, 1)
	body = append(body, 0, 1, 'c')
	if req.IsFlexible() {
		body = append(body, 0)
	}
	return req.AppendTo(body)
}
