// Package broker wires one kbroker node out of its rooms: network (listeners,
// connections, SASL), api (one handler per Kafka API), replica (the
// partitions: logs, high watermarks, producer and transaction state, fetch
// sessions, log tasks) and coordhost (the hosts of the group, transaction and
// share coordinators), over the log dirs (storage) and the metadata store
// (controller). It holds only New, Start, Close and small accessors.
package broker

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/broker/api"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/console"
	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/broker/httpserver"
	"github.com/kbroker/kbroker/broker/metrics"
	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/broker/quota"
	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/restproxy"
	"github.com/kbroker/kbroker/schemaregistry"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/vfs"
)

// Broker is one kbroker node. Start it with Start, stop it with Close.
type Broker struct {
	cfg   config.Config
	log   *slog.Logger
	now   func() time.Time
	store controller.Store

	// closing is closed when shutdown starts: listeners stop, parked fetches return.
	closing chan struct{}

	// rm owns the partitions.
	rm *replica.Manager

	// co hosts the coordinators.
	co *coordhost.Host
	// api answers the requests (network hands them to it).
	api *api.API

	// net owns the listeners and connections.
	net *network.Server
	// http serves /metrics, /healthz, /readyz (observe.go); ready is set
	// once the logs are loaded and the Kafka listeners open.
	http    *httpserver.Server
	metrics *metrics.Metrics
	console *console.Console // nil unless http.console.enable (console.go)
	// restProxy and restHTTP are the REST proxy and its listeners
	// (restproxy.go); nil unless rest.proxy.listeners.
	restProxy *restproxy.Proxy
	restHTTP  *httpserver.Server
	ready     atomic.Bool
	// joined is closed when Start has opened the listeners and, in a
	// cluster, registered the broker (start_gate.go).
	joined    chan struct{}
	closeOnce sync.Once
	// cluster is the cluster-mode state (cluster.go), nil on a single node.
	cluster  *clusterNode
	closeErr error
	// quotas are the client quotas (quotas.go).
	quotas *quota.Manager
	// dyn holds the dynamic broker configs; applied is the configuration
	// in effect, guarded by dynMu (dynamic.go).
	dyn     *config.Dynamic
	dynMu   sync.Mutex
	applied config.Config
	// dynWatch is closed when the cluster-mode watch of /config/changes
	// ends (dynamic_cluster.go); nil on a single node.
	dynWatch chan struct{}
	// registry is the Schema Registry and registryHTTP its listeners
	// (schemaregistry.go); nil when schema.registry.listeners is empty.
	registry     *schemaregistry.Registry
	registryHTTP *httpserver.Server
}

// New opens the broker's metadata and every log under cfg.LogDirs. A log dir
// already locked by another process is an error (storage.ErrLocked).
func New(cfg config.Config) (*Broker, error) { return newBroker(cfg, nil) }

// newBroker is New with the log dirs on fs (nil: the operating system's
// files); tests inject disk faults through it.
func newBroker(cfg config.Config, fs vfs.FS) (*Broker, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, now: cfg.Now, closing: make(chan struct{}), joined: make(chan struct{}), applied: cfg}
	b.rm = replica.NewManager(cfg, b.closing)
	b.co = coordhost.NewHost(cfg, b.rm, b.closing)

	ok := false
	defer func() {
		if !ok {
			b.closeRestProxy()
			if b.http != nil {
				b.http.Close()
			}
			b.closeSchemaRegistry()
			b.closeStorage()
			b.closeZK()
		}
	}()
	// The REST proxy first: the console (in startHTTP) links to it.
	if err := b.startRestProxy(); err != nil { // restproxy.go
		return nil, err
	}
	if err := b.startHTTP(); err != nil {
		return nil, err
	}
	if err := b.startSchemaRegistry(); err != nil { // schemaregistry.go
		return nil, err
	}
	var store controller.Store
	if cfg.Cluster.Enabled() {
		if err := b.openCluster(); err != nil { // cluster.go
			return nil, err
		}
		store = b.cluster.store
	}
	if err := b.rm.OpenDirs(fs); err != nil {
		return nil, err
	}
	if b.cluster == nil {
		// The metadata lives in the first log dir; the others are named so that
		// a lost metadata file next to existing data refuses to start
		// (controller.ErrMetadataMissing) instead of making every log unowned.
		fstore, err := controller.OpenFileStore(cfg.LogDirs[0], cfg.ClusterID, storage.DataInLogDir, cfg.LogDirs[1:]...)
		if err != nil {
			return nil, err
		}
		store = fstore
	}
	b.store = store
	// Every log dir names its node and cluster (Kafka's meta.properties); a
	// dir of another node or cluster is refused before any log is served.
	// In ZooKeeper mode the file is version 0, as Kafka 3.x in ZooKeeper
	// mode writes it and requires it: the dir can go back to Kafka.
	metaVersion := 1
	if b.cluster != nil {
		metaVersion = 0
	}
	for _, d := range b.rm.Dirs() {
		if _, err := storage.EnsureMetaPropertiesVersion(d.Path(), cfg.NodeID, store.ClusterID(), metaVersion, b.log.Info); err != nil {
			return nil, err
		}
	}
	b.loadDynamicConfigs() // dynamic.go
	b.api = api.New(cfg, store, b.rm, b.co, b.closing, b.Addrs)
	b.api.SetBrokerConfigs(b.brokerConfigHooks())
	if b.registry != nil {
		b.api.SetSchemaChecker(b.registry) // produce-side schema validation
	}
	if b.cluster != nil {
		b.api.SetCluster(b.apiCluster())
	}
	if err := b.startQuotas(); err != nil {
		return nil, err
	}
	b.net = network.NewServer(network.Config{
		Listeners:             b.dyn.Current().Listeners, // with dynamic TLS files
		SocketRequestMaxBytes: cfg.SocketRequestMaxBytes,
		Logger:                b.log,
		Handler:               b.handler(),
		NewAuthenticator:      b.api.NewAuthenticator,
		Limits:                &cfg.NetworkLimits,
	})
	b.metrics.SetNetwork(b.net)
	if err := b.api.BootstrapScram(); err != nil {
		return nil, err
	}
	if err := b.rm.Load(store); err != nil {
		return nil, err
	}
	if err := b.co.Load(store); err != nil {
		return nil, err
	}
	if b.cluster != nil {
		b.startReplication() // cluster_replicas.go
	}
	ok = true
	return b, nil
}

// Start binds every listener and serves connections until Close.
// It returns once the listeners accept connections.
func (b *Broker) Start() error {
	if err := b.net.Start(); err != nil {
		b.Close()
		return err
	}
	b.rm.Start()
	if b.cluster != nil {
		if err := b.startCluster(); err != nil { // cluster.go
			b.Close()
			return err
		}
		b.startDynamicWatch() // dynamic_cluster.go
	}
	b.ready.Store(true)
	close(b.joined)
	b.startRegistryReader() // schemaregistry.go
	return nil
}

// Addrs returns the bound listener addresses (useful with port 0).
func (b *Broker) Addrs() []net.Addr { return b.net.Addrs() }

// Failed is closed when a cluster-mode broker can serve no partition
// because every log dir went offline (a failed write or fsync; offline
// dirs come back only with a restart). Kafka halts such a broker
// (LogManager: "all log dirs have failed") so that its ZooKeeper session
// ends and the controller moves its leaderships to the ISR; cmd/kbroker
// exits then. A single node keeps running (nil: never closed): there is
// no other replica to take over, its offline partitions answer
// KAFKA_STORAGE_ERROR and its reads go on.
func (b *Broker) Failed() <-chan struct{} {
	if b.cluster == nil {
		return nil
	}
	return b.rm.DirsFailed()
}

// Close stops accepting, lets in-flight requests finish, then flushes and
// closes every log. It is safe to call more than once.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.ready.Store(false)
		close(b.closing)
		b.stopDynamicWatch() // no dynamic config applied to closing logs
		b.co.CloseShares()   // parked ShareFetches return on closing
		b.closeController()
		b.closeConsole()
		b.closeRestProxy() // its instances leave their groups first
		b.closeSchemaRegistry()
		b.net.Close() // in-flight requests are answered first
		b.rm.Stop()
		b.co.Close()
		b.closeCoordConns()
		b.closeErr = b.closeStorage()
		b.closeZK()
		b.http.Close() // last: /healthz answers while the logs close
		b.log.Info("broker stopped")
	})
	return b.closeErr
}

func (b *Broker) closeStorage() error {
	errs := []error{b.rm.CloseStorage()}
	if b.store != nil {
		errs = append(errs, b.store.Close())
	}
	return errors.Join(errs...)
}
