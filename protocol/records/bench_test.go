package records

import (
	"math/rand/v2"
	"testing"
)

// benchBatch is a 16 KiB batch of sixteen 1 KiB records with moderately
// compressible values.
func benchBatch(b *testing.B, c Codec) []byte {
	rnd := rand.New(rand.NewPCG(3, 4))
	recs := make([]Record, 16)
	for i := range recs {
		v := make([]byte, 1024)
		for j := range v {
			v[j] = byte('a' + rnd.IntN(8))
		}
		recs[i] = Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte("key"), Value: v}
	}
	return mustBuild(b, producedSpec(c), recs)
}

func BenchmarkValidate(b *testing.B) {
	for _, c := range []Codec{CodecNone, CodecLZ4} {
		b.Run(c.String(), func(b *testing.B) {
			batch := benchBatch(b, c)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
