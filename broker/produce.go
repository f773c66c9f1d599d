package broker

// Produce v3–v11. v3 introduced record batch v2 (the only format accepted:
// exactly one batch per partition, magic 2); v5 LogStartOffset; v7 allows
// zstd (older versions get UNSUPPORTED_COMPRESSION_TYPE for it); v8 per-record
// errors and ErrorMessage; v9 flexible; v10–v11 add tagged CurrentLeader and
// nothing we must act on. acks=0 sends no response at all.

import (
	"errors"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleProduce(ctx *reqCtx, req *kmsg.ProduceRequest) kmsg.Response {
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
			p := b.partitionOf(rt.Topic, rp.Partition)
			switch {
			case !validAcks:
				kerrv = kerr.InvalidRequiredAcks
			case p == nil:
				kerrv = kerr.UnknownTopicOrPartition
			default:
				var res appendResult
				res, msg = b.produceTo(ctx, req.Version, p, rp.Records)
				kerrv = res.err
				if kerrv == nil {
					sp.BaseOffset = res.baseOffset
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
func (b *Broker) produceTo(ctx *reqCtx, version int16, p *partition, recs []byte) (appendResult, string) {
	bad := func(e *kerr.Error, msg string) (appendResult, string) {
		b.log.Warn("rejected produce", "client", ctx.conn.addr, "client_id", ctx.hdr.ClientID,
			"topic", p.t.meta.Name, "partition", p.index, "error", e.Message, "reason", msg)
		return appendResult{err: e}, msg
	}
	if len(recs) == 0 {
		return bad(kerr.InvalidRecord, "produce requests must have at least one record batch per partition")
	}
	maxBytes := p.t.maxMessageBytes
	if h, err := records.ParseHeader(recs); err == nil && h.TotalSize() > maxBytes {
		return bad(kerr.MessageTooLarge, "record batch is larger than max.message.bytes")
	}
	h, err := records.Validate(recs)
	switch {
	case errors.Is(err, records.ErrUnsupportedMagic):
		return bad(kerr.InvalidRecord, "produce requests are only allowed to contain record batches with magic version 2")
	case errors.Is(err, records.ErrInvalidRecord):
		return bad(kerr.InvalidRecord, err.Error())
	case err != nil:
		return bad(kerr.CorruptMessage, err.Error())
	}
	if h.TotalSize() != len(recs) {
		return bad(kerr.InvalidRecord, "produce requests are only allowed to contain exactly one record batch per partition")
	}
	if h.Compression() == records.CodecZstd && version < 7 {
		return bad(kerr.UnsupportedCompressionType, "zstd compression requires produce v7 or later")
	}
	if h.IsControl() {
		return bad(kerr.InvalidRecord, "clients are not allowed to write control records")
	}
	if h.IsTransactional() {
		return bad(kerr.TransactionalIDAuthorizationFailed, "transactions are not supported by this broker yet")
	}
	res, err := p.append(recs, h)
	if err != nil && !errors.Is(err, errPartitionClosed) {
		b.log.Error("append failed", "topic", p.t.meta.Name, "partition", p.index, "err", err)
	}
	return res, ""
}
