package records

import (
	"encoding/binary"
	"errors"
	"testing"
)

// addSeeds adds valid batches of every codec, plus truncations and a
// corrupted copy of each, to f's seed corpus, through add.
func addSeeds(f *testing.F, add func(b []byte)) {
	for _, c := range allCodecs {
		for _, n := range []int{1, 4} {
			b, err := Build(producedSpec(c), sampleRecords(n))
			if err != nil {
				f.Fatal(err)
			}
			add(b)
			add(b[:len(b)-1])
			add(b[:HeaderSize])
			add(b[:HeaderSize+(len(b)-HeaderSize)/2])
			flipped := append([]byte(nil), b...)
			flipped[len(flipped)-1] ^= 0x55
			add(flipped)
		}
	}
	for _, s := range malformedSections() {
		add(assemble(Header{NumRecords: s.num, LastOffsetDelta: s.last, ProducerID: -1}, s.section))
	}
	add([]byte{})
}

func FuzzCheck(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Check(b)
		if err != nil {
			return
		}
		if h.TotalSize() > len(b) || h.TotalSize() < HeaderSize {
			t.Fatalf("Check accepted batch of size %d in %d bytes", h.TotalSize(), len(b))
		}
		batch, h2, rest, err := Split(b)
		if err != nil || h2 != h || len(batch)+len(rest) != len(b) {
			t.Fatalf("Split disagrees with Check: %v", err)
		}
	})
}

func FuzzDecodeRecords(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b, false); f.Add(b, true) })
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC {
			b = fixupCRC(b)
		}
		h, recs, err := DecodeRecords(b)
		if err != nil {
			return
		}
		spec := BatchSpec{
			BaseOffset:           h.BaseOffset,
			PartitionLeaderEpoch: h.PartitionLeaderEpoch,
			Attributes:           h.Attributes &^ attrCompressionMask,
			FirstTimestamp:       h.FirstTimestamp,
			MaxTimestamp:         h.MaxTimestamp,
			ProducerID:           h.ProducerID,
			ProducerEpoch:        h.ProducerEpoch,
			BaseSequence:         h.BaseSequence,
			Codec:                h.Compression(),
		}
		again, err := Build(spec, recs)
		if err != nil {
			t.Fatalf("Build of decoded records: %v", err)
		}
		h2, recs2, err := DecodeRecords(again)
		if err != nil {
			t.Fatalf("DecodeRecords of rebuilt batch: %v", err)
		}
		if err := recordsEqual(recs2, recs); err != nil {
			t.Fatalf("rebuilt batch differs: %v", err)
		}
		if h2.NumRecords != h.NumRecords || h2.Compression() != h.Compression() || h2.BaseOffset != h.BaseOffset {
			t.Fatalf("rebuilt header %+v, original %+v", h2, h)
		}
	})
}

func FuzzValidate(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b, false); f.Add(b, true) })
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		if fixCRC {
			b = fixupCRC(b)
		}
		h, sum, err := ValidateWith(b, ValidateOptions{Compacted: len(b)%2 == 0})
		if err != nil {
			if !IsCorrupt(err) && !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrInvalidTimestamp) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		// Whatever Validate accepts must decode, with the records it promised.
		h2, recs, err := DecodeRecords(b)
		if err != nil {
			t.Fatalf("Validate accepted a batch DecodeRecords refuses: %v", err)
		}
		if h2 != h || len(recs) != int(h.NumRecords) || len(recs) == 0 {
			t.Fatalf("header %+v vs %+v, %d records", h, h2, len(recs))
		}
		for i, r := range recs {
			if r.OffsetDelta != int32(i) {
				t.Fatalf("record %d has offset delta %d", i, r.OffsetDelta)
			}
		}
		if sum.MaxTimestamp < h.FirstTimestamp+recs[0].TimestampDelta && !h.LogAppendTime() {
			t.Fatalf("summary max timestamp %d below first record's", sum.MaxTimestamp)
		}
	})
}

// fixupCRC returns a copy of b whose leading batch has a valid CRC when its
// batchLength fits in b, so that fuzzing reaches past the checksum.
func fixupCRC(b []byte) []byte {
	b = append([]byte(nil), b...)
	if len(b) < HeaderSize {
		return b
	}
	if n := int(int32(binary.BigEndian.Uint32(b[offLength:]))) + LogOverhead; n >= HeaderSize && n <= len(b) {
		resum(b[:n])
	}
	return b
}
