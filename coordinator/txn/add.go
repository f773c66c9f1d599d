package txn

// AddPartitionsToTxn v0–v5 and AddOffsetsToTxn v0–v4.
//
// AddPartitionsToTxn v0–v3 come from clients, one transaction each; v2 may
// be answered with PRODUCER_FENCED, which v0–v1 see as
// INVALID_PRODUCER_EPOCH; v3 is flexible. v4+ (KIP-890 part 1) come from
// partition leaders and batch transactions, each either adding partitions
// (transactions version 2: the leader adds the partitions a transactional
// produce writes to) or only verifying that they were added (VerifyOnly,
// for clients still on version 0); v5 may answer TRANSACTION_ABORTABLE.
//
// AddOffsetsToTxn adds the __consumer_offsets partition of a group, so the
// TxnOffsetCommit that follows is committed or aborted with the
// transaction; v2 may be answered with PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before), v3 is flexible, v4 changes nothing here.

import (
	"time"

	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsTopic is the topic of committed offsets, whose partition of a
// group AddOffsetsToTxn adds to the transaction.
const OffsetsTopic = "__consumer_offsets"

// AddPartitionsToTxn adds partitions to a transaction (or, v4+ with
// VerifyOnly, checks that they were added). The first partition moves the
// transactional id to Ongoing and starts the transaction timeout.
func (c *Coordinator) AddPartitionsToTxn(now time.Time, token any, req *kmsg.AddPartitionsToTxnRequest) ([]Reply, []Record) {
	c.begin(now)
	var o out
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	nowMs := now.UnixMilli()
	if req.Version < 4 {
		parts := requestPartitions(req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) (string, []int32) { return t.Topic, t.Partitions })
		codes := c.addOrVerify(&o, nowMs, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, false, tv0)
		if req.Version < 2 {
			fenced := kerr.ProducerFenced.Code
			for p, code := range codes {
				if code == fenced {
					codes[p] = kerr.InvalidProducerEpoch.Code
				}
			}
		}
		for _, p := range groupByTopic(parts) {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = p.topic
			for _, n := range p.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = n
				rp.ErrorCode = codes[TopicPartition{p.topic, n}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		o.reply(token, resp)
		return o.replies, o.records
	}
	for _, tr := range req.Transactions {
		parts := requestPartitions(tr.Topics, func(t kmsg.AddPartitionsToTxnRequestTransactionTopic) (string, []int32) {
			return t.Topic, t.Partitions
		})
		codes := c.addOrVerify(&o, nowMs, tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, parts, tr.VerifyOnly, tv2)
		if req.Version < 5 {
			for p, code := range codes {
				if code == kerr.TransactionAbortable.Code {
					codes[p] = kerr.InvalidTxnState.Code
				}
			}
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tr.TransactionalID
		for _, p := range groupByTopic(parts) {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = p.topic
			for _, n := range p.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition = n
				rp.ErrorCode = codes[TopicPartition{p.topic, n}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	o.reply(token, resp)
	return o.replies, o.records
}

// AddOffsetsToTxn adds partition PartitionFor(group) of __consumer_offsets
// to the transaction.
func (c *Coordinator) AddOffsetsToTxn(now time.Time, token any, req *kmsg.AddOffsetsToTxnRequest) ([]Reply, []Record) {
	c.begin(now)
	var o out
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	p := TopicPartition{OffsetsTopic, group.PartitionFor(req.Group, c.cfg.OffsetsTopicNumPartitions)}
	code := c.add(&o, now.UnixMilli(), req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{p}, tv0)
	if code == kerr.ProducerFenced.Code && req.Version < 2 {
		code = kerr.InvalidProducerEpoch.Code
	}
	resp.ErrorCode = code
	o.reply(token, resp)
	return o.replies, o.records
}

// PartitionsAddedByProduce adds partitions to a transaction on behalf of a
// transactional produce under transactions version 2 (KIP-890 part 2: the
// partition leader adds the partition, the client sends no
// AddPartitionsToTxn); the broker also calls it with the
// __consumer_offsets partition of the group for TxnOffsetCommit v5+. It
// is AddPartitionsToTxn v5 without VerifyOnly for a single transaction, in
// process. It returns a Kafka error code (0 on success) and the record to
// append before the produce may proceed.
func (c *Coordinator) PartitionsAddedByProduce(now time.Time, txnID string, producerID int64, epoch int16, partitions []TopicPartition) (int16, []Record) {
	c.begin(now)
	var o out
	code := c.add(&o, now.UnixMilli(), txnID, producerID, epoch, dedupe(partitions), tv2)
	return code, o.records
}

// addOrVerify adds parts to a transaction, or only verifies them, and
// returns the error code of every partition, as Kafka: partitions that do
// not exist get UNKNOWN_TOPIC_OR_PARTITION and the others
// OPERATION_NOT_ATTEMPTED; otherwise all partitions share one code, except
// that verification reports each partition missing from the transaction
// with TRANSACTION_ABORTABLE.
func (c *Coordinator) addOrVerify(o *out, nowMs int64, id string, pid int64, epoch int16, parts []TopicPartition, verify bool, tv int16) map[TopicPartition]int16 {
	codes := make(map[TopicPartition]int16, len(parts))
	all := func(code int16) map[TopicPartition]int16 {
		for _, p := range parts {
			codes[p] = code
		}
		return codes
	}
	if id == "" {
		return all(kerr.InvalidRequest.Code)
	}
	if c.cfg.PartitionExists != nil {
		missing := false
		for _, p := range parts {
			if !c.cfg.PartitionExists(p.Topic, p.Partition) {
				codes[p] = kerr.UnknownTopicOrPartition.Code
				missing = true
			}
		}
		if missing {
			for _, p := range parts {
				if _, ok := codes[p]; !ok {
					codes[p] = kerr.OperationNotAttempted.Code
				}
			}
			return codes
		}
	}
	if !verify {
		return all(c.add(o, nowMs, id, pid, epoch, parts, tv))
	}
	t := c.txns[id]
	switch {
	case t == nil || t.producerID != pid:
		return all(kerr.InvalidProducerIDMapping.Code)
	case t.epoch != epoch:
		return all(kerr.ProducerFenced.Code)
	case t.state == PrepareCommit || t.state == PrepareAbort:
		return all(kerr.ConcurrentTransactions.Code)
	}
	for _, p := range parts {
		codes[p] = 0
		if _, ok := t.partitions[p]; !ok {
			codes[p] = kerr.TransactionAbortable.Code
		}
	}
	return codes
}

// add is Kafka's handleAddPartitionsToTransaction: it adds parts to the
// transaction of id and writes the record, or answers without a record
// when all of them are in the open transaction already.
func (c *Coordinator) add(o *out, nowMs int64, id string, pid int64, epoch int16, parts []TopicPartition, tv int16) int16 {
	if id == "" {
		return kerr.InvalidRequest.Code
	}
	t := c.txns[id]
	switch {
	case t == nil || t.producerID != pid:
		return kerr.InvalidProducerIDMapping.Code
	case t.epoch != epoch:
		return kerr.ProducerFenced.Code
	case t.state == PrepareCommit || t.state == PrepareAbort:
		return kerr.ConcurrentTransactions.Code
	case t.state == Ongoing && t.hasAll(parts):
		return 0
	}
	if t.state != Ongoing {
		t.startMs = nowMs
	}
	for _, p := range parts {
		t.partitions[p] = struct{}{}
	}
	t.state = Ongoing
	t.clientTV = tv
	t.lastUpdateMs = nowMs
	c.persist(o, t)
	return 0
}

// requestPartitions flattens the topics of a request, dropping repeats and
// keeping the first-seen order.
func requestPartitions[T any](topics []T, get func(T) (string, []int32)) []TopicPartition {
	var ps []TopicPartition
	for _, t := range topics {
		name, parts := get(t)
		for _, p := range parts {
			ps = append(ps, TopicPartition{name, p})
		}
	}
	return dedupe(ps)
}

func dedupe(ps []TopicPartition) []TopicPartition {
	seen := make(map[TopicPartition]bool, len(ps))
	out := ps[:0:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

type topicPartitions struct {
	topic      string
	partitions []int32
}

// groupByTopic groups ps by topic in first-seen order.
func groupByTopic(ps []TopicPartition) []topicPartitions {
	var out []topicPartitions
	idx := map[string]int{}
	for _, p := range ps {
		i, ok := idx[p.Topic]
		if !ok {
			i = len(out)
			idx[p.Topic] = i
			out = append(out, topicPartitions{topic: p.Topic})
		}
		out[i].partitions = append(out[i].partitions, p.Partition)
	}
	return out
}
