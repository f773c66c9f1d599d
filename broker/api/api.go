// Package api answers the Kafka APIs, as Kafka's KafkaApis: API.Handle
// dispatches a decoded request by key (dispatch.go) to one handler per API,
// one file each, named after the API. A handler is a method of (request
// context, kmsg request) → response; it works through the partitions
// (replica.Manager), the coordinator hosts (coordhost.Host), the metadata
// store and the configuration, never through the broker that wires them.
package api

import (
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
)

// API answers every Kafka API, as Kafka's KafkaApis: Handle dispatches a
// decoded request by key to one handler per API (one file each), which
// works through the partitions (replica.Manager), the coordinator hosts
// (coordhost.Host), the metadata store and the configuration.
type API struct {
	cfg   config.Config
	log   *slog.Logger
	now   func() time.Time
	store controller.Store
	rm    *replica.Manager
	co    *coordhost.Host
	// closing is closed when the broker shuts down: requests waiting on a
	// coordinator close their connection unanswered.
	closing <-chan struct{}
	// addrs returns the bound listener addresses, advertised for listeners
	// configured with port 0.
	addrs func() []net.Addr
	// scramMu serialises AlterUserScramCredentials (validate, then store).
	scramMu sync.Mutex
}

// New returns the handlers of a broker; addrs returns its bound listener
// addresses.
func New(cfg config.Config, store controller.Store, rm *replica.Manager, co *coordhost.Host, closing <-chan struct{}, addrs func() []net.Addr) *API {
	return &API{cfg: cfg, log: cfg.Logger, now: cfg.Now, store: store, rm: rm, co: co, closing: closing, addrs: addrs}
}
