package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// MaxDecompressedSize bounds the output of Decompress. A records section that
// would inflate beyond it is reported as corrupt rather than decoded, so a few
// kilobytes from the network cannot make the broker allocate gigabytes.
const MaxDecompressedSize = 256 << 20

// xerialMagic opens snappy data framed by snappy-java's SnappyOutputStream,
// which the Java client and librdkafka send: the magic, then two big-endian
// int32 versions, then blocks each prefixed by a big-endian int32 length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialHeaderSize is the magic plus the two version fields.
const xerialHeaderSize = 16

// Decompress inflates src, the records section of a batch compressed with c.
// Unknown codecs, malformed input and output beyond MaxDecompressedSize are
// reported as *CorruptError. CodecNone returns src itself.
func Decompress(c Codec, src []byte) ([]byte, error) {
	if c == CodecNone {
		return src, nil
	}
	return decompressAppend(nil, c, src, MaxDecompressedSize)
}

// decompress is Decompress with an explicit output bound, so tests can
// exercise the bound without allocating MaxDecompressedSize.
func decompress(c Codec, src []byte, limit int) ([]byte, error) {
	if c == CodecNone {
		return src, nil
	}
	return decompressAppend(nil, c, src, limit)
}

// decompressAppend appends the decompression of src (codec c, not CodecNone)
// to dst, allowing at most limit bytes of output. The result is non-nil on
// success even when empty.
func decompressAppend(dst []byte, c Codec, src []byte, limit int) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch c {
	case CodecGzip:
		out, err = gunzip(dst, src, limit)
	case CodecSnappy:
		out, err = unsnappy(dst, src, limit)
	case CodecLZ4:
		out, err = unlz4(dst, src, limit)
	case CodecZstd:
		out, err = unzstd(dst, src, limit)
	default:
		return nil, corrupt("unknown compression codec %d", int8(c))
	}
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, corrupt("%s decompression: %v", c, err)
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// Compress deflates src with c. CodecNone returns src itself. Snappy output is
// a raw snappy block, which every Kafka client accepts (snappy-java reads
// unframed input); LZ4 output is an LZ4 frame with 64 KiB independent blocks,
// which Kafka's KafkaLZ4BlockInputStream requires.
func Compress(c Codec, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return src, nil
	case CodecGzip:
		return gzipBytes(src)
	case CodecSnappy:
		return snappy.Encode(nil, src), nil
	case CodecLZ4:
		return lz4Bytes(src)
	case CodecZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(src, make([]byte, 0, len(src)/2+64)), nil
	}
	return nil, fmt.Errorf("compress: unknown codec %d", int8(c))
}

// readAppend reads r to EOF, appending to dst, and fails once more than
// limit bytes have come out.
func readAppend(dst []byte, r io.Reader, limit int, sizeHint int) ([]byte, error) {
	start := len(dst)
	dst = slices.Grow(dst, min(max(sizeHint, 512), limit+1))
	for {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, min(cap(dst)-start, limit+1-(len(dst)-start)))
		}
		window := dst[len(dst):cap(dst)]
		if room := limit + 1 - (len(dst) - start); len(window) > room {
			window = window[:room]
		}
		n, err := r.Read(window)
		dst = dst[:len(dst)+n]
		if len(dst)-start > limit {
			return nil, corrupt("decompressed size exceeds %d bytes", limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

var gzipReaders sync.Pool // of *gzip.Reader

func gunzip(dst, src []byte, limit int) ([]byte, error) {
	var zr *gzip.Reader
	if v, ok := gzipReaders.Get().(*gzip.Reader); ok {
		zr = v
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			gzipReaders.Put(zr)
			return nil, err
		}
	} else {
		var err error
		if zr, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
			return nil, err
		}
	}
	// Java's GZIPInputStream reads concatenated members; so does ours (multistream is the default).
	out, err := readAppend(dst, zr, limit, 4*len(src))
	if cerr := zr.Close(); err == nil && cerr != nil {
		err = cerr
	}
	gzipReaders.Put(zr)
	return out, err
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func gzipBytes(src []byte) ([]byte, error) {
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	var buf bytes.Buffer
	buf.Grow(len(src)/2 + 64)
	zw.Reset(&buf)
	if _, err := zw.Write(src); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// unsnappy decodes either a raw snappy block or xerial-framed blocks.
func unsnappy(dst, src []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst, src, limit+len(dst))
	}
	if len(src) < xerialHeaderSize {
		return nil, corrupt("snappy: xerial header truncated")
	}
	out, start := dst, len(dst)
	for rest := src[xerialHeaderSize:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, corrupt("snappy: xerial block length truncated")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, corrupt("snappy: xerial block of %d bytes, %d remain", n, len(rest))
		}
		var err error
		if out, err = snappyBlock(out, rest[:n], limit+start); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// snappyBlock appends the decoding of one raw snappy block to dst, refusing
// to grow dst beyond limit bytes in all.
func snappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > limit-len(dst) {
		return nil, corrupt("decompressed size exceeds %d bytes", limit)
	}
	if cap(dst)-len(dst) < n {
		grown := make([]byte, len(dst), len(dst)+n+len(dst)/2)
		copy(grown, dst)
		dst = grown
	}
	got, err := snappy.Decode(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return nil, err
	}
	if len(got) != n {
		return nil, corrupt("snappy: block decoded to %d bytes, header said %d", len(got), n)
	}
	return dst[:len(dst)+n], nil
}

var lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}

func unlz4(dst, src []byte, limit int) ([]byte, error) {
	zr := lz4Readers.Get().(*lz4.Reader)
	zr.Reset(bytes.NewReader(src))
	out, err := readAppend(dst, zr, limit, 4*len(src))
	zr.Reset(nil)
	lz4Readers.Put(zr)
	return out, err
}

var lz4Writers = sync.Pool{New: func() any {
	zw := lz4.NewWriter(nil)
	// Options on a fresh writer cannot fail; a failure would only cost the 64 KiB block size.
	_ = zw.Apply(lz4.BlockSizeOption(lz4.Block64Kb))
	return zw
}}

func lz4Bytes(src []byte) ([]byte, error) {
	zw := lz4Writers.Get().(*lz4.Writer)
	defer lz4Writers.Put(zw)
	var buf bytes.Buffer
	buf.Grow(len(src)/2 + 64)
	zw.Reset(&buf)
	if _, err := zw.Write(src); err != nil {
		return nil, fmt.Errorf("lz4: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("lz4: %w", err)
	}
	zw.Reset(nil)
	return buf.Bytes(), nil
}

// zstdDecoder is shared by all goroutines: DecodeAll is safe for concurrent
// use, and WithDecoderMaxMemory makes it refuse output beyond the package bound.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderMaxMemory(MaxDecompressedSize),
	)
})

// zstdEncoder is shared by all goroutines: EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(0))
})

func unzstd(dst, src []byte, limit int) ([]byte, error) {
	dec, err := zstdDecoder()
	if err != nil {
		return nil, err
	}
	// Refuse frames that declare a size above the bound before DecodeAll
	// allocates room for them.
	var fh zstd.Header
	if err := fh.Decode(src); err == nil && fh.HasFCS && fh.FrameContentSize > uint64(limit) {
		return nil, corrupt("decompressed size exceeds %d bytes", limit)
	}
	out, err := dec.DecodeAll(src, dst)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return nil, corrupt("decompressed size exceeds %d bytes", limit)
	}
	if err != nil {
		return nil, err
	}
	if len(out)-len(dst) > limit {
		return nil, corrupt("decompressed size exceeds %d bytes", limit)
	}
	return out, nil
}
