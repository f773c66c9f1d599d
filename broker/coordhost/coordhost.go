// Package coordhost hosts the coordinators on a broker: the group
// coordinators (classic and KIP-848) with committed offsets, the transaction
// coordinator, the share-group coordinator (KIP-932) and the producer id
// allocator. The coordinators themselves (coordinator/...) are pure state
// machines; a host runs one under its lock, arms its timer, writes its
// records to its internal topic through Replicas, and answers clients once
// the records are acknowledged.
package coordhost

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/coordinator/groupconfig"
	"github.com/kbroker/kbroker/protocol/records"
)

// Host is the home of the coordinators on this broker: the group
// coordinators (classic and KIP-848) with every group's committed offsets,
// the transaction coordinator, the share-group coordinator, and the
// producer id allocator. Each coordinator is a pure state machine; the host
// runs it under its lock, writes its records to its internal topic through
// the replicas' append interface and answers clients once the records are
// acknowledged.
type Host struct {
	cfg     config.Config
	log     *slog.Logger
	now     func() time.Time
	store   controller.Store
	rm      Replicas
	closing <-chan struct{}
	// cluster is set by SetCluster in cluster mode (nil on a single node).
	cluster Cluster

	pids   producerIDs
	groups groups
	txns   txns
	shares ShareHost
	// shareStore is the share coordinator's state store of the
	// __share_group_state partitions this broker leads (cluster mode,
	// share_store.go).
	shareStore shareStore
	// groupCfgs are the group configs of every group (group_configs.go).
	groupCfgs *groupconfig.Store

	// timerPanics counts panics recovered in coordinator timers (recoverTimer).
	timerPanics atomic.Int64
}

// Replicas is what the hosts need from the partitions (replica.Manager): the
// internal topics, created on first use; topic snapshots for assignment and
// validation; and appends whose acknowledgement is a callback, because in a
// cluster an internal-topic write is done only once it is replicated. On a
// single node done runs before the append call returns, under the caller's
// lock; code that must work both ways answers clients from done.
type Replicas interface {
	InternalTopic(name string, partitions int32, configs map[string]string) (*replica.Topic, error)
	TopicByName(name string) *replica.Topic
	TopicByID(id [16]byte) *replica.Topic
	PartitionOf(topic string, partition int32) *replica.Partition
	Topics() []*replica.Topic
	// AppendInternal appends a batch built by a coordinator to p.
	AppendInternal(p *replica.Partition, batch []byte, done func(error))
	// AppendMarker writes a transaction marker (control batch) to p.
	AppendMarker(p *replica.Partition, producerID int64, epoch int16, ct records.ControlType, coordinatorEpoch int32, nowMs int64, done func(error))
}

// NewHost returns a host whose coordinators are not loaded yet; closing is
// closed when the broker shuts down (parked requests then return).
func NewHost(cfg config.Config, rm Replicas, closing <-chan struct{}) *Host {
	h := &Host{cfg: cfg, log: cfg.Logger, now: cfg.Now, rm: rm, closing: closing, groupCfgs: groupconfig.NewStore(groupConfigBroker(cfg))}
	h.pids.b = h
	h.groups.b = h
	h.txns.b = h
	h.initShares()
	h.shareStore.init(h)
	return h
}

// Load replays __consumer_offsets and __transaction_state if they exist.
// store is where producer id blocks are reserved.
func (h *Host) Load(store controller.Store) error {
	h.store = store
	h.attachGroupConfigs(store)
	if err := h.loadGroups(); err != nil {
		return err
	}
	return h.loadTxns()
}

// CloseShares stops the share coordinator; parked ShareFetches return on
// the closing channel.
func (h *Host) CloseShares() { h.shares.close() }

// Close stops the transaction and group coordinators' timers, refuses
// further calls, and waits for the share coordinator's partition loads and
// a producer id block's prefetch.
func (h *Host) Close() {
	h.txns.close()
	h.groups.close()
	h.shareStore.close()
	h.pids.close()
}

// EnsureGroups loads the group coordinators, creating __consumer_offsets
// first if needed (FindCoordinator does so, as Kafka does).
func (h *Host) EnsureGroups() error {
	_, err := h.groups.ensure()
	return err
}

// EnsureTxns loads the transaction coordinator, creating
// __transaction_state first if needed.
func (h *Host) EnsureTxns() error { return h.txns.ensure() }

// NextProducerID allocates a producer id for an idempotent producer.
func (h *Host) NextProducerID() (int64, error) { return h.pids.allocate() }
