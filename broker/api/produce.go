package api

// Produce v3–v13. v3 introduced record batch v2 (the only format accepted:
// exactly one batch per partition, magic 2); v5 LogStartOffset; v7 allows
// zstd (older versions get UNSUPPORTED_COMPRESSION_TYPE for it); v8 per-record
// errors and ErrorMessage; v9 flexible; v10–v11 add tagged CurrentLeader and
// nothing we must act on; v12 (transaction.version 2, KIP-890 part 2) adds a
// transactional batch's partition to its transaction instead of requiring
// AddPartitionsToTxn first; v13 (KIP-516) names topics by id only: an id
// this broker does not know is UNKNOWN_TOPIC_ID, as Kafka answers. acks=0
// sends no response at all.
//
// Validation follows Kafka's order: unknown partition, then
// records.ValidateProduce: batch size against max.message.bytes
// (MESSAGE_TOO_LARGE), then CORRUPT_MESSAGE for CRC and undecodable data,
// INVALID_RECORD for structure and keys on compacted topics,
// INVALID_TIMESTAMP for timestamp bounds, then (a transactional batch's
// partition checked) broker-side schema validation where a topic turns it
// on (schema_validation.go). Topics with
// message.timestamp.type=LogAppendTime get the broker's time written into the
// batch (maxTimestamp and the timestamp-type bit, CRC recomputed).

import (
	"context"
	"errors"
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *API) handleProduce(ctx *network.RequestContext, req *kmsg.ProduceRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	validAcks := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	// acks=all waits for replication until the request's timeout (TimeoutMillis).
	deadline := b.now().Add(time.Duration(req.TimeoutMillis) * time.Millisecond)
	txnDenied := !b.authorizedProduceTxn(ctx, req) // authz_checks.go
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		name, unknownID := rt.Topic, false
		if req.Version >= 13 {
			st.TopicID = rt.TopicID
			if t := b.rm.TopicByID(rt.TopicID); t != nil {
				name = t.Meta.Name
			} else {
				unknownID = true
			}
		}
		topicDenied := !unknownID && !b.authorizedTopic(ctx, opWrite, name)
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
			p := b.rm.PartitionOf(name, rp.Partition)
			switch {
			case !validAcks:
				kerrv = kerr.InvalidRequiredAcks
			case txnDenied:
				kerrv = kerr.TransactionalIDAuthorizationFailed
			case unknownID:
				kerrv = kerr.UnknownTopicID
			case topicDenied:
				kerrv = kerr.TopicAuthorizationFailed
			case p == nil:
				kerrv = kerr.UnknownTopicOrPartition
			case replica.IsInternal(name):
				kerrv = kerr.InvalidTopicException // clients may not write internal topics
			default:
				// Not the leader, or acks=all with too small an ISR (on a
				// single node the ISR is this broker alone).
				if kerrv = b.rm.CheckProduce(p, req.Acks); kerrv != nil {
					break
				}
				var res replica.AppendResult
				res, msg, sp.ErrorRecords = b.produceTo(ctx, req, p, rp.Records, deadline)
				kerrv = res.Err
				if kerrv == nil {
					sp.BaseOffset = res.BaseOffset
					sp.LogAppendTime = res.LogAppendTime
					sp.LogStartOffset = p.Log.LogStartOffset()
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
	b.leaderHintsProduce(ctx, resp) // cluster mode: metadata_cluster.go
	if req.Acks == 0 {
		return nil
	}
	return resp
}

// produceTo validates the partition's record set and appends it. It returns
// the Kafka error and, for bad input, a message for the client; bad input and
// storage failures are logged once here.
func (b *API) produceTo(ctx *network.RequestContext, req *kmsg.ProduceRequest, p *replica.Partition, recs []byte, deadline time.Time) (replica.AppendResult, string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	res, msg, recErrs := b.produceChecked(ctx, req, p, recs, deadline)
	if res.Err != nil && msg != "" {
		b.log.Warn("rejected produce", "client", ctx.RemoteAddr, "client_id", ctx.Header.ClientID,
			"topic", p.Topic.Meta.Name, "partition", p.Index, "error", res.Err.Message, "reason", msg)
	}
	return res, msg, recErrs
}

// produceChecked is produceTo but for the log line of a refusal.
func (b *API) produceChecked(ctx *network.RequestContext, req *kmsg.ProduceRequest, p *replica.Partition, recs []byte, deadline time.Time) (replica.AppendResult, string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	version, txnID := req.Version, req.TransactionID
	bad := func(e *kerr.Error, msg string) (replica.AppendResult, string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
		return replica.AppendResult{Err: e}, msg, nil
	}
	if len(recs) == 0 {
		return bad(kerr.InvalidRecord, "produce requests must have at least one record batch per partition")
	}
	set := p.Topic.Settings()
	opts := set.Validate
	opts.MaxBatchBytes = max(set.MaxMessageBytes, 1)
	now := b.now().UnixMilli()
	opts.NowMs = now
	// The one parse of the batch header and the one CRC check on the way
	// to the file: h travels with the batch to the log (AppendParsed).
	h, _, err := records.ValidateProduce(version, recs, opts)
	switch {
	case errors.Is(err, records.ErrMessageTooLarge):
		return bad(kerr.MessageTooLarge, err.Error())
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
		check := b.co.VerifyTxnPartition
		if version >= 12 {
			check = b.co.AddTxnPartition // KIP-890 part 2: the produce adds the partition
		}
		if code := check(*txnID, h.ProducerID, h.ProducerEpoch, p.Topic.Meta.Name, p.Index); code != 0 {
			kerrv, _ := kerr.ErrorForCode(code).(*kerr.Error)
			if kerrv == nil {
				kerrv = kerr.UnknownServerError
			}
			return replica.AppendResult{Err: kerrv}, "", nil
		}
	}
	if (set.KeySchema.On || set.ValueSchema.On) && !h.IsControl() {
		vctx, cancel := context.WithDeadline(context.Background(), deadline)
		msg, recErrs := b.validateSchemas(vctx, p.Topic.Meta.Name, set, recs[:h.TotalSize()])
		cancel()
		if msg != "" {
			return replica.AppendResult{Err: kerr.InvalidRecord}, msg, recErrs
		}
	}
	// A trailing fragment too short to be a batch is ignored, as Kafka does.
	recs = recs[:h.TotalSize()]
	if set.Recompress && h.Compression() != set.Codec && !h.IsControl() {
		if recs, h, err = recompress(recs, set.Codec); err != nil {
			return bad(kerr.CorruptMessage, err.Error())
		}
	}
	logAppendTime := int64(-1)
	if opts.LogAppendTime {
		logAppendTime = now
		records.SetMaxTimestampLogAppendTime(recs, now)
		// The header changed (attributes, maxTimestamp, CRC): parse it
		// again so the log indexes the stamped time. Only these topics
		// pay for a second parse.
		if h, err = records.ParseHeader(recs); err != nil {
			return bad(kerr.CorruptMessage, err.Error())
		}
	}
	res := b.rm.Produce(p, recs, h, req.Acks, deadline)
	res.LogAppendTime = logAppendTime
	return res, "", nil
}
