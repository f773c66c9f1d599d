package records

import (
	"errors"
	"math"
	"testing"
)

func TestBuildDecodeRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for _, n := range []int{0, 1, 2, 9, 500} {
			spec := BatchSpec{
				BaseOffset:           1234,
				PartitionLeaderEpoch: 7,
				Attributes:           attrTransactional,
				FirstTimestamp:       1_700_000_000_000,
				ProducerID:           42,
				ProducerEpoch:        3,
				BaseSequence:         99,
				Codec:                c,
			}
			recs := sampleRecords(n)
			b := mustBuild(t, spec, recs)
			h, got, err := DecodeRecords(b)
			if err != nil {
				t.Fatalf("%s/%d: DecodeRecords: %v", c, n, err)
			}
			if err := recordsEqual(got, recs); err != nil {
				t.Fatalf("%s/%d: %v", c, n, err)
			}
			wantLast := int32(0)
			wantMax := spec.FirstTimestamp
			if n > 0 {
				wantLast = int32(n - 1)
				wantMax = spec.FirstTimestamp + int64((n-1)*7)
			}
			want := Header{
				BaseOffset: 1234, Length: int32(len(b) - LogOverhead), PartitionLeaderEpoch: 7, Magic: 2, CRC: h.CRC,
				Attributes: attrTransactional | int16(c), LastOffsetDelta: wantLast, FirstTimestamp: spec.FirstTimestamp,
				MaxTimestamp: wantMax, ProducerID: 42, ProducerEpoch: 3, BaseSequence: 99, NumRecords: int32(n),
			}
			if h != want {
				t.Fatalf("%s/%d: header\n got %+v\nwant %+v", c, n, h, want)
			}
			if h.Compression() != c || !h.IsTransactional() || h.IsControl() || h.LogAppendTime() {
				t.Fatalf("%s/%d: attribute accessors wrong for %#x", c, n, h.Attributes)
			}
		}
	}
}

func TestBuildExplicitMaxTimestampAndTrailingBytes(t *testing.T) {
	spec := producedSpec(CodecNone)
	spec.MaxTimestamp = 5
	b := mustBuild(t, spec, sampleRecords(3))
	h, recs, err := DecodeRecords(append(b, 1, 2, 3)) // bytes after the batch are not its business
	if err != nil || h.MaxTimestamp != 5 || len(recs) != 3 {
		t.Fatalf("h=%+v recs=%d err=%v", h, len(recs), err)
	}
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name string
		spec BatchSpec
		recs []Record
	}{
		{"codec bits in attributes", BatchSpec{Attributes: 1}, nil},
		{"unknown codec", BatchSpec{Codec: 5}, nil},
		{"negative codec", BatchSpec{Codec: -1}, nil},
		{"negative offset delta", BatchSpec{}, []Record{{OffsetDelta: -1}}},
		{"repeated offset delta", BatchSpec{}, []Record{{OffsetDelta: 0}, {OffsetDelta: 0}}},
		{"decreasing offset delta", BatchSpec{}, []Record{{OffsetDelta: 3}, {OffsetDelta: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Build(tt.spec, tt.recs); err == nil {
				t.Fatal("Build succeeded")
			}
		})
	}
}

func TestCheckDetectsEveryFlippedByte(t *testing.T) {
	for _, c := range allCodecs {
		b := mustBuild(t, producedSpec(c), sampleRecords(5))
		if _, err := Check(b); err != nil {
			t.Fatalf("%s: Check on intact batch: %v", c, err)
		}
		for i := offAttributes; i < len(b); i++ {
			for _, mask := range []byte{0x01, 0x80, 0xff} {
				b[i] ^= mask
				_, err := Check(b)
				b[i] ^= mask
				// A flip in lastOffsetDelta/recordCount may make ParseHeader refuse first; either way it fails.
				if err == nil {
					t.Fatalf("%s: flipping byte %d with %#x went unnoticed", c, i, mask)
				}
			}
		}
		// The CRC field itself.
		for i := offCRC; i < offAttributes; i++ {
			b[i] ^= 0x10
			if _, err := Check(b); !IsCorrupt(err) {
				t.Fatalf("%s: flipping CRC byte %d: err = %v", c, i, err)
			}
			b[i] ^= 0x10
		}
	}
}

func TestSetFieldsKeepCRC(t *testing.T) {
	b := mustBuild(t, producedSpec(CodecLZ4), sampleRecords(4))
	SetBaseOffset(b, 1<<40)
	SetPartitionLeaderEpoch(b, 17)
	h, recs, err := DecodeRecords(b)
	if err != nil {
		t.Fatalf("DecodeRecords after Set*: %v", err)
	}
	if h.BaseOffset != 1<<40 || h.PartitionLeaderEpoch != 17 || h.LastOffset() != 1<<40+3 || h.NextOffset() != 1<<40+4 || len(recs) != 4 {
		t.Fatalf("header %+v", h)
	}
	SetMaxTimestampLogAppendTime(b, 99)
	h, err = Check(b)
	if err != nil || !h.LogAppendTime() || h.MaxTimestamp != 99 {
		t.Fatalf("after SetMaxTimestampLogAppendTime: %+v, %v", h, err)
	}
	// Too short to be a batch: left alone, no panic.
	short := append([]byte(nil), b[:HeaderSize-1]...)
	SetMaxTimestampLogAppendTime(short, 1)
	if string(short) != string(b[:HeaderSize-1]) {
		t.Fatal("SetMaxTimestampLogAppendTime modified a short buffer")
	}
}

func TestTruncatedBatches(t *testing.T) {
	for _, c := range allCodecs {
		b := mustBuild(t, producedSpec(c), sampleRecords(6))
		for n := 0; n < len(b); n++ {
			_, err := Check(b[:n])
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s: Check(%d of %d bytes): err = %v, want ErrTruncated", c, n, len(b), err)
			}
			if _, _, err := DecodeRecords(b[:n]); !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s: DecodeRecords(%d of %d bytes): err = %v, want ErrTruncated", c, n, len(b), err)
			}
			if _, _, _, err := Split(b[:n]); err == nil {
				t.Fatalf("%s: Split(%d of %d bytes) succeeded", c, n, len(b))
			}
		}
	}
}

func TestSplit(t *testing.T) {
	a := mustBuild(t, producedSpec(CodecNone), sampleRecords(2))
	b := mustBuild(t, producedSpec(CodecGzip), sampleRecords(3))
	stream := append(append([]byte{}, a...), b...)
	first, h, rest, err := Split(stream)
	if err != nil || len(first) != len(a) || h.NumRecords != 2 || len(rest) != len(b) {
		t.Fatalf("first split: %d bytes, %+v, rest %d, %v", len(first), h, len(rest), err)
	}
	second, h, rest, err := Split(rest)
	if err != nil || len(second) != len(b) || h.NumRecords != 3 || len(rest) != 0 {
		t.Fatalf("second split: %d bytes, %+v, rest %d, %v", len(second), h, len(rest), err)
	}
}

func TestParseHeaderRejects(t *testing.T) {
	good := mustBuild(t, producedSpec(CodecNone), sampleRecords(1))
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	tests := []struct {
		name  string
		b     []byte
		check func(error) bool
	}{
		{"magic 1", mutate(func(b []byte) { b[offMagic] = 1 }), func(err error) bool { return errors.Is(err, ErrUnsupportedMagic) }},
		{"magic 3", mutate(func(b []byte) { b[offMagic] = 3 }), func(err error) bool { return errors.Is(err, ErrUnsupportedMagic) }},
		{"length below header", mutate(func(b []byte) { b[offLength+3] = 10 }), IsCorrupt},
		{"negative length", mutate(func(b []byte) { b[offLength] = 0x80 }), IsCorrupt},
		{"negative last offset delta", mutate(func(b []byte) { b[offLastOffsetDelta] = 0xff }), IsCorrupt},
		{"negative record count", mutate(func(b []byte) { b[offNumRecords] = 0xff }), IsCorrupt},
		{"too short for magic", good[:offMagic], func(err error) bool { return errors.Is(err, ErrTruncated) }},
		{"too short for header", good[:HeaderSize-1], func(err error) bool { return errors.Is(err, ErrTruncated) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseHeader(tt.b); !tt.check(err) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// malformedSections are uncompressed records sections paired with the
// header fields that make them wrong; each must be refused by DecodeRecords
// as corrupt and by Validate as an invalid record.
func malformedSections() []struct {
	name      string
	num, last int32
	section   []byte
} {
	one := section(Record{Key: []byte("k"), Value: []byte("v")})
	two := section(Record{OffsetDelta: 0}, Record{OffsetDelta: 1})
	return []struct {
		name      string
		num, last int32
		section   []byte
	}{
		{"count above records", 2, 1, one},
		{"count below records", 1, 0, two},
		{"huge count", math.MaxInt32, math.MaxInt32 - 1, one},
		{"record length past end", 1, 0, append(appendVarint(nil, 100), one[1:]...)},
		{"negative record length", 1, 0, append(appendVarint(nil, -2), one[1:]...)},
		{"record length short of fields", 1, 0, append(appendVarint(nil, int32(len(one)-2)), one[1:len(one)-1]...)},
		{"record length beyond fields", 1, 0, append(append(appendVarint(nil, int32(len(one))), one[1:]...), 0)},
		{"varint overflow in length", 1, 0, append([]byte{0xff, 0xff, 0xff, 0xff, 0x7f}, one[1:]...)},
		{"varint too long", 1, 0, append([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, one[1:]...)},
		{"varint truncated", 1, 0, []byte{0x80}},
		{"empty body", 1, 0, []byte{0x00}},
		{"negative key length", 1, 0, []byte{6, 0, 0, 0, 3 /* -2 */, 1, 0}},
		{"negative header count", 1, 0, []byte{6, 0, 0, 0, 1, 1, 1 /* -1 */}},
		{"header count beyond bytes", 1, 0, []byte{6, 0, 0, 0, 1, 1, 20}},
		{"negative header key length", 1, 0, []byte{8, 0, 0, 0, 1, 1, 2, 1 /* -1 */, 1}},
		{"header value past end", 1, 0, []byte{8, 0, 0, 0, 1, 1, 2, 0, 8}},
		{"header value length -2", 1, 0, []byte{8, 0, 0, 0, 1, 1, 2, 0, 3}},
		{"trailing bytes", 1, 0, append(append([]byte{}, one...), 0, 0)},
		{"records but count zero", 0, 0, one},
		{"offset deltas repeat", 2, 1, section(Record{OffsetDelta: 0}, Record{OffsetDelta: 0})},
		{"negative offset delta", 1, 0, section(Record{OffsetDelta: -1})},
		{"offset delta beyond last", 1, 0, section(Record{OffsetDelta: 1})},
	}
}

func TestDecodeRecordsRejectsMalformed(t *testing.T) {
	for _, tt := range malformedSections() {
		t.Run(tt.name, func(t *testing.T) {
			b := assemble(Header{NumRecords: tt.num, LastOffsetDelta: tt.last, ProducerID: -1}, tt.section)
			if _, _, err := DecodeRecords(b); !IsCorrupt(err) {
				t.Fatalf("err = %v, want CorruptError", err)
			}
			// The same section compressed is just as wrong.
			z, err := Compress(CodecZstd, tt.section)
			if err != nil {
				t.Fatal(err)
			}
			b = assemble(Header{NumRecords: tt.num, LastOffsetDelta: tt.last, ProducerID: -1, Attributes: int16(CodecZstd)}, z)
			if _, _, err := DecodeRecords(b); !IsCorrupt(err) {
				t.Fatalf("zstd: err = %v, want CorruptError", err)
			}
		})
	}
}

func TestDecodeRecordsCompactedBatch(t *testing.T) {
	// Compaction keeps lastOffsetDelta but drops records: gaps and even an empty batch are valid.
	gappy := section(Record{OffsetDelta: 1, Key: []byte("a")}, Record{OffsetDelta: 4, Key: []byte("b")})
	b := assemble(Header{NumRecords: 2, LastOffsetDelta: 9, ProducerID: -1}, gappy)
	if _, recs, err := DecodeRecords(b); err != nil || len(recs) != 2 || recs[1].OffsetDelta != 4 {
		t.Fatalf("gappy batch: %d records, %v", len(recs), err)
	}
	empty := assemble(Header{NumRecords: 0, LastOffsetDelta: 9, ProducerID: -1}, nil)
	if h, recs, err := DecodeRecords(empty); err != nil || len(recs) != 0 || h.NextOffset() != 10 {
		t.Fatalf("empty batch: %d records, %v", len(recs), err)
	}
}

func TestVarints(t *testing.T) {
	for _, v := range []int32{0, 1, -1, 63, -64, 64, 1 << 20, math.MaxInt32, math.MinInt32} {
		b := appendVarint(nil, v)
		if len(b) != varintSize(v) {
			t.Fatalf("varintSize(%d) = %d, encoding has %d", v, varintSize(v), len(b))
		}
		got, n, err := readVarint(b)
		if err != nil || got != v || n != len(b) {
			t.Fatalf("varint %d: got %d, n %d, err %v", v, got, n, err)
		}
	}
	for _, v := range []int64{0, 1, -1, 1 << 40, math.MaxInt64, math.MinInt64} {
		b := appendVarlong(nil, v)
		if len(b) != varlongSize(v) {
			t.Fatalf("varlongSize(%d) = %d, encoding has %d", v, varlongSize(v), len(b))
		}
		got, n, err := readVarlong(b)
		if err != nil || got != v || n != len(b) {
			t.Fatalf("varlong %d: got %d, n %d, err %v", v, got, n, err)
		}
	}
	bad := []struct {
		name string
		b    []byte
		long bool
	}{
		{"empty", nil, false},
		{"unterminated", []byte{0x80, 0x80}, false},
		{"6-byte varint", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, false},
		{"varint 5th byte overflow", []byte{0x80, 0x80, 0x80, 0x80, 0x10}, false},
		{"11-byte varlong", append(make([]byte, 10), 0x01), true},
		{"varlong 10th byte overflow", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, true},
	}
	for i := range bad[4].b[:10] {
		bad[4].b[i] = 0x80
	}
	for _, tt := range bad {
		var err error
		if tt.long {
			_, _, err = readVarlong(tt.b)
		} else {
			_, _, err = readVarint(tt.b)
		}
		if err == nil {
			t.Fatalf("%s: decoded without error", tt.name)
		}
	}
}
