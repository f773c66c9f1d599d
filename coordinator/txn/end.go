package txn

// EndTxn v0–v5. v1 changes nothing; v2 may be answered with
// PRODUCER_FENCED, which v0–v1 see as INVALID_PRODUCER_EPOCH; v3 is
// flexible; v4 adds nothing here; v5 (KIP-890 part 2, transactions version
// 2) bumps the producer epoch on every EndTxn and returns the producer id and
// epoch to use next, and allows aborting with no partitions added.

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrNoPendingMarkers is wrapped by MarkersWritten when the transaction it
// names is not waiting for those markers (it completed already, was
// reloaded with another producer, or never existed).
var ErrNoPendingMarkers = errors.New("no transaction is waiting for these markers")

// EndTxn commits or aborts the producer's transaction. On success the
// PrepareCommit/PrepareAbort record and the Marker are returned, and the
// reply (NONE) may be sent as soon as the record is appended: like Kafka,
// the client does not wait for the markers. A retried EndTxn while markers
// are outstanding gets CONCURRENT_TRANSACTIONS; after completion it gets
// NONE again.
func (c *Coordinator) EndTxn(now time.Time, token any, req *kmsg.EndTxnRequest) ([]Reply, []Record, []Marker) {
	c.begin(now)
	var o out
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	tv := tv0
	if req.Version >= 5 {
		tv = tv2
	}
	code := c.endTxn(&o, now.UnixMilli(), req, tv, resp)
	if code == kerr.ProducerFenced.Code && req.Version < 2 {
		code = kerr.InvalidProducerEpoch.Code
	}
	if code != 0 || tv < tv2 {
		resp.ProducerID, resp.ProducerEpoch = noProducerID, noEpoch
	}
	resp.ErrorCode = code
	o.reply(token, resp)
	return o.replies, o.records, o.markers
}

func (c *Coordinator) endTxn(o *out, nowMs int64, req *kmsg.EndTxnRequest, tv int16, resp *kmsg.EndTxnResponse) int16 {
	if req.TransactionalID == "" {
		return kerr.InvalidRequest.Code
	}
	t := c.txns[req.TransactionalID]
	if t == nil {
		return kerr.InvalidProducerIDMapping.Code
	}
	if tv >= tv2 {
		return c.endTxnV2(o, nowMs, t, req, resp)
	}
	switch {
	case req.ProducerID != t.producerID:
		return kerr.InvalidProducerIDMapping.Code
	case req.ProducerEpoch != t.epoch:
		return kerr.ProducerFenced.Code
	}
	switch t.state {
	case Ongoing:
		c.prepareEnd(o, t, req.Commit, tv0, noProducerID, nowMs)
		return 0
	case CompleteCommit, CompleteAbort:
		if req.Commit == (t.state == CompleteCommit) {
			return 0 // a retry of the call that succeeded
		}
	case PrepareCommit, PrepareAbort:
		if req.Commit == (t.state == PrepareCommit) {
			return kerr.ConcurrentTransactions.Code
		}
	}
	return kerr.InvalidTxnState.Code
}

// endTxnV2 is EndTxn under transactions version 2, after Kafka's table:
// the epoch of a retry is one below the stored epoch (the first call
// bumped it), so the same epoch as stored means a new EndTxn.
//
//	                 Abort           Commit
//	                 retry  current  retry  current
//	Empty            FENCED bump     FENCED INVALID_TXN_STATE
//	CompleteAbort    NONE   bump     ITS    ITS
//	CompleteCommit   ITS    bump     NONE   ITS
func (c *Coordinator) endTxnV2(o *out, nowMs int64, t *txn, req *kmsg.EndTxnRequest, resp *kmsg.EndTxnResponse) int16 {
	// The producer retries the EndTxn that exhausted its epochs and moved
	// it to a new producer id.
	retryOnOverflow := t.prevProducerID == req.ProducerID && req.ProducerEpoch == math.MaxInt16-1 && t.epoch == 0
	retryOnBump := int32(t.epoch) == int32(req.ProducerEpoch)+1
	if (t.state == PrepareCommit || t.state == PrepareAbort) && !retryOnBump && !retryOnOverflow &&
		((req.ProducerID == t.producerID && req.ProducerEpoch == t.epoch) ||
			(t.nextProducerID != noProducerID && req.ProducerID == t.nextProducerID && req.ProducerEpoch == 0)) {
		// The producer holds the bumped epoch (or the next producer id)
		// its last EndTxn returned and ends its next transaction while
		// that one's markers are still being written (in a cluster they
		// travel after EndTxn was answered): it waits, as Kafka answers
		// CONCURRENT_TRANSACTIONS during a pending transition, rather
		// than being fenced.
		return kerr.ConcurrentTransactions.Code
	}
	var valid bool
	switch t.state {
	case Ongoing, Empty:
		valid = req.ProducerEpoch == t.epoch
	case PrepareCommit, PrepareAbort:
		valid = retryOnBump
	case CompleteCommit, CompleteAbort:
		valid = retryOnBump || retryOnOverflow || req.ProducerEpoch == t.epoch
	}
	switch {
	case req.ProducerID != t.producerID && !retryOnOverflow:
		return kerr.InvalidProducerIDMapping.Code
	case !valid:
		return kerr.ProducerFenced.Code
	}
	retry := retryOnBump || retryOnOverflow
	prepare := func() int16 {
		next := noProducerID
		if epochExhausted(t.epoch) {
			var code int16
			if next, code = c.allocate(); code != 0 {
				return code
			}
		}
		c.prepareEnd(o, t, req.Commit, tv2, next, nowMs)
		resp.ProducerID, resp.ProducerEpoch = t.producerID, t.epoch
		if t.nextProducerID != noProducerID {
			// The producer continues with the new id once the markers
			// are written.
			resp.ProducerID, resp.ProducerEpoch = t.nextProducerID, 0
		}
		return 0
	}
	current := func() int16 {
		resp.ProducerID, resp.ProducerEpoch = t.producerID, t.epoch
		return 0
	}
	switch t.state {
	case Ongoing:
		return prepare()
	case Empty:
		if !req.Commit {
			return prepare()
		}
	case CompleteCommit:
		switch {
		case req.Commit && retry:
			return current()
		case !req.Commit && !retry:
			return prepare()
		}
	case CompleteAbort:
		switch {
		case !req.Commit && retry:
			return current()
		case !req.Commit:
			return prepare()
		}
	case PrepareCommit, PrepareAbort:
		if req.Commit == (t.state == PrepareCommit) {
			return kerr.ConcurrentTransactions.Code
		}
	}
	return kerr.InvalidTxnState.Code
}

// MarkersWritten reports that the markers of txnID's prepared transaction,
// written with producerID and epoch (as in its Marker), are in every
// partition. The transaction moves to CompleteCommit or CompleteAbort and
// its record is returned, to be appended like any other. It returns an
// error wrapping ErrNoPendingMarkers, and no record, when no transaction is
// waiting for these markers; the broker can ignore that.
func (c *Coordinator) MarkersWritten(now time.Time, txnID string, producerID int64, epoch int16) ([]Record, error) {
	c.begin(now)
	t := c.txns[txnID]
	switch {
	case t == nil:
		return nil, fmt.Errorf("%w: transactional id %q is unknown", ErrNoPendingMarkers, txnID)
	case t.state != PrepareCommit && t.state != PrepareAbort:
		return nil, fmt.Errorf("%w: transactional id %q is %s", ErrNoPendingMarkers, txnID, t.state)
	case t.producerID != producerID || t.epoch != epoch:
		return nil, fmt.Errorf("%w: transactional id %q is at producer %d epoch %d, not %d/%d",
			ErrNoPendingMarkers, txnID, t.producerID, t.epoch, producerID, epoch)
	}
	var o out
	c.complete(&o, t, now.UnixMilli())
	return o.records, nil
}
