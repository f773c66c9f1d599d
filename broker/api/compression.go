package api

import (
	"fmt"

	"github.com/kbroker/kbroker/protocol/records"
)

// recompress rebuilds a validated batch with codec, as Kafka does when a
// topic's compression.type names a codec other than the batch's. Offsets
// deltas, timestamps, producer fields and attributes (but the codec) are kept.
func recompress(batch []byte, codec records.Codec) ([]byte, records.Header, error) {
	h, recs, err := records.DecodeRecords(batch)
	if err != nil {
		return nil, h, fmt.Errorf("recompressing batch: %w", err)
	}
	out, err := records.Build(records.BatchSpec{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Attributes:           h.Attributes &^ 0x07,
		FirstTimestamp:       h.FirstTimestamp,
		MaxTimestamp:         h.MaxTimestamp,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		Codec:                codec,
	}, recs)
	if err != nil {
		return nil, h, fmt.Errorf("recompressing batch as %v: %w", codec, err)
	}
	nh, err := records.ParseHeader(out)
	if err != nil {
		return nil, h, err
	}
	return out, nh, nil
}
