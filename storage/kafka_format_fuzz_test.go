package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Fuzz targets for the decoders of Kafka's files: bytes from disk never
// panic, and whatever decodes encodes back to the same bytes.

func addFixtureSeeds(f *testing.F, glob string) {
	m, _ := filepath.Glob(filepath.Join(kafka39Fixtures, glob))
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func FuzzDecodeProducerSnapshot(f *testing.F) {
	addFixtureSeeds(f, "*.snapshot")
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ents, err := DecodeProducerSnapshot(b)
		if err == nil && !bytes.Equal(EncodeProducerSnapshot(ents), b) {
			t.Fatalf("%x decodes to %+v, which encodes differently", b, ents)
		}
	})
}

func FuzzDecodeTxnIndex(f *testing.F) {
	addFixtureSeeds(f, "*.txnindex")
	f.Fuzz(func(t *testing.T, b []byte) {
		ents, err := DecodeTxnIndex(b, 12)
		if err == nil && !bytes.Equal(EncodeTxnIndex(ents), b) {
			t.Fatalf("%x decodes to %+v, which encodes differently", b, ents)
		}
	})
}

func FuzzDecodePartitionMetadata(f *testing.F) {
	addFixtureSeeds(f, PartitionMetadataFile)
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := DecodePartitionMetadata(b)
		if err == nil {
			if _, err := DecodePartitionMetadata(EncodePartitionMetadata(id)); err != nil {
				t.Fatalf("%q decodes to %x, whose encoding does not decode: %v", b, id, err)
			}
		}
	})
}
