package broker

// Cluster mode (zookeeper.connect set), in the order
// controller/zkcontroller's package doc gives: zkclient.Dial, zkstore.Open
// as the metadata store (New writes its cluster id into every log dir's
// meta.properties), the logs, the listeners, the broker registration with
// every advertised endpoint, then the controller. Close runs it backwards:
// the controller, the listeners and logs, and last the ZooKeeper session,
// so the registration disappears only once the broker has stopped serving.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/broker/api"
	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/broker/metacache"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkcontroller"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/controller/zkstore"
	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterNode is a broker's cluster-mode state.
type clusterNode struct {
	zk    *zkclient.Client
	store *zkstore.Store
	cache *metacache.Cache
	fence controller.Fence
	// conn is how this broker dials others on the inter-broker listener.
	conn kconn.Options
	// coordConns, markerConns and shareConns are the coordinators' connections to
	// other brokers (cluster_coordinators.go), made before the listeners
	// serve and closed by Close after the coordinators.
	coordConns, markerConns, shareConns *kconn.Pool
	// reg and ctrl are set by Start (after the listeners bind) and read by
	// request handlers, hence atomic.
	reg  atomic.Pointer[zkclient.Registration]
	ctrl atomic.Pointer[zkcontroller.Controller]
	// quotaWatch is closed when the quota watcher (quotas_cluster.go)
	// has returned; nil until it starts.
	quotaWatch chan struct{}
	// aclStop and aclDone stop and await the ACL watch (cluster_acls.go).
	aclStop, aclDone chan struct{}
	// dirStop and dirDone stop and await the log dir watch (cluster_logdirs.go).
	dirStop, dirDone chan struct{}
}

// ZKClientConfig maps the broker config onto the ZooKeeper client's.
func ZKClientConfig(cfg config.Config) zkclient.Config {
	return zkclient.Config{
		Connect:           cfg.Cluster.ZookeeperConnect,
		SessionTimeout:    cfg.Cluster.ZookeeperSessionTimeout,
		ConnectionTimeout: cfg.Cluster.ZookeeperConnectionTimeout,
		Logger:            cfg.Logger,
	}
}

// ControllerConfig maps the broker config onto the controller's.
func ControllerConfig(cfg config.Config, zk *zkclient.Client) zkcontroller.Config {
	return zkcontroller.Config{
		BrokerID:               cfg.NodeID,
		ZK:                     zk,
		Listener:               cfg.InterBrokerListener().Name,
		IBP:                    cfg.Cluster.IBP,
		UncleanLeaderElection:  cfg.Cluster.UncleanLeaderElection,
		Logger:                 cfg.Logger,
		AutoLeaderRebalance:    cfg.Cluster.AutoLeaderRebalance,
		ImbalanceCheckInterval: cfg.Cluster.LeaderImbalanceCheckInterval,
		ImbalancePercent:       int(cfg.Cluster.LeaderImbalancePercent),
	}
}

// openCluster dials ZooKeeper and opens the store: the first steps of New
// in cluster mode.
func (b *Broker) openCluster() error {
	zk, err := zkclient.Dial(ZKClientConfig(b.cfg))
	if err != nil {
		return err
	}
	store, err := zkstore.Open(zk, b.cfg.NodeID, b.cfg.ClusterID)
	if err != nil {
		zk.Close()
		return err
	}
	conn, err := interBrokerConn(b.cfg.InterBroker)
	if err != nil {
		zk.Close()
		return err
	}
	b.cluster = &clusterNode{zk: zk, store: store, cache: metacache.New(), conn: conn}
	return nil
}

// apiCluster is what the handlers get of the cluster node.
func (b *Broker) apiCluster() *api.Cluster {
	c := b.cluster
	return &api.Cluster{
		BrokerID:    b.cfg.NodeID,
		Listener:    b.cfg.InterBrokerListener().Name,
		Fence:       &c.fence,
		BrokerEpoch: c.brokerEpoch,
		Cache:       c.cache,
		Controller:  (*controllerRef)(c),
		Replicas:    replicaAdapter{b.rm},
	}
}

// brokerEpoch is the registration's epoch, -1 before the broker registered.
func (c *clusterNode) brokerEpoch() int64 {
	if r := c.reg.Load(); r != nil {
		return r.Epoch()
	}
	return -1
}

// controllerRef is the controller as the handlers see it: standby (no
// controller known) until Start has started it.
type controllerRef clusterNode

func (r *controllerRef) get() *zkcontroller.Controller { return r.ctrl.Load() }

func (r *controllerRef) Active() bool {
	c := r.get()
	return c != nil && c.Active()
}

func (r *controllerRef) ControllerID() int32 {
	if c := r.get(); c != nil {
		return c.ControllerID()
	}
	return -1
}

func (r *controllerRef) ControlledShutdown(ctx context.Context, id int32, epoch int64) ([]controller.TopicPartition, error) {
	c := r.get()
	if c == nil {
		return nil, zkcontroller.ErrNotController
	}
	return c.ControlledShutdown(ctx, id, epoch)
}

func (r *controllerRef) ElectLeaders(ctx context.Context, tps []controller.TopicPartition, s controller.ElectionStrategy) (map[controller.TopicPartition]error, error) {
	c := r.get()
	if c == nil {
		return nil, zkcontroller.ErrNotController
	}
	return c.ElectLeaders(ctx, tps, s)
}

func (r *controllerRef) AlterPartition(ctx context.Context, leader int32, brokerEpoch int64, tp controller.TopicPartition, leaderEpoch, partitionEpoch int32, isr []int32) (zkdata.PartitionState, error) {
	c := r.get()
	if c == nil {
		return zkdata.PartitionState{}, zkcontroller.ErrNotController
	}
	return c.AlterPartition(ctx, leader, brokerEpoch, tp, leaderEpoch, partitionEpoch, isr)
}

func (r *controllerRef) AllocateProducerIDs(ctx context.Context, id int32, brokerEpoch int64) (zkdata.ProducerIDBlock, error) {
	c := r.get()
	if c == nil {
		return zkdata.ProducerIDBlock{}, zkcontroller.ErrNotController
	}
	return c.AllocateProducerIDs(ctx, id, brokerEpoch)
}

func (r *controllerRef) Reassign(ctx context.Context, targets map[controller.TopicPartition][]int32) (map[controller.TopicPartition]error, error) {
	c := r.get()
	if c == nil {
		return nil, zkcontroller.ErrNotController
	}
	return c.Reassign(ctx, targets)
}

func (r *controllerRef) Reassignments(ctx context.Context) (map[controller.TopicPartition]controller.Assignment, error) {
	c := r.get()
	if c == nil {
		return nil, zkcontroller.ErrNotController
	}
	return c.Reassignments(ctx)
}

// registration is this broker's /brokers/ids/<id>: every advertised
// listener, with the bound port for listeners configured with port 0.
func (b *Broker) registration() zkdata.BrokerRegistration {
	reg := zkdata.BrokerRegistration{ID: b.cfg.NodeID, Version: zkdata.BrokerRegistrationVersion, JMXPort: -1, Rack: b.cfg.Cluster.Rack}
	addrs := b.Addrs()
	for _, l := range b.cfg.AdvertisedListeners {
		host, port := l.Host, l.Port
		if host == "" || host == "0.0.0.0" || host == "::" {
			if h, err := os.Hostname(); err == nil {
				host = h
			} else {
				host = "localhost"
			}
		}
		if port == 0 {
			for i, bl := range b.cfg.Listeners {
				if bl.Name == l.Name && i < len(addrs) {
					if ta, ok := addrs[i].(*net.TCPAddr); ok {
						port = int32(ta.Port)
					}
				}
			}
		}
		proto := l.SecurityProtocol
		if proto == "" {
			proto = "PLAINTEXT"
		}
		reg.Endpoints = append(reg.Endpoints, zkdata.Endpoint{Listener: l.Name, Host: host, Port: port, SecurityProtocol: proto})
	}
	return reg
}

// startCluster registers the broker and starts its controller, once the
// listeners accept connections.
func (b *Broker) startCluster() error {
	c := b.cluster
	reg, err := c.zk.RegisterBroker(b.registration())
	if err != nil {
		return err
	}
	c.reg.Store(reg)
	b.startACLWatch()    // cluster_acls.go
	b.startLogDirWatch() // cluster_logdirs.go
	ccfg := ControllerConfig(b.cfg, c.zk)
	ccfg.Conn = c.conn
	ctrl, err := zkcontroller.Start(ccfg)
	if err != nil {
		return err
	}
	c.ctrl.Store(ctrl)
	b.watchQuotaChanges()
	b.log.Info("joined cluster", "broker", b.cfg.NodeID, "cluster.id", c.store.ClusterID(), "broker.epoch", reg.Epoch())
	return nil
}

// closeController stops the controller (first step of Close).
func (b *Broker) closeController() {
	if b.cluster == nil {
		return
	}
	b.stopACLWatch()
	b.stopLogDirWatch()
	if ctrl := b.cluster.ctrl.Load(); ctrl != nil {
		ctrl.Close()
	}
}

// closeZK ends the ZooKeeper session (last step of Close): the
// registration and, on the controller, /controller go with it.
func (b *Broker) closeZK() {
	if b.cluster != nil {
		b.cluster.zk.Close()
		if w := b.cluster.quotaWatch; w != nil {
			<-w // returns once b.closing is closed
		}
	}
}

// ControllerID is the active controller's broker id as this broker last
// saw it (-1 unknown or on a single node).
func (b *Broker) ControllerID() int32 {
	if b.cluster == nil {
		return -1
	}
	return (*controllerRef)(b.cluster).ControllerID()
}

// ErrControlledShutdown reports a controlled shutdown that did not finish
// within controlled.shutdown.max.retries.
var ErrControlledShutdown = errors.New("controlled shutdown did not complete")

// ControlledShutdown asks the active controller to move every leadership
// off this broker (Kafka's KafkaServer.controlledShutdown): it sends
// ControlledShutdown until the controller answers with no partition left,
// at most 1 + controlled.shutdown.max.retries times,
// controlled.shutdown.retry.backoff.ms apart, or until no partition left
// here has another live in-sync replica to take it over (the last brokers
// of a cluster being stopped). A partition it leaves meanwhile is not
// copied any more (replica.Manager.BeginControlledShutdown), and once it is
// done the broker copies no partition at all (StopFollowing), so that no
// leader takes it back into an ISR before it exits. A single node, or
// controlled.shutdown.enable=false, returns nil at once.
func (b *Broker) ControlledShutdown(ctx context.Context) error {
	if b.cluster == nil || !b.cfg.Cluster.ControlledShutdown {
		return nil
	}
	reg := b.cluster.reg.Load()
	if reg == nil {
		return nil
	}
	// From here on the partitions this broker leaves (moved leaderships,
	// ISRs it is taken out of) are not copied: their leaders would take
	// it back into the ISR before it exits.
	b.rm.BeginControlledShutdown()
	var last error
	for attempt := int32(0); attempt <= b.cfg.Cluster.ControlledShutdownMaxRetries; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(b.cfg.Cluster.ControlledShutdownRetryBackoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		remaining, err := b.controlledShutdownOnce(reg.Epoch())
		switch {
		case err != nil:
			last = err
		case remaining > 0 && !b.leadershipMovable():
			// The last brokers of a cluster being stopped: no retry can
			// move these leaderships, so stop now instead of after every
			// retry's backoff (Kafka would wait them out).
			b.log.Info("controlled shutdown: no other live in-sync replica can lead the remaining partitions; stopping", "partitions", remaining, "attempts", attempt+1)
			b.rm.StopFollowing()
			return nil
		case remaining > 0:
			last = fmt.Errorf("%d partitions still led here", remaining)
		default:
			b.log.Info("controlled shutdown complete", "attempts", attempt+1)
			b.rm.StopFollowing()
			return nil
		}
		b.log.Warn("controlled shutdown attempt failed", "attempt", attempt+1, "err", last)
	}
	return fmt.Errorf("%w: %v", ErrControlledShutdown, last)
}

// leadershipMovable reports whether some replicated partition this broker
// leads has another in-sync replica that the metadata cache lists as live:
// one the controller could move the leadership to.
func (b *Broker) leadershipMovable() bool {
	live := b.cluster.cache.Snapshot().Brokers
	for _, p := range b.rm.AllPartitions() {
		if !p.IsLeader() {
			continue
		}
		for _, id := range p.ISR() {
			if _, ok := live[id]; ok && id != b.cfg.NodeID {
				return true
			}
		}
	}
	return false
}

// controlledShutdownOnce sends one ControlledShutdown to the controller as
// ZooKeeper names it now, on its inter-broker listener.
func (b *Broker) controlledShutdownOnce(epoch int64) (remaining int, err error) {
	c := b.cluster
	data, _, err := c.zk.Get(zkdata.ControllerPath)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", zkdata.ControllerPath, err)
	}
	creg, err := zkdata.DecodeControllerRegistration(data)
	if err != nil {
		return 0, err
	}
	data, _, err = c.zk.Get(zkdata.BrokerPath(creg.BrokerID))
	if err != nil {
		return 0, fmt.Errorf("reading controller %d registration: %w", creg.BrokerID, err)
	}
	breg, err := zkdata.DecodeBrokerRegistration(creg.BrokerID, data)
	if err != nil {
		return 0, err
	}
	ep, ok := breg.Endpoint(b.cfg.InterBrokerListener().Name)
	if !ok {
		return 0, fmt.Errorf("controller %d: %w", creg.BrokerID, zkcontroller.ErrNoEndpoint)
	}
	timeout := b.cfg.Cluster.ReplicaSocketTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	opts := c.conn
	opts.ClientID = "broker-" + strconv.Itoa(int(b.cfg.NodeID))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := kconn.Dial(ctx, net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), opts)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	req := kmsg.NewPtrControlledShutdownRequest()
	req.Version = 3
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, epoch
	resp, err := conn.RoundTrip(req, timeout)
	if err != nil {
		return 0, err
	}
	r := resp.(*kmsg.ControlledShutdownResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, fmt.Errorf("controller %d: %w", creg.BrokerID, err)
	}
	return len(r.PartitionsRemaining), nil
}
