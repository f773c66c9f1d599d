package records

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/golang/snappy"
)

func compressionInputs() map[string][]byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 200_000)
	for i := range random {
		random[i] = byte(rnd.Uint32())
	}
	return map[string][]byte{
		"empty":      {},
		"small":      []byte("hello, kafka"),
		"repetitive": bytes.Repeat([]byte("abcdefgh"), 300_000),
		"random":     random,
	}
}

func TestCompressRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for name, in := range compressionInputs() {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				z, err := Compress(c, in)
				if err != nil {
					t.Fatalf("Compress: %v", err)
				}
				out, err := Decompress(c, z)
				if err != nil {
					t.Fatalf("Decompress: %v", err)
				}
				if !bytes.Equal(out, in) {
					t.Fatalf("round trip changed %d bytes into %d bytes", len(in), len(out))
				}
			})
		}
	}
}

// xerialFrame frames blocks the way snappy-java's SnappyOutputStream does.
func xerialFrame(blocks ...[]byte) []byte {
	b := append([]byte{}, xerialMagic...)
	b = binary.BigEndian.AppendUint32(b, 1) // version
	b = binary.BigEndian.AppendUint32(b, 1) // compatible version
	for _, blk := range blocks {
		z := snappy.Encode(nil, blk)
		b = binary.BigEndian.AppendUint32(b, uint32(len(z)))
		b = append(b, z...)
	}
	return b
}

func TestDecompressXerialSnappy(t *testing.T) {
	parts := [][]byte{[]byte("first block "), bytes.Repeat([]byte("x"), 40_000), []byte(" last")}
	want := bytes.Join(parts, nil)
	full := xerialFrame(parts...)
	tests := []struct {
		name    string
		in      []byte
		want    []byte
		corrupt bool
	}{
		{"three blocks", full, want, false},
		{"no blocks", xerialFrame(), []byte{}, false},
		{"one empty block", xerialFrame([]byte{}), []byte{}, false},
		{"header truncated", full[:10], nil, true},
		{"block length truncated", full[:xerialHeaderSize+2], nil, true},
		{"block body truncated", full[:len(full)-2], nil, true},
		{"block length too large", append(xerialFrame(), 0xff, 0xff, 0xff, 0xff, 1), nil, true},
		{"garbage block", append(xerialFrame(), 0, 0, 0, 3, 0xff, 0xff, 0xff), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Decompress(CodecSnappy, tt.in)
			if tt.corrupt {
				if !IsCorrupt(err) {
					t.Fatalf("err = %v, want CorruptError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decompress: %v", err)
			}
			if !bytes.Equal(out, tt.want) {
				t.Fatalf("got %d bytes, want %d", len(out), len(tt.want))
			}
		})
	}
}

func TestDecompressBombCapped(t *testing.T) {
	zeros := make([]byte, 1<<20)
	for _, c := range allCodecs[1:] {
		t.Run(c.String(), func(t *testing.T) {
			z, err := Compress(c, zeros)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decompress(c, z, 64<<10); !IsCorrupt(err) {
				t.Fatalf("limit 64 KiB: err = %v, want CorruptError", err)
			}
			out, err := decompress(c, z, len(zeros))
			if err != nil || len(out) != len(zeros) {
				t.Fatalf("limit = size: %d bytes, err %v", len(out), err)
			}
		})
	}
	t.Run("xerial blocks add up", func(t *testing.T) {
		z := xerialFrame(zeros[:40<<10], zeros[:40<<10])
		if _, err := decompress(CodecSnappy, z, 64<<10); !IsCorrupt(err) {
			t.Fatalf("err = %v, want CorruptError", err)
		}
	})
	t.Run("snappy header claims more than MaxDecompressedSize", func(t *testing.T) {
		z := appendUvarint(nil, MaxDecompressedSize+1)
		z = append(z, 0, 0, 0, 0)
		if _, err := Decompress(CodecSnappy, z); !IsCorrupt(err) {
			t.Fatalf("err = %v, want CorruptError", err)
		}
	})
}

func TestDecompressRejectsBadInput(t *testing.T) {
	garbage := []byte("this is not compressed data at all")
	tests := []struct {
		codec Codec
		in    []byte
	}{
		{CodecGzip, garbage},
		{CodecGzip, []byte{0x1f, 0x8b}},
		{CodecSnappy, garbage},
		{CodecLZ4, garbage},
		{CodecLZ4, []byte{0x04, 0x22, 0x4d, 0x18}},
		{CodecZstd, garbage},
		{CodecZstd, []byte{0x28, 0xb5, 0x2f, 0xfd}},
		{Codec(5), nil},
		{Codec(6), garbage},
		{Codec(7), garbage},
	}
	for _, tt := range tests {
		t.Run(tt.codec.String(), func(t *testing.T) {
			if _, err := Decompress(tt.codec, tt.in); !IsCorrupt(err) {
				t.Fatalf("err = %v, want CorruptError", err)
			}
		})
	}
	if _, err := Compress(Codec(5), garbage); err == nil {
		t.Fatal("Compress(codec 5) succeeded")
	}
}

func TestZstdSharedAcrossGoroutines(t *testing.T) {
	in := bytes.Repeat([]byte("concurrent "), 10_000)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			z, err := Compress(CodecZstd, in)
			if err != nil {
				errs <- err
				return
			}
			out, err := Decompress(CodecZstd, z)
			if err == nil && !bytes.Equal(out, in) {
				err = &CorruptError{Reason: "round trip mismatch"}
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
