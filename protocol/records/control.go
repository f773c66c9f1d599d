package records

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record: a transaction marker.
type ControlType int16

// Control record types, as Kafka numbers them.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// controlBatchAttrs marks a batch as transactional and control.
const controlBatchAttrs = attrTransactional | attrControl

// BuildControlBatch builds the one-record control batch Kafka writes to end
// a transaction: key (version 0, type), value (version 0, coordinator epoch).
func BuildControlBatch(producerID int64, producerEpoch int16, t ControlType, coordinatorEpoch int32, timestampMs int64) ([]byte, error) {
	key := binary.BigEndian.AppendUint16(nil, 0)
	key = binary.BigEndian.AppendUint16(key, uint16(t))
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, uint32(coordinatorEpoch))
	return Build(BatchSpec{
		Attributes:     controlBatchAttrs,
		FirstTimestamp: timestampMs,
		MaxTimestamp:   timestampMs,
		ProducerID:     producerID,
		ProducerEpoch:  producerEpoch,
		BaseSequence:   -1,
	}, []Record{{Key: key, Value: value}})
}

// ParseControlKey decodes a control record's key into its type.
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < 4 {
		return 0, corrupt("control record key of %d bytes", len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return 0, corrupt("control record key version %d", v)
	}
	return ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// ControlTypeOf returns the type of the marker in a control batch.
func ControlTypeOf(batch []byte) (ControlType, error) {
	h, recs, err := DecodeRecords(batch)
	if err != nil {
		return 0, err
	}
	if !h.IsControl() || len(recs) != 1 {
		return 0, fmt.Errorf("%w: not a control batch with one record", ErrInvalidRecord)
	}
	return ParseControlKey(recs[0].Key)
}
