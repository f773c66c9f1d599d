package txn

import (
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is the state of a transactional id, numbered as in the
// __transaction_state records and named as DescribeTransactions reports it.
type State int8

// The states of Kafka's TransactionState. Dead and PrepareEpochFence are
// never held by a Coordinator: an expired id is deleted at once, and fencing
// goes straight to PrepareAbort (Kafka only holds them as pending states).
const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name of the state.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// stateByName maps a DescribeTransactions/ListTransactions name to a State.
func stateByName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// expirationAllowed reports whether an id in this state may be expired:
// no transaction is open.
func (s State) expirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// Transaction versions (Kafka's transaction.version feature levels).
const (
	// tv0 is the original protocol: the client adds partitions itself and
	// EndTxn leaves the epoch alone.
	tv0 int16 = 0
	// tv2 is KIP-890 part 2: EndTxn v5 bumps the epoch of every
	// transaction, partitions are added by their leaders.
	tv2 int16 = 2
)

// noEpoch and noProducerID are Kafka's RecordBatch.NO_PRODUCER_EPOCH and
// NO_PRODUCER_ID.
const (
	noEpoch      int16 = -1
	noProducerID int64 = -1
)

// codeCoordinatorNotAvailable answers a request whose producer id could not
// be allocated.
var codeCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code

// epochExhausted reports whether no more epochs may be handed out for a
// producer id: Kafka keeps Short.MaxValue in reserve so that the
// coordinator can always fence the last epoch it gave out.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// txn is the coordinator's view of one transactional id: the contents of
// its last __transaction_state record, plus lastEpoch.
type txn struct {
	id string
	// producerID and epoch are what the current producer must use.
	// Invariant: epoch >= 0 (every txn in the map has had a record written
	// or replayed, and epochs start at 0).
	producerID int64
	epoch      int16
	// lastEpoch is the epoch the producer held before the last bump, so a
	// retried InitProducerId or EndTxn v5 is recognised; noEpoch when a new
	// producer took over. Like Kafka it is not in the record, so it is
	// noEpoch after a reload.
	lastEpoch int16
	// prevProducerID is the producer id before the last transition that
	// could change it (KIP-890); it lets a producer retry the EndTxn that
	// exhausted its epochs and moved it to a new id.
	prevProducerID int64
	// nextProducerID is the id the producer moves to, with epoch 0, when
	// the transaction completes. Invariant: not noProducerID only in
	// PrepareCommit/PrepareAbort under tv2 when the epoch reached
	// math.MaxInt16.
	nextProducerID int64
	timeoutMs      int32
	state          State
	// partitions are the partitions of the open transaction. Invariant:
	// empty in Empty, CompleteCommit and CompleteAbort.
	partitions map[TopicPartition]struct{}
	// startMs is when the first partition was added; -1 in Empty.
	startMs int64
	// lastUpdateMs is the time of the last record; expiration counts from it.
	lastUpdateMs int64
	// clientTV is the transaction version of the client's last EndTxn or
	// AddPartitionsToTxn (tv0 or tv2).
	clientTV int16
}

// sortedPartitions returns t's partitions by topic, then partition.
func (t *txn) sortedPartitions() []TopicPartition {
	ps := make([]TopicPartition, 0, len(t.partitions))
	for p := range t.partitions {
		ps = append(ps, p)
	}
	sortPartitions(ps)
	return ps
}

func sortPartitions(ps []TopicPartition) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
}

// hasAll reports whether every partition of ps is in the transaction.
func (t *txn) hasAll(ps []TopicPartition) bool {
	for _, p := range ps {
		if _, ok := t.partitions[p]; !ok {
			return false
		}
	}
	return true
}

// persist appends t's current state as a record.
func (c *Coordinator) persist(o *out, t *txn) {
	o.records = append(o.records, c.record(t))
}

// marker returns the marker that ends t, which is in PrepareCommit or
// PrepareAbort with at least one partition.
func (c *Coordinator) marker(t *txn) Marker {
	return Marker{
		TxnID:            t.id,
		ProducerID:       t.producerID,
		ProducerEpoch:    t.epoch,
		Commit:           t.state == PrepareCommit,
		CoordinatorEpoch: c.coordinatorEpoch(t.id),
		Partitions:       t.sortedPartitions(),
	}
}

// prepareEnd moves t from Ongoing (or, under tv2, from a completed state
// with no partitions) to PrepareCommit or PrepareAbort and writes the
// record, as Kafka's prepareAbortOrCommit. Under tv2 the epoch is bumped and
// nextPID (noProducerID unless the epoch is exhausted) is where the
// producer moves on completion. A transaction with no partitions needs no
// markers and completes in the same call, as Kafka's marker channel does.
func (c *Coordinator) prepareEnd(o *out, t *txn, commit bool, tv int16, nextPID int64, nowMs int64) {
	if tv >= tv2 && t.epoch < math.MaxInt16 {
		t.lastEpoch = t.epoch
		t.epoch++
	}
	if t.state != Ongoing {
		// KIP-890: an abort with no partitions added; its start is now.
		t.startMs = nowMs
	}
	t.state = PrepareAbort
	if commit {
		t.state = PrepareCommit
	}
	t.nextProducerID = nextPID
	t.clientTV = tv
	t.lastUpdateMs = nowMs
	c.persist(o, t)
	if len(t.partitions) == 0 {
		c.complete(o, t, nowMs)
		return
	}
	o.markers = append(o.markers, c.marker(t))
}

// complete moves t from PrepareCommit/PrepareAbort to
// CompleteCommit/CompleteAbort and writes the record, as Kafka's
// prepareComplete: the partitions are cleared, and a producer whose epoch
// was exhausted under tv2 moves to nextProducerID with epoch 0.
func (c *Coordinator) complete(o *out, t *txn, nowMs int64) {
	if t.state == PrepareCommit {
		t.state = CompleteCommit
	} else {
		t.state = CompleteAbort
	}
	if t.clientTV >= tv2 {
		t.prevProducerID = t.producerID
		if t.nextProducerID != noProducerID {
			t.producerID, t.epoch = t.nextProducerID, 0
		}
	}
	t.nextProducerID = noProducerID
	t.partitions = map[TopicPartition]struct{}{}
	t.lastUpdateMs = nowMs
	c.persist(o, t)
}

// fence aborts t's Ongoing transaction on the coordinator's own account
// (transaction timeout, or InitProducerId from a new producer instance):
// the epoch is bumped so that the current producer is fenced, as Kafka's
// prepareFenceProducerEpoch followed by an abort at the server's
// transaction version. Under tv2 the abort bumps once more, so a fenced
// tv2 producer cannot pass its retry check. Requires t.epoch <
// math.MaxInt16.
func (c *Coordinator) fence(o *out, t *txn, nowMs int64) {
	t.epoch++
	t.lastEpoch = noEpoch
	tv := c.cfg.TransactionVersion
	if t.epoch == math.MaxInt16 {
		// Kafka would overflow here; one bump already fences.
		tv = tv0
	}
	c.prepareEnd(o, t, false, tv, noProducerID, nowMs)
}
