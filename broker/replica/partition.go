package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partition is one partition this broker leads: its log, high watermark and
// producer state. On a single node every append is immediately replicated to
// the whole ISR (itself), so the HW follows the LEO.
type Partition struct {
	Topic *Topic
	Index int32
	Log   *storage.Log
	Dir   *storage.Dir

	logger *slog.Logger
	env    partitionEnv

	// epoch is the leader epoch written into every appended batch: 0 on a
	// single node, the controller's in cluster mode (role.go).
	epoch atomic.Int32

	// hw is the high watermark. Invariant: logStart <= hw <= LEO.
	hw atomic.Int64
	// lso is the last stable offset. Invariant: lso <= hw.
	lso atomic.Int64
	// role mirrors mu.repl.kind, or roleClosed once closed, so that fetches
	// check it without waiting for an append's write (role.go).
	role atomic.Uint32
	// appendFailing is set while appends fail with storage errors, so the
	// failure is logged once, not per request (disk_errors.go).
	appendFailing atomic.Bool

	mu struct {
		sync.Mutex
		closed bool
		// sinceSnapshot counts bytes appended since the last producer snapshot.
		sinceSnapshot int
		// nextExpiry is when idempotent producers are next checked for expiry.
		nextExpiry time.Time
		producers  producerStates
		txns       partitionTxns
		// arrived is closed and replaced on every append, every HW move,
		// every role change and on close, to wake parked share fetches.
		arrived chan struct{}
		// watchers are the parked fetches reading this partition
		// (fetch_wait.go), signalled at the same moments.
		watchers map[*fetchWatch]struct{}
		// repl is the partition's replication role in cluster mode
		// (role.go); the zero value is the single-node leader.
		repl replState
	}
}

// partitionEnv is what a partition needs from its broker.
type partitionEnv struct {
	logger *slog.Logger
	now    func() time.Time
	// producerExpirationMs is producer.id.expiration.ms: idempotent producers
	// silent for this long (and with no open transaction) are forgotten.
	producerExpirationMs int64
	// producerExpirationCheckMs is producer.id.expiration.check.interval.ms.
	producerExpirationCheckMs int64
	// cluster is set in cluster mode: a new partition has no role until
	// MakeLeader or MakeFollower (role.go).
	cluster bool
	// parked are the broker's parked narrowed follower fetches
	// (fetch_replica.go), signalled with the partition's own watchers.
	parked *watchSet
}

func (m *Manager) partitionEnv() partitionEnv {
	return partitionEnv{logger: m.log, now: m.now, producerExpirationMs: m.cfg.ProducerIDExpirationMs, producerExpirationCheckMs: m.cfg.ProducerIDExpirationCheckIntervalMs,
		cluster: m.cluster() != nil, parked: &m.parkedFollowers}
}

// newAbsentPartition is partition index of t as a broker of a cluster
// holds it before it gets a replica of it (or after it lost one): no log,
// no dir, closed. Kafka creates a partition's log only when a LeaderAndIsr
// gives the broker a replica of it; so does kbroker (replicaPartition
// replaces this value with an open one then).
func newAbsentPartition(t *Topic, index int32, env partitionEnv) *Partition {
	p := &Partition{Topic: t, Index: index, logger: env.logger, env: env}
	p.mu.arrived = make(chan struct{})
	p.mu.producers = producerStates{}
	p.mu.repl.kind = replNone
	p.close()
	return p
}

// Hosted reports whether this broker holds a log of the partition; an
// absent partition (newAbsentPartition) has none and is closed.
func (p *Partition) Hosted() bool { return p.Log != nil }

func newPartition(t *Topic, index int32, log *storage.Log, dir *storage.Dir, env partitionEnv) (*Partition, error) {
	logger := env.logger
	p := &Partition{Topic: t, Index: index, Log: log, Dir: dir, logger: logger, env: env}
	// Kafka's partition.metadata, so that Kafka opening this dir (the way
	// back from kbroker) finds the topic id it expects. A file naming
	// another id is kept, as Kafka keeps it, and reported.
	if err := log.EnsurePartitionMetadata(t.Meta.ID); err != nil {
		logger.Error("partition.metadata does not match the topic", "topic", t.Meta.Name, "partition", index, "err", err)
	}
	p.mu.arrived = make(chan struct{})
	p.mu.producers = producerStates{}
	p.hw.Store(log.LogEndOffset())
	from := p.loadSnapshotLocked(log.LogEndOffset())
	if err := p.rebuildState(from); err != nil {
		return nil, fmt.Errorf("rebuilding producer state of %s-%d: %w", t.Meta.Name, index, err)
	}
	// A snapshot may list aborted transactions that retention or
	// DeleteRecords removed after it was taken.
	p.mu.txns.truncateAbortedBelow(log.LogStartOffset())
	p.lso.Store(p.mu.txns.lastStable(p.hw.Load()))
	if env.cluster {
		hw, ok := dir.HighWatermark(storage.TopicPartition{Topic: t.Meta.Name, Partition: index})
		p.enterCluster(hw, ok)
	}
	return p, nil
}

// rebuildChunk is how much log is read at a time when rebuilding.
const rebuildChunk = 1 << 20

// rebuildState replays the batches from offset off to the log end into the
// producer and transaction state (off is the log start, or the offset of the
// producer snapshot the state was loaded from).
func (p *Partition) rebuildState(off int64) error {
	end := p.Log.LogEndOffset()
	for off < end {
		data, err := p.Log.Read(off, rebuildChunk, end, true)
		if err != nil {
			return fmt.Errorf("reading at offset %d: %w", off, err)
		}
		if len(data) == 0 {
			return nil
		}
		for len(data) > 0 {
			h, err := records.ParseHeader(data)
			if err != nil || h.TotalSize() > len(data) {
				return fmt.Errorf("bad batch at offset %d: %v", off, err)
			}
			var ct records.ControlType
			if h.IsControl() {
				if ct, err = records.ControlTypeOf(data[:h.TotalSize()]); err != nil {
					return fmt.Errorf("control batch at offset %d: %w", h.BaseOffset, err)
				}
				p.mu.producers.observeMarker(h)
			} else if h.ProducerID >= 0 {
				p.mu.producers.update(h, h.BaseOffset)
			}
			p.mu.txns.observe(h, h.BaseOffset, h.LastOffset(), ct)
			off = h.NextOffset()
			data = data[h.TotalSize():]
		}
	}
	return nil
}

// LastStableOffset is the LSO: below it no transaction is open.
func (p *Partition) LastStableOffset() int64 { return p.lso.Load() }

// trimAborted forgets the aborted transactions whose abort marker is below
// the log start offset: no fetch can reach their data any more. Retention,
// DeleteRecords (SetLogStartOffset) and the cleaner call it after a pass, so
// the list is bounded by the log that remains, not by the partition's
// history.
func (p *Partition) trimAborted() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.txns.truncateAbortedBelow(p.Log.LogStartOffset())
}

// SetLogStartOffset moves the log start offset up to off (DeleteRecords)
// and forgets the aborted transactions wholly below it.
func (p *Partition) SetLogStartOffset(off int64) error {
	if err := p.Log.SetLogStartOffset(off); err != nil {
		return err
	}
	p.trimAborted()
	return nil
}

// AbortedBetween lists aborted transactions with data in [from, to), for read_committed fetches.
func (p *Partition) AbortedBetween(from, to int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.txns.abortedBetween(from, to)
}

// appendMarker writes a transaction marker (control batch) for a producer.
func (p *Partition) appendMarker(producerID int64, epoch int16, ct records.ControlType, coordinatorEpoch int32, nowMs int64) (int64, error) {
	batch, err := records.BuildControlBatch(producerID, epoch, ct, coordinatorEpoch, nowMs)
	if err != nil {
		return 0, err
	}
	h, err := records.ParseHeader(batch)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return 0, errPartitionClosed
	}
	if !p.mu.repl.leads() {
		return 0, errNotLeader
	}
	if st := p.mu.producers[producerID]; st != nil && epoch < st.epoch {
		return 0, nil // a stale marker: the producer moved on (Kafka answers INVALID_PRODUCER_EPOCH)
	}
	info, err := p.Log.AppendParsed(batch, h, p.epoch.Load())
	if err != nil {
		return 0, err
	}
	p.mu.producers.observeMarker(h)
	p.advanceLocked(h, info, ct)
	return info.LastOffset + 1, nil
}

// appendInternal writes a batch built by a coordinator: no client
// validation and no idempotence checks (its sequence is -1), but transaction
// state, HW and LSO follow it as for any batch.
func (p *Partition) appendInternal(batch []byte) (int64, error) {
	h, err := records.ParseHeader(batch)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return 0, errPartitionClosed
	}
	if !p.mu.repl.leads() {
		return 0, errNotLeader
	}
	info, err := p.Log.AppendParsed(batch, h, p.epoch.Load())
	if err != nil {
		return 0, err
	}
	p.advanceLocked(h, info, 0)
	return info.LastOffset + 1, nil
}

// expireProducersLocked forgets producers idle longer than
// producer.id.expiration.ms, at most once per check interval.
func (p *Partition) expireProducersLocked() {
	now := p.env.now()
	if now.Before(p.mu.nextExpiry) || p.env.producerExpirationMs <= 0 {
		return
	}
	p.mu.nextExpiry = now.Add(time.Duration(p.env.producerExpirationCheckMs) * time.Millisecond)
	p.mu.producers.expire(now.UnixMilli()-p.env.producerExpirationMs, p.mu.txns.ongoing)
}

// advanceLocked moves the HW and LSO past an appended batch and wakes fetches.
func (p *Partition) advanceLocked(h records.Header, info storage.AppendInfo, ct records.ControlType) {
	n := len(p.mu.txns.aborted)
	p.mu.txns.observe(h, info.FirstOffset, info.LastOffset, ct)
	p.indexAbortsLocked(n)
	p.maybeSnapshotLocked(info.Bytes)
	hw := info.LastOffset + 1
	if l := p.mu.repl.leader; l != nil {
		l.Appended(info.LastOffset + 1)
		hw = l.HW()
	}
	p.setHWLocked(hw)
}

// setHWLocked stores the HW (and the LSO it bounds), completes the acks=all
// waits it satisfies and wakes parked fetches. p.mu must be held.
func (p *Partition) setHWLocked(hw int64) {
	p.hw.Store(hw)
	p.lso.Store(p.mu.txns.lastStable(hw))
	p.completeWaitersLocked()
	p.wakeLocked()
}

// wakeLocked wakes parked fetches: data arrived or the HW moved. p.mu must
// be held.
func (p *Partition) wakeLocked() {
	close(p.mu.arrived)
	p.mu.arrived = make(chan struct{})
	p.signalWatchersLocked(false)
}

// wakeStateLocked wakes parked fetches for a change other than data (a
// role change, a truncation): they read again. p.mu must be held.
func (p *Partition) wakeStateLocked() {
	close(p.mu.arrived)
	p.mu.arrived = make(chan struct{})
	p.signalWatchersLocked(true)
}

// Offline returns the error that took the partition's log (or its whole
// log dir) offline, or nil. An offline partition refuses every append
// (storage.ErrLogDirOffline, KAFKA_STORAGE_ERROR to clients) until the broker
// restarts; its HW stays where the last clean append left it. Metadata shows
// it without a leader, as Kafka shows a partition whose only replica is on
// an offline dir.
func (p *Partition) Offline() error {
	if !p.Hosted() {
		return nil
	}
	if err := p.Log.Offline(); err != nil {
		return err
	}
	return p.Dir.Offline()
}

// HighWatermark is the HW: consumers read below it.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// WaitArrival returns a channel closed at the next append (or close).
func (p *Partition) WaitArrival() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.arrived
}

// closeAndSnapshot is close preceded by a producer-state snapshot at the log
// end, so a clean restart replays nothing.
func (p *Partition) closeAndSnapshot() {
	p.mu.Lock()
	if !p.mu.closed {
		if err := p.snapshotAtCloseLocked(); err != nil {
			p.logger.Warn("producer snapshot failed", "topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
		}
	}
	p.mu.Unlock()
	p.close()
}

// close stops appends and wakes parked fetches. The log itself is closed by its Dir.
func (p *Partition) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return
	}
	p.mu.closed = true
	p.role.Store(roleClosed)
	p.failWaitersLocked(errPartitionClosed)
	close(p.mu.arrived)
	p.signalWatchersLocked(true)
}

// AppendResult is what a produce learns from one append.
type AppendResult struct {
	BaseOffset    int64
	LogAppendTime int64
	Err           *kerr.Error
}

// errPartitionAbsent reports a read of a partition this broker holds no
// replica of.
var errPartitionAbsent = errors.New("no replica of the partition on this broker")

// errPartitionClosed reports an append to a deleted or shut-down partition.
var errPartitionClosed = errors.New("partition closed")

// append writes one validated batch, checking idempotent producer state
// first. A duplicate of one of a producer's last five batches is not written
// again; its original base offset is returned.
func (p *Partition) append(batch []byte, h records.Header) (AppendResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return AppendResult{Err: kerr.NotLeaderForPartition}, errPartitionClosed
	}
	if !p.mu.repl.leads() {
		return AppendResult{Err: kerr.NotLeaderForPartition}, nil
	}
	if h.ProducerID >= 0 {
		p.expireProducersLocked()
		if dup, ok, kerrv := p.mu.producers.check(h); kerrv != nil {
			return AppendResult{Err: kerrv}, nil
		} else if ok {
			return AppendResult{BaseOffset: dup}, nil
		}
	}
	info, err := p.Log.AppendParsed(batch, h, p.epoch.Load())
	if err != nil {
		return AppendResult{Err: kerr.KafkaStorageError}, err
	}
	if h.ProducerID >= 0 {
		p.mu.producers.update(h, info.FirstOffset)
	}
	p.advanceLocked(h, info, 0)
	return AppendResult{BaseOffset: info.FirstOffset}, nil
}

// ReplayPartition calls f with every batch of the partition up to its log
// end, as Kafka loads a coordinator (FetchLogEnd isolation), not up to the
// HW: a leader never truncates its own log, and a new leader's HW lags its
// log end until the followers fetch again, while the records above it may
// already be acknowledged (a coordinator that stopped at the HW would forget
// a LeaveGroup it had answered and wait for the departed member).
//
// Except for what this leader appended itself in its epoch: those records
// count once the HW covers them (replayEnd). A coordinator reloads while it
// still leads after one of its writes failed; that write is in the log but
// was never acknowledged, and a later leader may not have it. Replaying it
// would act on it: a transaction coordinator would send the commit markers
// of a PrepareCommit that the next coordinator, without it, aborts.
func ReplayPartition(p *Partition, f func(h records.Header, recs []records.Record)) error {
	if !p.Hosted() {
		return fmt.Errorf("%s-%d: %w", p.Topic.Meta.Name, p.Index, errPartitionAbsent)
	}
	off, end := p.Log.LogStartOffset(), p.replayEnd()
	for off < end {
		data, err := p.Log.Read(off, rebuildChunk, end, true)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		for len(data) > 0 {
			h, recs, err := records.DecodeRecords(data)
			if err != nil {
				return fmt.Errorf("batch at offset %d: %w", off, err)
			}
			f(h, recs)
			off = h.NextOffset()
			data = data[h.TotalSize():]
		}
	}
	return nil
}

// replayEnd is where ReplayPartition stops: the log end, or on a
// replicated leader the HW if this leader appended records of its own
// beyond it (the start of its epoch bounds it below: what it inherited
// counts, as Kafka's new leader loads to its log end).
func (p *Partition) replayEnd() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	leo := p.Log.LogEndOffset()
	if p.mu.repl.kind != replLeader {
		return leo
	}
	epoch, start := p.epoch.Load(), int64(-1)
	for _, e := range p.Log.LeaderEpochs() {
		if e.Epoch == epoch {
			start = e.StartOffset
		}
	}
	if start < 0 {
		return leo
	}
	return min(leo, max(p.hw.Load(), start))
}

// forgetAborted stops listing to read_committed fetches aborted transactions
// whose data compaction removed (the cleaner's EmptiedAborts). It runs after
// the pass that found them empty and so before any later pass can remove
// their markers: a consumer told of an aborted transaction must meet its
// marker, or it would skip the producer's later committed batches.
func (p *Partition) forgetAborted(gone []storage.AbortedTxn) {
	if len(gone) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.txns.forget(gone)
	// A snapshot taken before this would bring the dropped entries back after
	// a crash, when their markers may be gone: replace it now.
	if err := p.snapshotLocked(); err != nil {
		p.logger.Warn("producer snapshot failed", "topic", p.Topic.Meta.Name, "partition", p.Index, "err", err)
	}
}
