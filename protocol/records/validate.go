package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
)

// ErrInvalidRecord is matched (errors.Is) by every *InvalidRecordError that
// Kafka answers with INVALID_RECORD.
var ErrInvalidRecord = errors.New("invalid record")

// ErrInvalidTimestamp is matched (errors.Is) by every *InvalidRecordError that
// Kafka answers with INVALID_TIMESTAMP.
var ErrInvalidTimestamp = errors.New("invalid timestamp")

// ErrMessageTooLarge is matched (errors.Is) by *MessageTooLargeError;
// Kafka answers MESSAGE_TOO_LARGE.
var ErrMessageTooLarge = errors.New("record batch larger than max.message.bytes")

// MessageTooLargeError reports a batch larger than ValidateOptions.MaxBatchBytes.
type MessageTooLargeError struct{ Size, Max int }

// Error says how large the batch is and what the limit is.
func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("record batch of %d bytes is larger than max.message.bytes %d", e.Size, e.Max)
}

// Is matches ErrMessageTooLarge.
func (e *MessageTooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }

// ErrUnsupportedCompressionType reports zstd in a produce request older than
// v7; Kafka answers UNSUPPORTED_COMPRESSION_TYPE.
var ErrUnsupportedCompressionType = errors.New("unsupported compression type")

// RecordError names one rejected record by its index in the batch, as the
// record_errors of a ProduceResponse (v8+) do.
type RecordError struct {
	BatchIndex int32
	Message    string
}

// InvalidRecordError reports a produced batch whose CRC is intact but whose
// contents break Kafka's rules. It matches ErrInvalidTimestamp when Timestamp
// is set and ErrInvalidRecord otherwise.
type InvalidRecordError struct {
	// Timestamp is set when some record failed only Kafka's timestamp rules
	// (INVALID_TIMESTAMP); Kafka lets that code win over INVALID_RECORD.
	Timestamp bool
	Reason    string
	// Records lists per-record failures in batch order; it is empty when the
	// batch as a whole is malformed.
	Records []RecordError
	// Err is an underlying cause (ErrTruncated, ErrUnsupportedMagic) or nil.
	Err error
}

// Error gives the reason and up to three record failures, as Kafka's message does.
func (e *InvalidRecordError) Error() string {
	var sb strings.Builder
	sb.WriteString(e.Reason)
	for i, r := range e.Records {
		if i == 3 {
			fmt.Fprintf(&sb, "; and %d more", len(e.Records)-3)
			break
		}
		fmt.Fprintf(&sb, "; record %d: %s", r.BatchIndex, r.Message)
	}
	return sb.String()
}

// Is matches ErrInvalidRecord or ErrInvalidTimestamp according to e.Timestamp.
func (e *InvalidRecordError) Is(target error) bool {
	if e.Timestamp {
		return target == ErrInvalidTimestamp
	}
	return target == ErrInvalidRecord
}

// Unwrap returns the underlying cause, if any.
func (e *InvalidRecordError) Unwrap() error { return e.Err }

func invalid(cause error, format string, args ...any) error {
	return &InvalidRecordError{Reason: fmt.Sprintf(format, args...), Err: cause}
}

// ValidateOptions carries the topic configuration that Kafka's per-record
// checks depend on. The zero value checks structure only.
type ValidateOptions struct {
	// MaxBatchBytes is max.message.bytes: a batch declaring more bytes is
	// *MessageTooLargeError, checked before anything else as Kafka does
	// (UnifiedLog.analyzeAndValidateRecords). Zero means no limit.
	MaxBatchBytes int
	// Compacted is set when cleanup.policy includes compact: every record needs a key.
	Compacted bool
	// LogAppendTime is set when message.timestamp.type is LogAppendTime.
	LogAppendTime bool
	// CheckTimestamps enables message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms against NowMs for CreateTime topics.
	CheckTimestamps      bool
	NowMs                int64
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
}

// Summary is what validation learned from a batch's records.
type Summary struct {
	// MaxTimestamp is the largest record timestamp, the value Kafka writes
	// into the batch's maxTimestamp for CreateTime topics.
	MaxTimestamp int64
	// OffsetDeltaOfMaxTimestamp is the offset delta of the first record with MaxTimestamp.
	OffsetDeltaOfMaxTimestamp int32
}

// Validate is ValidateWith with zero options: the structural checks only.
func Validate(b []byte) (Header, error) {
	h, _, err := validate(b, -1, ValidateOptions{})
	return h, err
}

// ValidateWith checks b, the records of one partition in a produce request,
// as Kafka's broker does (UnifiedLog.analyzeAndValidateRecords, then
// LogValidator for a client append), and returns the header of its batch.
// The batch is b[:h.TotalSize()]; a trailing fragment too short to be a second
// batch is ignored, as Kafka ignores it, and must not be appended.
//
// The batch header is parsed once, here; callers pass the returned Header
// on (the log's AppendParsed takes it) instead of parsing again.
//
// What is checked, and why this much (Kafka's LogValidator for a client
// append of magic 2, which is all kbroker accepts):
//   - the CRC, once, over the whole batch: Kafka's analyzeAndValidateRecords
//     checks it for every batch it is handed, and nothing after this step
//     checks it again (the log only rewrites baseOffset and
//     partitionLeaderEpoch, which the CRC does not cover);
//   - every record, walked in place when the batch is uncompressed, as
//     LogValidator.assignOffsetsNonCompressed iterates every record (offset
//     deltas, keys on compacted topics, timestamps);
//   - a compressed batch is decompressed, into a pooled buffer, because
//     Kafka's validateMessagesAndAssignOffsetsCompressed iterates its records
//     for the same per-record rules (it skips keys and values when it can
//     assign offsets in place, but still inflates the stream). It is
//     recompressed only when the topic's compression.type names another
//     codec (the caller's recompress), never to assign offsets: kbroker
//     refuses inner offsets that are not 0, 1, 2, ... where Kafka would
//     recompress, and it converts no older message formats.
//
// Errors, by the Kafka code they map to:
//   - *MessageTooLargeError (MESSAGE_TOO_LARGE): with MaxBatchBytes set, a
//     batch whose header declares more bytes, before any other check.
//   - *CorruptError (CORRUPT_MESSAGE): batchLength below the v2 header size,
//     CRC mismatch, unknown codec, undecodable or oversized compressed data.
//   - *InvalidRecordError matching ErrInvalidRecord (INVALID_RECORD): no
//     complete batch, magic other than 2, more than one batch, baseOffset not
//     0, recordCount not positive or not lastOffsetDelta+1, a control batch,
//     a producer id with a negative base sequence, records that do not parse
//     or do not fill the records section exactly, and per-record failures
//     (offset delta not equal to its index, missing key on a compacted topic).
//   - *InvalidRecordError matching ErrInvalidTimestamp (INVALID_TIMESTAMP):
//     per-record timestamp failures.
//
// Kafka accepts a compressed batch whose inner offsets are not 0,1,2,... by
// recompressing it; kbroker stores batches as sent and refuses it instead.
func ValidateWith(b []byte, o ValidateOptions) (Header, Summary, error) {
	return validate(b, -1, o)
}

// ValidateProduce is ValidateWith preceded by the checks Kafka makes on a
// produce request of the given version (ProduceRequest.validateRecords): zstd
// needs v7+ (else ErrUnsupportedCompressionType).
func ValidateProduce(version int16, b []byte, o ValidateOptions) (Header, Summary, error) {
	return validate(b, version, o)
}

// minLegacyRecordOverhead is the smallest batchLength Kafka's batch iterator
// accepts before looking at the magic (a v0 message's overhead).
const minLegacyRecordOverhead = 14

// validate implements ValidateWith; version < 0 skips the produce-version checks.
func validate(b []byte, version int16, o ValidateOptions) (Header, Summary, error) {
	sum := Summary{MaxTimestamp: -1, OffsetDeltaOfMaxTimestamp: -1}
	// The one parse of the header; fields are trusted only once the checks
	// below have passed.
	var h Header
	if len(b) >= HeaderSize && b[offMagic] == 2 {
		h = parseFields(b)
		if o.MaxBatchBytes > 0 && h.Length >= HeaderSize-LogOverhead && h.LastOffsetDelta >= 0 &&
			h.NumRecords >= 0 && h.TotalSize() > o.MaxBatchBytes {
			return h, sum, &MessageTooLargeError{Size: h.TotalSize(), Max: o.MaxBatchBytes}
		}
	}
	// A fragment shorter than its own batchLength is not a batch to Kafka:
	// the request then has none.
	if len(b) < LogOverhead {
		return Header{}, sum, invalid(ErrTruncated, "produce request must have at least one record batch per partition")
	}
	l := int32(binary.BigEndian.Uint32(b[offLength:]))
	if l < minLegacyRecordOverhead {
		return Header{}, sum, corrupt("batch length %d below minimum record overhead", l)
	}
	if int64(len(b)) < int64(l)+LogOverhead {
		return Header{}, sum, invalid(ErrTruncated, "produce request must have at least one record batch per partition")
	}
	if m := int8(b[offMagic]); m != 2 {
		return Header{}, sum, invalid(fmt.Errorf("%w: %d", ErrUnsupportedMagic, m), "produce requests may only hold record batches with magic 2")
	}
	if l < HeaderSize-LogOverhead {
		return Header{}, sum, corrupt("batch length %d below header size", l)
	}
	if version >= 0 && version < 7 && h.Compression() == CodecZstd {
		return h, sum, fmt.Errorf("%w: zstd needs produce v7+, request is v%d", ErrUnsupportedCompressionType, version)
	}
	if rest := b[h.TotalSize():]; len(rest) >= LogOverhead {
		l := int32(binary.BigEndian.Uint32(rest[offLength:]))
		if l < minLegacyRecordOverhead {
			return h, sum, corrupt("trailing batch length %d below minimum record overhead", l)
		}
		if int64(len(rest)) >= int64(l)+LogOverhead {
			return h, sum, invalid(nil, "produce requests may only hold exactly one record batch per partition")
		}
	}
	if h.BaseOffset != 0 {
		return h, sum, invalid(nil, "batch base offset must be 0 in a produce request, is %d", h.BaseOffset)
	}
	batch := b[:h.TotalSize()]
	if got := crc32.Checksum(batch[offAttributes:], castagnoli); got != h.CRC {
		return h, sum, corrupt("crc mismatch: header %08x, computed %08x", h.CRC, got)
	}
	// LogValidator.validateBatch, for a client append with baseOffset 0.
	count := int64(h.LastOffsetDelta) + 1
	switch {
	case count <= 0:
		return h, sum, invalid(nil, "batch has an invalid offset range [0, %d]", h.LastOffsetDelta)
	case h.NumRecords <= 0:
		return h, sum, invalid(nil, "invalid reported record count %d", h.NumRecords)
	case count != int64(h.NumRecords):
		return h, sum, invalid(nil, "inconsistent batch offset range [0, %d] and record count %d", h.LastOffsetDelta, h.NumRecords)
	case h.IsControl():
		return h, sum, invalid(nil, "clients may not write control records")
	case h.ProducerID >= 0 && h.BaseSequence < 0:
		return h, sum, invalid(nil, "invalid sequence number %d with producer id %d", h.BaseSequence, h.ProducerID)
	}
	data := batch[HeaderSize:]
	if c := h.Compression(); c != CodecNone {
		buf := getScratch()
		defer putScratch(buf)
		var err error
		if *buf, err = decompressAppend((*buf)[:0], c, data, MaxDecompressedSize); err != nil {
			return h, sum, err
		}
		data = *buf
	}
	if err := validateRecords(h, data, o, &sum); err != nil {
		return h, sum, err
	}
	return h, sum, nil
}

// maxPooledScratch bounds the decompression buffers kept for reuse, so one
// huge batch does not pin its buffer forever.
const maxPooledScratch = 4 << 20

var scratchPool sync.Pool // of *[]byte

// getScratch returns an empty buffer for decompressed records.
func getScratch() *[]byte {
	if b, ok := scratchPool.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// putScratch returns b for reuse unless it grew too large. Nothing may
// reference *b afterwards.
func putScratch(b *[]byte) {
	if cap(*b) <= maxPooledScratch {
		*b = (*b)[:0]
		scratchPool.Put(b)
	}
}

// validateRecords walks the records section data of the checked batch h
// without allocating unless a record is rejected.
func validateRecords(h Header, data []byte, o ValidateOptions, sum *Summary) error {
	n := int(h.NumRecords)
	if most := len(data) / minRecordSize; n > most {
		return invalid(nil, "batch claims %d records in %d bytes", n, len(data))
	}
	r := recordReader{b: data}
	var (
		raw      rawRecord
		errs     []RecordError
		anyTSErr bool
	)
	for i := 0; i < n; i++ {
		if r.remaining() == 0 {
			return invalid(nil, "incorrect declared batch size, premature EOF reached after %d of %d records", i, n)
		}
		if err := r.next(&raw); err != nil {
			return invalid(nil, "found invalid record structure in record %d: %v", i, err)
		}
		ts := h.FirstTimestamp + raw.timestampDelta
		if h.LogAppendTime() {
			ts = h.MaxTimestamp
		}
		if ts > sum.MaxTimestamp {
			sum.MaxTimestamp, sum.OffsetDeltaOfMaxTimestamp = ts, raw.offsetDelta
		}
		switch {
		case raw.offsetDelta != int32(i):
			errs = append(errs, RecordError{int32(i), fmt.Sprintf("offset delta %d, expected %d", raw.offsetDelta, i)})
		case o.Compacted && raw.key == nil:
			errs = append(errs, RecordError{int32(i), "compacted topic cannot accept message without key"})
		default:
			if msg := timestampProblem(h, ts, o); msg != "" {
				errs = append(errs, RecordError{int32(i), msg})
				anyTSErr = true
			}
		}
	}
	if r.remaining() != 0 {
		return invalid(nil, "incorrect declared batch size, %d bytes remain after %d records", r.remaining(), n)
	}
	if len(errs) == 0 {
		return nil
	}
	if anyTSErr {
		return &InvalidRecordError{Timestamp: true, Reason: "one or more records have been rejected due to invalid timestamp", Records: errs}
	}
	return &InvalidRecordError{Reason: fmt.Sprintf("one or more records have been rejected due to %d record errors", len(errs)), Records: errs}
}

// timestampProblem applies LogValidator.validateTimestamp to a record with
// timestamp ts, returning "" when it passes.
func timestampProblem(h Header, ts int64, o ValidateOptions) string {
	if !o.LogAppendTime && ts != -1 {
		if !o.CheckTimestamps {
			return ""
		}
		// Compare in a way that cannot overflow int64.
		tooOld := ts < o.NowMs && uint64(o.NowMs)-uint64(ts) > uint64(max(o.TimestampBeforeMaxMs, 0))
		tooNew := ts > o.NowMs && uint64(ts)-uint64(o.NowMs) > uint64(max(o.TimestampAfterMaxMs, 0))
		if tooOld || tooNew {
			return fmt.Sprintf("timestamp %d is out of range: it should be within [now-%d, now+%d] for now=%d",
				ts, o.TimestampBeforeMaxMs, o.TimestampAfterMaxMs, o.NowMs)
		}
		return ""
	}
	if h.LogAppendTime() {
		return "producer should not set timestamp type to LogAppendTime"
	}
	return ""
}
