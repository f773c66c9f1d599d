package storage

// Kafka's producer-state snapshot format (ProducerStateManager, snapshot
// version 1, unchanged from Kafka 0.11.0.1 to 3.9), so that a log dir moves
// between Kafka and kbroker with its idempotence and transaction state:
//
//	version          int16   1
//	crc              uint32  CRC-32C of every byte after this field
//	producer_entries int32 count, then per producer (46 bytes):
//	  producer_id              int64
//	  epoch                    int16
//	  last_sequence            int32  -1 if the producer wrote no data batch
//	  last_offset              int64  last offset of its last data batch, -1 if none
//	  offset_delta             int32  last_sequence - first sequence of that batch
//	  timestamp                int64  max timestamp of that batch
//	  coordinator_epoch        int32  epoch of the coordinator of its last marker
//	  current_txn_first_offset int64  first offset of its open transaction, -1 if none
//
// All integers are big-endian. Kafka's reader ignores bytes after the
// entries but its CRC covers them; this reader refuses them.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// ErrCorruptSnapshot reports a producer snapshot that is not Kafka's format
// or fails its CRC.
var ErrCorruptSnapshot = errors.New("corrupt producer snapshot")

// kafkaSnapshotVersion is the only version of Kafka's snapshot format.
const kafkaSnapshotVersion = 1

const (
	snapshotHeaderSize = 2 + 4 + 4 // version, crc, entry count
	snapshotEntrySize  = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
	snapshotCRCFrom    = 6 // the CRC covers the entry count and the entries
)

// ProducerSnapshotEntry is one producer's state in Kafka's snapshot format.
type ProducerSnapshotEntry struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence, LastOffset, OffsetDelta and Timestamp describe the
	// producer's last data batch; LastOffset < 0 (and LastSequence -1)
	// when it wrote none (only transaction markers).
	LastSequence int32
	LastOffset   int64
	OffsetDelta  int32
	Timestamp    int64
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the producer's last marker; -1 if unknown.
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the first offset of the producer's open
	// transaction, -1 if none.
	CurrentTxnFirstOffset int64
}

// EncodeProducerSnapshot returns entries in Kafka's snapshot format.
func EncodeProducerSnapshot(entries []ProducerSnapshotEntry) []byte {
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(entries)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b, kafkaSnapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.ProducerEpoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.LastSequence))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(e.OffsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[snapshotCRCFrom:], snapshotCRC))
	return b
}

// DecodeProducerSnapshot parses Kafka's snapshot format. Any error wraps
// ErrCorruptSnapshot: an unknown version, a CRC mismatch, a short file or
// bytes after the entries.
func DecodeProducerSnapshot(b []byte) ([]ProducerSnapshotEntry, error) {
	if len(b) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorruptSnapshot, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v != kafkaSnapshotVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorruptSnapshot, v)
	}
	if stored, computed := binary.BigEndian.Uint32(b[2:]), crc32.Checksum(b[snapshotCRCFrom:], snapshotCRC); stored != computed {
		return nil, fmt.Errorf("%w: stored CRC %#x, computed %#x", ErrCorruptSnapshot, stored, computed)
	}
	n := int32(binary.BigEndian.Uint32(b[6:]))
	body := b[snapshotHeaderSize:]
	if n < 0 || int64(n)*snapshotEntrySize != int64(len(body)) {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrCorruptSnapshot, n, len(body))
	}
	out := make([]ProducerSnapshotEntry, n)
	for i := range out {
		e := body[i*snapshotEntrySize:]
		out[i] = ProducerSnapshotEntry{
			ProducerID:            int64(binary.BigEndian.Uint64(e)),
			ProducerEpoch:         int16(binary.BigEndian.Uint16(e[8:])),
			LastSequence:          int32(binary.BigEndian.Uint32(e[10:])),
			LastOffset:            int64(binary.BigEndian.Uint64(e[14:])),
			OffsetDelta:           int32(binary.BigEndian.Uint32(e[22:])),
			Timestamp:             int64(binary.BigEndian.Uint64(e[26:])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(e[34:])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(e[38:])),
		}
	}
	return out, nil
}
