package records

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kmsgRecords parses an uncompressed records section with kmsg.
func kmsgRecords(t *testing.T, data []byte, n int) []Record {
	t.Helper()
	out := make([]Record, 0, n)
	for i := 0; i < n; i++ {
		var kr kmsg.Record
		if err := kr.ReadFrom(data); err != nil {
			t.Fatalf("kmsg record %d: %v", i, err)
		}
		size := varintSize(kr.Length) + int(kr.Length)
		data = data[size:]
		r := Record{
			Attributes:     kr.Attributes,
			TimestampDelta: kr.TimestampDelta64,
			OffsetDelta:    kr.OffsetDelta,
			Key:            kr.Key,
			Value:          kr.Value,
		}
		for _, h := range kr.Headers {
			r.Headers = append(r.Headers, RecordHeader{Key: h.Key, Value: h.Value})
		}
		out = append(out, r)
	}
	if len(data) != 0 {
		t.Fatalf("%d bytes left after %d kmsg records", len(data), n)
	}
	return out
}

func TestKmsgReadsBuild(t *testing.T) {
	for _, c := range allCodecs {
		recs := sampleRecords(11)
		spec := producedSpec(c)
		spec.BaseOffset = 77
		b := mustBuild(t, spec, recs)
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil {
			t.Fatalf("%s: kmsg.RecordBatch.ReadFrom: %v", c, err)
		}
		if kb.FirstOffset != 77 || kb.Magic != 2 || int(kb.Length) != len(b)-LogOverhead || kb.NumRecords != 11 ||
			kb.LastOffsetDelta != 10 || kb.Attributes != int16(c) || kb.FirstTimestamp != spec.FirstTimestamp ||
			kb.MaxTimestamp != spec.FirstTimestamp+70 || kb.ProducerID != -1 || kb.FirstSequence != -1 {
			t.Fatalf("%s: kmsg batch header %+v", c, kb)
		}
		// An independent CRC over kmsg's view of the batch.
		raw := kb.AppendTo(nil)
		if got := crc32.Checksum(raw[offAttributes:], crc32.MakeTable(crc32.Castagnoli)); got != uint32(kb.CRC) {
			t.Fatalf("%s: crc %08x, kmsg says %08x", c, got, uint32(kb.CRC))
		}
		data, err := Decompress(c, kb.Records)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if err := recordsEqual(kmsgRecords(t, data, 11), recs); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
}

// kmsgBatch builds an uncompressed batch with kmsg alone.
func kmsgBatch(t *testing.T, recs []Record) []byte {
	t.Helper()
	var section []byte
	for _, r := range recs {
		kr := kmsg.Record{
			Attributes:       r.Attributes,
			TimestampDelta64: r.TimestampDelta,
			OffsetDelta:      r.OffsetDelta,
			Key:              r.Key,
			Value:            r.Value,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // body length: the encoding less its 1-byte zero length
		section = kr.AppendTo(section)
	}
	kb := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      recs[len(recs)-1].OffsetDelta,
		FirstTimestamp:       1_600_000_000_000,
		MaxTimestamp:         1_600_000_000_000 + recs[len(recs)-1].TimestampDelta,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              section,
	}
	kb.Length = int32(HeaderSize - LogOverhead + len(section))
	b := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestDecodeRecordsReadsKmsg(t *testing.T) {
	recs := sampleRecords(9)
	b := kmsgBatch(t, recs)
	h, got, err := DecodeRecords(b)
	if err != nil {
		t.Fatalf("DecodeRecords: %v", err)
	}
	if h.NumRecords != 9 || h.LastOffsetDelta != 8 || h.FirstTimestamp != 1_600_000_000_000 {
		t.Fatalf("header %+v", h)
	}
	if err := recordsEqual(got, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := Validate(b); err != nil {
		t.Fatalf("Validate of a kmsg batch: %v", err)
	}
	// Build must produce the same bytes kmsg does.
	again := mustBuild(t, BatchSpec{
		PartitionLeaderEpoch: -1, FirstTimestamp: 1_600_000_000_000, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}, recs)
	if string(again) != string(b) {
		t.Fatalf("Build differs from kmsg encoding:\n%x\n%x", again, b)
	}
}
