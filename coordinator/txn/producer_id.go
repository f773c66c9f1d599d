package txn

// InitProducerId v0–v5. v2 is flexible; v3 adds the producer id and epoch
// of a producer that restarts after an error (KIP-360); v4 may be answered
// with PRODUCER_FENCED, which v0–v3 see as INVALID_PRODUCER_EPOCH; v5
// (KIP-890) changes nothing here.

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID hands a producer its id and epoch. Without a
// transactional id it allocates a fresh id with epoch 0 and writes nothing.
// With one it bumps the epoch of the id's producer (or rotates to a new
// producer id when the epoch is exhausted), which fences every older
// instance; if that id has an Ongoing transaction, the transaction is
// aborted at a bumped epoch first and the request is answered with
// CONCURRENT_TRANSACTIONS, so the client retries once the abort completes,
// as Kafka does.
func (c *Coordinator) InitProducerID(now time.Time, token any, req *kmsg.InitProducerIDRequest) ([]Reply, []Record, []Marker) {
	c.begin(now)
	var o out
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = noProducerID, noEpoch
	code := c.initProducerID(&o, now.UnixMilli(), req, resp)
	if code == kerr.ProducerFenced.Code && req.Version < 4 {
		code = kerr.InvalidProducerEpoch.Code
	}
	if code != 0 {
		resp.ProducerID, resp.ProducerEpoch = noProducerID, noEpoch
	}
	resp.ErrorCode = code
	o.reply(token, resp)
	return o.replies, o.records, o.markers
}

// expectedProducer is the producer id and epoch an InitProducerId v3+
// names, or none.
type expectedProducer struct {
	set   bool
	id    int64
	epoch int16
}

func (c *Coordinator) initProducerID(o *out, nowMs int64, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) int16 {
	var exp expectedProducer
	if req.Version >= 3 {
		switch {
		case req.ProducerID == noProducerID && req.ProducerEpoch == noEpoch:
		case req.ProducerID == noProducerID || req.ProducerEpoch == noEpoch:
			return kerr.InvalidRequest.Code
		default:
			exp = expectedProducer{true, req.ProducerID, req.ProducerEpoch}
		}
	}
	if req.TransactionalID == nil {
		id, code := c.allocate()
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = id, 0
		}
		return code
	}
	id := *req.TransactionalID
	switch {
	case id == "":
		return kerr.InvalidRequest.Code
	case req.TransactionTimeoutMillis <= 0 || req.TransactionTimeoutMillis > c.cfg.TransactionMaxTimeoutMs:
		return kerr.InvalidTransactionTimeout.Code
	}
	t := c.txns[id]
	if t == nil {
		pid, code := c.allocate()
		if code != 0 {
			return code
		}
		// A new id starts at epoch -1 and is Empty; the bump below
		// makes it epoch 0, and only then is it kept.
		t = &txn{
			id: id, producerID: pid, epoch: noEpoch, lastEpoch: noEpoch,
			prevProducerID: noProducerID, nextProducerID: noProducerID,
			timeoutMs: req.TransactionTimeoutMillis, state: Empty,
			partitions: map[TopicPartition]struct{}{}, startMs: -1, lastUpdateMs: nowMs,
		}
	}
	// A named producer is fenced unless it is the current one, the id was
	// just created, or it is retrying the call that rotated its exhausted
	// producer id.
	if exp.set && !(t.epoch == noEpoch || exp.id == t.producerID ||
		(exp.id == t.prevProducerID && epochExhausted(exp.epoch))) {
		return kerr.ProducerFenced.Code
	}
	switch t.state {
	case PrepareCommit, PrepareAbort:
		return kerr.ConcurrentTransactions.Code
	case Ongoing:
		if t.epoch == math.MaxInt16 {
			return kerr.UnknownServerError.Code // cannot fence; never written by this package
		}
		c.fence(o, t, nowMs)
		return kerr.ConcurrentTransactions.Code
	}
	// Empty, CompleteCommit or CompleteAbort.
	epoch, last, pid := t.epoch, t.lastEpoch, t.producerID
	switch {
	case epochExhausted(t.epoch) && (!exp.set || exp.epoch == t.epoch):
		newPID, code := c.allocate()
		if code != 0 {
			return code
		}
		pid, epoch, last = newPID, 0, noEpoch
		if exp.set {
			last = t.epoch
		}
	case epochExhausted(t.epoch):
		// Only a retry of the rotation can name another epoch here.
		if exp.epoch != t.lastEpoch {
			return kerr.ProducerFenced.Code
		}
	case !exp.set:
		epoch, last = t.epoch+1, noEpoch
	case t.epoch == noEpoch || exp.epoch == t.epoch:
		epoch, last = t.epoch+1, t.epoch
	case exp.epoch == t.lastEpoch:
		// A retry of a call that succeeded: answer the same epoch again.
	default:
		return kerr.ProducerFenced.Code
	}
	t.prevProducerID = t.producerID
	t.producerID, t.epoch, t.lastEpoch = pid, epoch, last
	t.state = Empty
	t.timeoutMs = req.TransactionTimeoutMillis
	t.partitions = map[TopicPartition]struct{}{}
	t.startMs = -1
	t.nextProducerID = noProducerID
	t.lastUpdateMs = nowMs
	c.txns[id] = t
	c.persist(o, t)
	resp.ProducerID, resp.ProducerEpoch = t.producerID, t.epoch
	return 0
}
