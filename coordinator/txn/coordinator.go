// Package txn is the transaction coordinator of Apache Kafka written as a
// deterministic state machine.
//
// A Coordinator does no I/O, starts no goroutines, takes no locks and reads
// no clock: every input (a decoded kmsg request, a Tick, a replayed
// __transaction_state record, the news that markers were written) carries
// the current time, and every output is a value the caller acts on:
//
//   - Reply: a response to send for the request identified by Token. Every
//     request is answered by the call that handles it.
//   - Record: a key/value (nil value = tombstone) for the __transaction_state
//     partition of the transactional id, encoded with Kafka's own schemas
//     (TransactionLogKey v0, TransactionLogValue v0 or v1).
//   - Marker: the commit or abort control batches that must be written to
//     every partition of a transaction (WriteTxnMarkers semantics). When all
//     are written the caller reports it with MarkersWritten, which completes
//     the transaction and returns its CompleteCommit/CompleteAbort record.
//
// Contract with the caller (the broker):
//
//   - Calls are serialised; the Coordinator is not safe for concurrent use.
//   - The Records of a call are appended to __transaction_state (acks=all)
//     before its Replies are sent and before its Markers are written: the
//     PrepareCommit/PrepareAbort record is durable before any marker exists,
//     so a crash in between is finished after the restart (Loaded returns
//     the markers again).
//   - If that append fails, the caller throws this Coordinator away and
//     builds a new one by Replay of the log, answers the call's requests with
//     COORDINATOR_NOT_AVAILABLE (or NOT_COORDINATOR) instead of its Replies,
//     and writes none of its Markers. The state here is a projection of the
//     log and is never rolled back in place.
//   - Markers are retried until every partition has the marker (or the
//     partition no longer exists); then MarkersWritten is called once. A
//     marker may be written more than once: partitions ignore a repeat.
//   - Tick must be called at or after NextDeadline; early or extra Ticks are
//     harmless.
//   - After Replay of the __transaction_state partitions, Loaded(now) starts
//     the timers and returns the markers of transactions that were prepared
//     but not completed.
//
// Semantics follow Kafka's TransactionCoordinator, TransactionMetadata and
// TransactionStateManager (Kafka 4.x, with KIP-890 transactions version 2
// for EndTxn v5 and AddPartitionsToTxn v4+ sent by partition leaders).
// Where it differs (no pending states, marker delivery left to the caller,
// one overflow guard), the method comments say so.
package txn

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/kbroker/kbroker/coordinator/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config holds the coordinator settings, named after Kafka's broker
// properties. The zero value is not valid; start from DefaultConfig.
type Config struct {
	// TransactionMaxTimeoutMs is transaction.max.timeout.ms: InitProducerId
	// asking for a longer transaction timeout gets INVALID_TRANSACTION_TIMEOUT.
	TransactionMaxTimeoutMs int32
	// TransactionalIDExpirationMs is transactional.id.expiration.ms: a
	// transactional id with no open transaction and no update for this long
	// is removed (a tombstone is written).
	TransactionalIDExpirationMs int64
	// AbortTimedOutTransactionCleanupIntervalMs is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms: how often
	// Tick aborts transactions open longer than their timeout.
	AbortTimedOutTransactionCleanupIntervalMs int64
	// RemoveExpiredTransactionalIDCleanupIntervalMs is
	// transaction.remove.expired.transaction.cleanup.interval.ms: how often
	// Tick expires transactional ids.
	RemoveExpiredTransactionalIDCleanupIntervalMs int64
	// TransactionStateLogNumPartitions is
	// transaction.state.log.num.partitions; used to name the partition of a
	// transactional id when setting coordinator epochs.
	TransactionStateLogNumPartitions int32
	// OffsetsTopicNumPartitions is offsets.topic.num.partitions; AddOffsetsToTxn
	// adds partition PartitionFor(group) of __consumer_offsets.
	OffsetsTopicNumPartitions int32
	// TransactionVersion is the finalized transaction.version feature: 2
	// (KIP-890) or 0. It decides how a transaction the coordinator aborts
	// itself (timeout, fencing by InitProducerId) bumps the epoch, and the
	// __transaction_state value version written (0 for 0, else 1).
	TransactionVersion int16
	// NextProducerID allocates a fresh producer id. It is required; ids
	// must never repeat, across restarts too.
	NextProducerID func() (int64, error)
	// PartitionExists reports whether a topic partition exists;
	// AddPartitionsToTxn refuses others with UNKNOWN_TOPIC_OR_PARTITION.
	// Nil means every partition exists. It must not call the Coordinator.
	PartitionExists func(topic string, partition int32) bool
}

// DefaultConfig returns Kafka's defaults. NextProducerID must still be set.
func DefaultConfig() Config {
	return Config{
		TransactionMaxTimeoutMs:                       900000,
		TransactionalIDExpirationMs:                   7 * 24 * 60 * 60 * 1000,
		AbortTimedOutTransactionCleanupIntervalMs:     10000,
		RemoveExpiredTransactionalIDCleanupIntervalMs: 3600000,
		TransactionStateLogNumPartitions:              50,
		OffsetsTopicNumPartitions:                     50,
		TransactionVersion:                            2,
	}
}

// Validate reports the first setting that Kafka would refuse.
func (c Config) Validate() error {
	switch {
	case c.TransactionMaxTimeoutMs < 1:
		return errors.New("transaction.max.timeout.ms must be >= 1")
	case c.TransactionalIDExpirationMs < 1:
		return errors.New("transactional.id.expiration.ms must be >= 1")
	case c.AbortTimedOutTransactionCleanupIntervalMs < 1:
		return errors.New("transaction.abort.timed.out.transaction.cleanup.interval.ms must be >= 1")
	case c.RemoveExpiredTransactionalIDCleanupIntervalMs < 1:
		return errors.New("transaction.remove.expired.transaction.cleanup.interval.ms must be >= 1")
	case c.TransactionStateLogNumPartitions < 1:
		return errors.New("transaction.state.log.num.partitions must be >= 1")
	case c.OffsetsTopicNumPartitions < 1:
		return errors.New("offsets.topic.num.partitions must be >= 1")
	case c.TransactionVersion != 0 && c.TransactionVersion != 2:
		return errors.New("transaction.version must be 0 or 2")
	case c.NextProducerID == nil:
		return errors.New("a producer id allocator is required")
	}
	return nil
}

// Client identifies the sender of a request, as for the group coordinator.
type Client = group.Client

// Reply is a response to send for the request that was passed in with
// Token. Resp has its Version set to the version of that request.
type Reply struct {
	Token any
	Resp  kmsg.Response
}

// Record is one record for __transaction_state. TxnID names the
// transactional id it belongs to, so the caller can pick the partition with
// PartitionFor; Value nil is a tombstone.
type Record struct {
	TxnID string
	Key   []byte
	Value []byte
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Marker asks the broker to end a transaction in its partitions: append to
// each of Partitions a control batch (attributes transactional|control,
// ProducerID and ProducerEpoch as given, base sequence -1) holding one
// control record, key {version 0, type 1 commit / 0 abort}, value
// {version 0, CoordinatorEpoch}, exactly as Kafka's WriteTxnMarkers. When
// all are written, call MarkersWritten(now, TxnID, ProducerID, ProducerEpoch).
type Marker struct {
	TxnID            string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// Partitions is sorted by topic, then partition. It is empty only for a
	// transaction replayed in a prepared state with no partitions (not one
	// this package writes); then there is nothing to write and the broker
	// calls MarkersWritten at once.
	Partitions []TopicPartition
}

// out accumulates what one input produces.
type out struct {
	replies []Reply
	records []Record
	markers []Marker
}

func (o *out) reply(token any, resp kmsg.Response) {
	o.replies = append(o.replies, Reply{Token: token, Resp: resp})
}

// Coordinator holds the transactional ids of the __transaction_state
// partitions this broker leads. See the package comment for the calling
// contract.
type Coordinator struct {
	cfg  Config
	txns map[string]*txn
	// coordEpochs holds the coordinator epoch (leader epoch of the
	// __transaction_state partition) by partition; absent means 0.
	coordEpochs map[int32]int32
	// nextAbortCheck and nextExpireCheck are when Tick next aborts timed
	// out transactions and expires ids; zero until the first input with a
	// clock.
	nextAbortCheck  time.Time
	nextExpireCheck time.Time
}

// New returns an empty Coordinator, or an error if cfg is invalid.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Coordinator{cfg: cfg, txns: make(map[string]*txn), coordEpochs: make(map[int32]int32)}, nil
}

// PartitionFor returns the __transaction_state partition that holds txnID,
// by the same rule as __consumer_offsets: abs(javaHashCode(txnID)) %
// numPartitions (0 if numPartitions < 1).
func PartitionFor(txnID string, numPartitions int32) int32 {
	return group.PartitionFor(txnID, numPartitions)
}

// SetCoordinatorEpoch records the leader epoch of __transaction_state
// partition p, stamped on the markers of its transactions so that partition
// leaders can reject markers from a deposed coordinator.
func (c *Coordinator) SetCoordinatorEpoch(partition, epoch int32) {
	c.coordEpochs[partition] = epoch
}

// Unload forgets the transactional ids of __transaction_state partition p,
// as Kafka does when it stops leading that partition.
func (c *Coordinator) Unload(partition int32) {
	for id := range c.txns {
		if PartitionFor(id, c.cfg.TransactionStateLogNumPartitions) == partition {
			delete(c.txns, id)
		}
	}
	delete(c.coordEpochs, partition)
}

// Handle dispatches a decoded request to its method. It returns an error,
// and no outputs, for a request kind or version this coordinator does not
// serve; the broker should have refused those already.
func (c *Coordinator) Handle(now time.Time, token any, client Client, req kmsg.Request) ([]Reply, []Record, []Marker, error) {
	_ = client // for symmetry with the group coordinator; nothing depends on it yet
	v := req.GetVersion()
	ok := func(max int16) bool { return v >= 0 && v <= max }
	switch req := req.(type) {
	case *kmsg.InitProducerIDRequest:
		if ok(5) {
			r, rec, m := c.InitProducerID(now, token, req)
			return r, rec, m, nil
		}
	case *kmsg.AddPartitionsToTxnRequest:
		if ok(5) {
			r, rec := c.AddPartitionsToTxn(now, token, req)
			return r, rec, nil, nil
		}
	case *kmsg.AddOffsetsToTxnRequest:
		if ok(4) {
			r, rec := c.AddOffsetsToTxn(now, token, req)
			return r, rec, nil, nil
		}
	case *kmsg.EndTxnRequest:
		if ok(5) {
			r, rec, m := c.EndTxn(now, token, req)
			return r, rec, m, nil
		}
	case *kmsg.DescribeTransactionsRequest:
		if ok(0) {
			return c.DescribeTransactions(now, token, req), nil, nil, nil
		}
	case *kmsg.ListTransactionsRequest:
		if ok(2) {
			return c.ListTransactions(now, token, req), nil, nil, nil
		}
	}
	return nil, nil, nil, fmt.Errorf("transaction coordinator: unsupported request key %d version %d", req.Key(), v)
}

// begin is called at the start of every input that carries a clock.
func (c *Coordinator) begin(now time.Time) {
	if c.nextAbortCheck.IsZero() {
		c.nextAbortCheck = now.Add(ms(c.cfg.AbortTimedOutTransactionCleanupIntervalMs))
	}
	if c.nextExpireCheck.IsZero() {
		c.nextExpireCheck = now.Add(ms(c.cfg.RemoveExpiredTransactionalIDCleanupIntervalMs))
	}
}

// Loaded is called once the partitions are replayed. It starts the timers
// and returns the markers of every transaction left in PrepareCommit or
// PrepareAbort, which the broker must write (and report with
// MarkersWritten) as after any EndTxn.
func (c *Coordinator) Loaded(now time.Time) []Marker {
	c.begin(now)
	return c.PendingMarkers()
}

// PendingMarkers returns the markers of every transaction in PrepareCommit
// or PrepareAbort, sorted by transactional id: those whose MarkersWritten
// has not been called yet.
func (c *Coordinator) PendingMarkers() []Marker {
	var ms []Marker
	for _, id := range sortedIDs(c.txns) {
		t := c.txns[id]
		if t.state == PrepareCommit || t.state == PrepareAbort {
			ms = append(ms, c.marker(t))
		}
	}
	return ms
}

// NextDeadline returns the earliest time at which Tick has work to do, or
// the zero time before the first input that carried a clock.
func (c *Coordinator) NextDeadline() time.Time {
	if c.nextExpireCheck.Before(c.nextAbortCheck) {
		return c.nextExpireCheck
	}
	return c.nextAbortCheck
}

// Tick performs everything due at now: every
// AbortTimedOutTransactionCleanupIntervalMs it aborts the Ongoing
// transactions open for longer than their timeout (fencing their producer
// with a bumped epoch, as Kafka's abortTimedOutTransactions); every
// RemoveExpiredTransactionalIDCleanupIntervalMs it removes transactional
// ids idle for TransactionalIDExpirationMs. No request waits on a timer
// here, so Tick returns no replies.
func (c *Coordinator) Tick(now time.Time) ([]Record, []Marker) {
	c.begin(now)
	var o out
	if !now.Before(c.nextAbortCheck) {
		c.abortTimedOut(&o, now)
		c.nextAbortCheck = now.Add(ms(c.cfg.AbortTimedOutTransactionCleanupIntervalMs))
	}
	if !now.Before(c.nextExpireCheck) {
		c.expireIDs(&o, now)
		c.nextExpireCheck = now.Add(ms(c.cfg.RemoveExpiredTransactionalIDCleanupIntervalMs))
	}
	return o.records, o.markers
}

// abortTimedOut aborts every Ongoing transaction whose start plus timeout
// lies before now.
func (c *Coordinator) abortTimedOut(o *out, now time.Time) {
	nowMs := now.UnixMilli()
	for _, id := range sortedIDs(c.txns) {
		t := c.txns[id]
		if t.state == Ongoing && t.startMs+int64(t.timeoutMs) < nowMs && t.epoch < math.MaxInt16 {
			c.fence(o, t, nowMs)
		}
	}
}

// expireIDs removes transactional ids with no open transaction whose last
// update is at least TransactionalIDExpirationMs old, writing a tombstone
// for each.
func (c *Coordinator) expireIDs(o *out, now time.Time) {
	limit := now.UnixMilli() - c.cfg.TransactionalIDExpirationMs
	for _, id := range sortedIDs(c.txns) {
		t := c.txns[id]
		if t.state.expirationAllowed() && t.lastUpdateMs <= limit {
			delete(c.txns, id)
			o.records = append(o.records, tombstone(id))
		}
	}
}

// coordinatorEpoch is the epoch stamped on markers of t.
func (c *Coordinator) coordinatorEpoch(id string) int32 {
	return c.coordEpochs[PartitionFor(id, c.cfg.TransactionStateLogNumPartitions)]
}

// allocate returns a fresh producer id, or the error code to answer with
// when the allocator fails.
func (c *Coordinator) allocate() (int64, int16) {
	id, err := c.cfg.NextProducerID()
	if err != nil || id < 0 {
		return -1, codeCoordinatorNotAvailable
	}
	return id, 0
}

func sortedIDs(m map[string]*txn) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
