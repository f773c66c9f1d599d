package broker

// Produce v3–v12. v3 introduced record batch v2 (the only format accepted:
// exactly one batch per partition, magic 2); v5 LogStartOffset; v7 allows
// zstd (older versions get UNSUPPORTED_COMPRESSION_TYPE for it); v8 per-record
// errors and ErrorMessage; v9 flexible; v10–v11 add tagged CurrentLeader and
// nothing we must act on; v12 (transaction.version 2, KIP-890 part 2) adds a
// transactional batch's partition to its transaction instead of requiring
// AddPartitionsToTxn first. acks=0 sends no response at all.
//
// Validation follows Kafka's order: unknown partition, batch size against
// max.message.bytes (MESSAGE_TOO_LARGE), then records.ValidateProduce
// (CORRUPT_MESSAGE for CRC and undecodable data, INVALID_RECORD for structure,
// keys on compacted topics, INVALID_TIMESTAMP for timestamp bounds). Topics with
// message.timestamp.type=LogAppendTime get the broker's time written into the
// batch (maxTimestamp and the timestamp-type bit, CRC recomputed).

import (
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleProduce(ctx *network.RequestContext, req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	validAcks := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			var (
				kerrv *kerr.Error
				msg   string
			)
			p := b.rm.partitionOf(rt.Topic, rp.Partition)
			switch {
			case !validAcks:
				kerrv = kerr.InvalidRequiredAcks
			case p == nil:
				kerrv = kerr.UnknownTopicOrPartition
			case isInternal(rt.Topic):
				kerrv = kerr.InvalidTopicException // clients may not write internal topics
			case req.Acks == -1 && p.topic.settings().minInsyncReplicas > 1:
				kerrv = kerr.NotEnoughReplicas // the ISR is this broker alone
			default:
				var res appendResult
				res, msg = b.produceTo(ctx, req.Version, req.TransactionID, p, rp.Records)
				kerrv = res.err
				if kerrv == nil {
					sp.BaseOffset = res.baseOffset
					sp.LogAppendTime = res.logAppendTime
					sp.LogStartOffset = p.log.LogStartOffset()
				}
			}
			if kerrv != nil {
				sp.ErrorCode = kerrv.Code
				if msg != "" {
					sp.ErrorMessage = &msg
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		return nil
	}
	return resp
}

// produceTo validates the partition's record set and appends it. It returns
// the Kafka error and, for bad input, a message for the client; bad input and
// storage failures are logged once here.
func (b *Broker) produceTo(ctx *network.RequestContext, version int16, txnID *string, p *partition, recs []byte) (appendResult, string) {
	bad := func(e *kerr.Error, msg string) (appendResult, string) {
		b.log.Warn("rejected produce", "client", ctx.RemoteAddr, "client_id", ctx.Header.ClientID,
			"topic", p.topic.meta.Name, "partition", p.index, "error", e.Message, "reason", msg)
		return appendResult{err: e}, msg
	}
	if len(recs) == 0 {
		return bad(kerr.InvalidRecord, "produce requests must have at least one record batch per partition")
	}
	set := p.topic.settings()
	if h, err := records.ParseHeader(recs); err == nil && h.TotalSize() > set.maxMessageBytes {
		return bad(kerr.MessageTooLarge, fmt.Sprintf("record batch of %d bytes is larger than max.message.bytes %d", h.TotalSize(), set.maxMessageBytes))
	}
	opts := set.validate
	now := b.now().UnixMilli()
	opts.NowMs = now
	h, _, err := records.ValidateProduce(version, recs, opts)
	switch {
	case errors.Is(err, records.ErrUnsupportedCompressionType):
		return bad(kerr.UnsupportedCompressionType, err.Error())
	case errors.Is(err, records.ErrInvalidTimestamp):
		return bad(kerr.InvalidTimestamp, err.Error())
	case errors.Is(err, records.ErrInvalidRecord):
		return bad(kerr.InvalidRecord, err.Error())
	case err != nil:
		return bad(kerr.CorruptMessage, err.Error())
	}
	if h.IsTransactional() {
		// The partition must be part of the producer's open transaction
		// (KIP-890 part 1 verification), so a late write cannot hang the LSO.
		if txnID == nil {
			return bad(kerr.InvalidTxnState, "transactional batch in a produce request without a transactional id")
		}
		check := b.verifyTxnPartition
		if version >= 12 {
			check = b.addTxnPartition // KIP-890 part 2: the produce adds the partition
		}
		if code := check(*txnID, h.ProducerID, h.ProducerEpoch, p.topic.meta.Name, p.index); code != 0 {
			kerrv, _ := kerr.ErrorForCode(code).(*kerr.Error)
			if kerrv == nil {
				kerrv = kerr.UnknownServerError
			}
			return appendResult{err: kerrv}, ""
		}
	}
	// A trailing fragment too short to be a batch is ignored, as Kafka does.
	recs = recs[:h.TotalSize()]
	if set.recompress && h.Compression() != set.codec && !h.IsControl() {
		if recs, h, err = recompress(recs, set.codec); err != nil {
			return bad(kerr.CorruptMessage, err.Error())
		}
	}
	logAppendTime := int64(-1)
	if opts.LogAppendTime {
		logAppendTime = now
		records.SetMaxTimestampLogAppendTime(recs, now)
	}
	res := b.rm.appendRecords(p, recs, h)
	res.logAppendTime = logAppendTime
	return res, ""
}
