package records

import (
	"encoding/binary"
	"errors"
	"testing"
)

// errKind classifies a validation error by the Kafka code it maps to.
type errKind int

const (
	kindNone errKind = iota
	kindCorrupt
	kindInvalidRecord
	kindInvalidTimestamp
	kindUnsupportedCompression
	kindTooLarge
)

func kindOf(err error) errKind {
	switch {
	case err == nil:
		return kindNone
	case IsCorrupt(err):
		return kindCorrupt
	case errors.Is(err, ErrInvalidRecord):
		return kindInvalidRecord
	case errors.Is(err, ErrInvalidTimestamp):
		return kindInvalidTimestamp
	case errors.Is(err, ErrUnsupportedCompressionType):
		return kindUnsupportedCompression
	case errors.Is(err, ErrMessageTooLarge):
		return kindTooLarge
	}
	return -1
}

func (k errKind) String() string {
	return [...]string{"none", "CORRUPT_MESSAGE", "INVALID_RECORD", "INVALID_TIMESTAMP", "UNSUPPORTED_COMPRESSION_TYPE", "MESSAGE_TOO_LARGE"}[k]
}

func TestValidate(t *testing.T) {
	good := mustBuild(t, producedSpec(CodecNone), sampleRecords(4))
	goodGzip := mustBuild(t, producedSpec(CodecGzip), sampleRecords(4))
	goodZstd := mustBuild(t, producedSpec(CodecZstd), sampleRecords(4))
	edit := func(src []byte, f func(b []byte), recrc bool) []byte {
		b := append([]byte(nil), src...)
		f(b)
		if recrc {
			resum(b)
		}
		return b
	}
	withSpec := func(f func(*BatchSpec), recs []Record) []byte {
		s := producedSpec(CodecNone)
		f(&s)
		return mustBuild(t, s, recs)
	}
	now := int64(1_700_000_000_000)
	tsOpts := ValidateOptions{CheckTimestamps: true, NowMs: now, TimestampBeforeMaxMs: 1000, TimestampAfterMaxMs: 1000}
	tests := []struct {
		name    string
		b       []byte
		version int16
		opts    ValidateOptions
		want    errKind
	}{
		{"valid uncompressed", good, 11, ValidateOptions{}, kindNone},
		{"valid gzip", goodGzip, 3, ValidateOptions{}, kindNone},
		{"valid zstd v7", goodZstd, 7, ValidateOptions{}, kindNone},
		{"zstd before v7", goodZstd, 6, ValidateOptions{}, kindUnsupportedCompression},
		{"idempotent", withSpec(func(s *BatchSpec) { s.ProducerID, s.ProducerEpoch, s.BaseSequence = 5, 0, 10 }, sampleRecords(2)), 11, ValidateOptions{}, kindNone},
		{"empty input", nil, 11, ValidateOptions{}, kindInvalidRecord},
		{"truncated", good[:len(good)-1], 11, ValidateOptions{}, kindInvalidRecord},
		{"header only fragment", good[:HeaderSize], 11, ValidateOptions{}, kindInvalidRecord},
		{"magic 1", edit(good, func(b []byte) { b[offMagic] = 1 }, false), 11, ValidateOptions{}, kindInvalidRecord},
		{"length below legacy overhead", edit(good, func(b []byte) { binary.BigEndian.PutUint32(b[offLength:], 13) }, false), 11, ValidateOptions{}, kindCorrupt},
		{"length below v2 header", edit(good, func(b []byte) { binary.BigEndian.PutUint32(b[offLength:], 40) }, false), 11, ValidateOptions{}, kindCorrupt},
		{"crc mismatch", edit(good, func(b []byte) { b[len(b)-1] ^= 1 }, false), 11, ValidateOptions{}, kindCorrupt},
		{"crc mismatch compressed", edit(goodGzip, func(b []byte) { b[HeaderSize+5] ^= 1 }, false), 11, ValidateOptions{}, kindCorrupt},
		{"base offset not 0", edit(good, func(b []byte) { SetBaseOffset(b, 5) }, false), 11, ValidateOptions{}, kindInvalidRecord},
		{"base offset not 0 beats crc", edit(good, func(b []byte) { SetBaseOffset(b, 5); b[len(b)-1] ^= 1 }, false), 11, ValidateOptions{}, kindInvalidRecord},
		{"two batches", append(append([]byte{}, good...), good...), 11, ValidateOptions{}, kindInvalidRecord},
		{"trailing fragment ignored", append(append([]byte{}, good...), 1, 2, 3), 11, ValidateOptions{}, kindNone},
		{"trailing partial batch ignored", append(append([]byte{}, good...), good[:30]...), 11, ValidateOptions{}, kindNone},
		{"trailing tiny batch length", append(append([]byte{}, good...), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1), 11, ValidateOptions{}, kindCorrupt},
		{"no records", withSpec(func(*BatchSpec) {}, nil), 11, ValidateOptions{}, kindInvalidRecord},
		{"count mismatch", edit(good, func(b []byte) { binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 5) }, true), 11, ValidateOptions{}, kindInvalidRecord},
		{"negative record count", edit(good, func(b []byte) { binary.BigEndian.PutUint32(b[offNumRecords:], 0xffffffff) }, true), 11, ValidateOptions{}, kindInvalidRecord},
		{"negative last offset delta", edit(good, func(b []byte) { binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 0xfffffffe) }, true), 11, ValidateOptions{}, kindInvalidRecord},
		{"control batch", withSpec(func(s *BatchSpec) { s.Attributes = attrControl }, sampleRecords(1)), 11, ValidateOptions{}, kindInvalidRecord},
		{"producer id without sequence", withSpec(func(s *BatchSpec) { s.ProducerID = 3 }, sampleRecords(1)), 11, ValidateOptions{}, kindInvalidRecord},
		{"unknown codec", edit(good, func(b []byte) { b[offAttributes+1] |= 5 }, true), 11, ValidateOptions{}, kindCorrupt},
		{"codec flag on plain records", edit(good, func(b []byte) { b[offAttributes+1] |= byte(CodecLZ4) }, true), 11, ValidateOptions{}, kindCorrupt},
		{"offset gap", withSpec(func(*BatchSpec) {}, []Record{{OffsetDelta: 0}, {OffsetDelta: 2}}), 11, ValidateOptions{}, kindInvalidRecord},
		{"compacted, null key", good, 11, ValidateOptions{Compacted: true}, kindInvalidRecord},
		{"compacted, keys", withSpec(func(*BatchSpec) {}, []Record{{Key: []byte{}}, {OffsetDelta: 1, Key: []byte("k")}}), 11, ValidateOptions{Compacted: true}, kindNone},
		{"timestamp in range", withSpec(func(s *BatchSpec) { s.FirstTimestamp = now - 999 }, sampleRecords(1)), 11, tsOpts, kindNone},
		{"timestamp too old", withSpec(func(s *BatchSpec) { s.FirstTimestamp = now - 1001 }, sampleRecords(1)), 11, tsOpts, kindInvalidTimestamp},
		{"timestamp too new", withSpec(func(s *BatchSpec) { s.FirstTimestamp = now + 1001 }, sampleRecords(1)), 11, tsOpts, kindInvalidTimestamp},
		{"no timestamp skips range", withSpec(func(s *BatchSpec) { s.FirstTimestamp = -1 }, sampleRecords(1)), 11, tsOpts, kindNone},
		{"extreme timestamp", withSpec(func(s *BatchSpec) { s.FirstTimestamp = -1 << 62 }, sampleRecords(1)), 11, tsOpts, kindInvalidTimestamp},
		{"timestamp beats key error", withSpec(func(s *BatchSpec) { s.FirstTimestamp = 0 }, []Record{{Key: []byte("k")}, {OffsetDelta: 1}}), 11,
			ValidateOptions{Compacted: true, CheckTimestamps: true, NowMs: now, TimestampBeforeMaxMs: 1, TimestampAfterMaxMs: 1}, kindInvalidTimestamp},
		{"producer sets LogAppendTime", withSpec(func(s *BatchSpec) { s.Attributes = attrTimestampType }, sampleRecords(1)), 11, ValidateOptions{LogAppendTime: true}, kindInvalidTimestamp},
		{"LogAppendTime topic, CreateTime batch", good, 11, ValidateOptions{LogAppendTime: true}, kindNone},
		// max.message.bytes comes first, as in Kafka's analyzeAndValidateRecords.
		{"at max.message.bytes", good, 11, ValidateOptions{MaxBatchBytes: len(good)}, kindNone},
		{"over max.message.bytes", good, 11, ValidateOptions{MaxBatchBytes: len(good) - 1}, kindTooLarge},
		{"too large beats truncated", good[:len(good)-1], 11, ValidateOptions{MaxBatchBytes: 100}, kindTooLarge},
		{"too large beats crc", edit(good, func(b []byte) { b[len(b)-1] ^= 1 }, false), 11, ValidateOptions{MaxBatchBytes: 100}, kindTooLarge},
		{"too large beats zstd before v7", goodZstd, 6, ValidateOptions{MaxBatchBytes: 70}, kindTooLarge},
		{"too large needs a plausible header", edit(good, func(b []byte) { binary.BigEndian.PutUint32(b[offNumRecords:], 0xffffffff) }, true), 11, ValidateOptions{MaxBatchBytes: 100}, kindInvalidRecord},
	}
	for _, s := range malformedSections() {
		tests = append(tests, struct {
			name    string
			b       []byte
			version int16
			opts    ValidateOptions
			want    errKind
		}{"malformed: " + s.name, assemble(Header{NumRecords: s.num, LastOffsetDelta: s.last, ProducerID: -1}, s.section), 11, ValidateOptions{}, kindInvalidRecord})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ValidateProduce(tt.version, tt.b, tt.opts)
			if got := kindOf(err); got != tt.want {
				t.Fatalf("ValidateProduce: %v (%v), want %v", got, err, tt.want)
			}
			if tt.version >= 7 && tt.opts == (ValidateOptions{}) {
				if _, err := Validate(tt.b); kindOf(err) != tt.want {
					t.Fatalf("Validate: %v, want %v", err, tt.want)
				}
			}
		})
	}
}

func TestValidateReportsRecordErrors(t *testing.T) {
	recs := []Record{{Key: []byte("a")}, {OffsetDelta: 1}, {OffsetDelta: 2, Key: []byte("c")}, {OffsetDelta: 3}}
	b := mustBuild(t, producedSpec(CodecLZ4), recs)
	_, _, err := ValidateWith(b, ValidateOptions{Compacted: true})
	var ire *InvalidRecordError
	if !errors.As(err, &ire) || ire.Timestamp {
		t.Fatalf("err = %v", err)
	}
	if len(ire.Records) != 2 || ire.Records[0].BatchIndex != 1 || ire.Records[1].BatchIndex != 3 {
		t.Fatalf("record errors %+v", ire.Records)
	}
	if errors.Is(err, ErrInvalidTimestamp) || !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("errors.Is wrong for %v", err)
	}
}

func TestValidateSummaryAndSentinels(t *testing.T) {
	recs := []Record{{TimestampDelta: 5}, {OffsetDelta: 1, TimestampDelta: 9}, {OffsetDelta: 2, TimestampDelta: 9}, {OffsetDelta: 3, TimestampDelta: 1}}
	spec := producedSpec(CodecSnappy)
	b := mustBuild(t, spec, recs)
	h, sum, err := ValidateWith(b, ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.NumRecords != 4 || sum.MaxTimestamp != spec.FirstTimestamp+9 || sum.OffsetDeltaOfMaxTimestamp != 1 {
		t.Fatalf("header %+v summary %+v", h, sum)
	}
	_, err = Validate(b[:20])
	if !errors.Is(err, ErrTruncated) || !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("truncated: %v", err)
	}
	bad := append([]byte(nil), b...)
	bad[offMagic] = 0
	if _, err := Validate(bad); !errors.Is(err, ErrUnsupportedMagic) || !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("magic 0: %v", err)
	}
}

func TestValidateDoesNotAllocateUncompressed(t *testing.T) {
	b := mustBuild(t, producedSpec(CodecNone), sampleRecords(50))
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := Validate(b); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Validate allocated %v times per run", allocs)
	}
}
