package broker

import (
	"log/slog"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
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
	rm      *replica.Manager
	closing <-chan struct{}

	pids      producerIDs
	groups    groups
	txns      txns
	shareHost shareHost
}

// NewHost returns a host whose coordinators are not loaded yet; closing is
// closed when the broker shuts down (parked requests then return).
func NewHost(cfg config.Config, rm *replica.Manager, closing <-chan struct{}) *Host {
	h := &Host{cfg: cfg, log: cfg.Logger, now: cfg.Now, rm: rm, closing: closing}
	h.pids.b = h
	h.groups.b = h
	h.txns.b = h
	h.initShares()
	return h
}

// Load replays __consumer_offsets and __transaction_state if they exist.
// store is where producer id blocks are reserved.
func (h *Host) Load(store controller.Store) error {
	h.store = store
	if err := h.loadGroups(); err != nil {
		return err
	}
	return h.loadTxns()
}

// CloseShares stops the share coordinator; parked ShareFetches return on
// the closing channel.
func (h *Host) CloseShares() { h.shareHost.close() }

// Close stops the transaction and group coordinators' timers and refuses
// further calls.
func (h *Host) Close() {
	h.txns.close()
	h.groups.close()
}
