package zkcontroller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures a controller.
type Config struct {
	BrokerID int32
	ZK       *zkclient.Client
	// Listener is inter.broker.listener.name: requests go to, and
	// LeaderAndIsr names, the brokers' endpoints on it (default PLAINTEXT).
	Listener string
	// IBP is inter.broker.protocol.version (zero: 3.9): the versions of
	// LeaderAndIsr, UpdateMetadata and StopReplica, as Kafka's
	// ControllerChannelManager derives them.
	IBP protocol.IBP
	// Conn is how the controller's connections to brokers authenticate
	// and encrypt (the inter-broker listener's security protocol).
	Conn kconn.Options
	// UncleanLeaderElection is the cluster's unclean.leader.election.enable;
	// a topic's own config overrides it.
	UncleanLeaderElection bool
	// Channel sends the requests; nil means a TCPChannel.
	Channel Channel
	Logger  *slog.Logger
	// RetryBackoff is the wait before running for election again after a
	// ZooKeeper error (default 500ms).
	RetryBackoff time.Duration
	// AutoLeaderRebalance is auto.leader.rebalance.enable; every
	// ImbalanceCheckInterval (leader.imbalance.check.interval.seconds,
	// default 300s) the active controller moves leadership back to
	// preferred replicas past ImbalancePercent
	// (leader.imbalance.per.broker.percentage, default 10).
	AutoLeaderRebalance    bool
	ImbalanceCheckInterval time.Duration
	ImbalancePercent       int
}

// Controller is one broker's controller: standby, or active while it holds
// /controller. Its state is owned by one goroutine, the event loop.
type Controller struct {
	cfg     Config
	log     *slog.Logger
	zk      *zkclient.Client
	channel Channel

	events chan event
	done   chan struct{}
	// respMu guards resps, the LeaderAndIsr answers waiting for the
	// loop; respWake (capacity 1) tells the loop there are some. A
	// Channel's sender never waits for the loop, which may itself be
	// waiting for that sender to stop (Channel.RemoveBroker).
	respMu   sync.Mutex
	resps    []leaderAndISRAnswer
	respWake chan struct{}
	wg       sync.WaitGroup

	// Observable from other goroutines.
	activeID atomic.Int32 // the controller's broker id, -1 unknown
	epoch    atomic.Int32 // the epoch this broker won, 0 when standby
	isActive atomic.Bool

	// Owned by the loop.
	machine  *controller.Machine
	configs  map[string]map[string]string
	armed    map[watchKey]uint64 // watch → generation of its live forwarder
	gen      uint64
	retry    *time.Timer
	rebal    *time.Timer
	rebalGen uint64
	lastElec error
}

type eventKind int8

const (
	evElect eventKind = iota // run for election / check /controller
	evSession
	evController
	evBrokers
	evTopics
	evTopic
	evDelete
	evISR
	evLogDir
	evCall
	evRebalance
)

type watchKey struct {
	kind eventKind
	path string
}

type event struct {
	kind eventKind
	path string
	gen  uint64 // of the watch that fired
	zkEv zk.Event
	call func()
}

// Start starts the controller's loop, which runs for election at once.
func Start(cfg Config) (*Controller, error) {
	if cfg.ZK == nil {
		return nil, errors.New("zkcontroller: no ZooKeeper client")
	}
	if cfg.Listener == "" {
		cfg.Listener = "PLAINTEXT"
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 500 * time.Millisecond
	}
	if cfg.ImbalanceCheckInterval <= 0 {
		cfg.ImbalanceCheckInterval = 300 * time.Second
	}
	if cfg.ImbalancePercent <= 0 {
		cfg.ImbalancePercent = 10
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("controller", cfg.BrokerID)
	c := &Controller{
		cfg: cfg, log: log, zk: cfg.ZK, channel: cfg.Channel,
		events: make(chan event, 64), done: make(chan struct{}), respWake: make(chan struct{}, 1),
		configs: map[string]map[string]string{}, armed: map[watchKey]uint64{},
	}
	if c.channel == nil {
		conn := cfg.Conn
		conn.ClientID = "controller-" + strconv.Itoa(int(cfg.BrokerID))
		logged := logResponses(log)
		c.channel = NewTCPChannel(conn, log, func(broker int32, req kmsg.Request, resp kmsg.Response) {
			logged(broker, req, resp)
			c.OnResponse(broker, req, resp)
		})
	}
	c.activeID.Store(-1)
	if err := c.zk.EnsurePersistentPaths(); err != nil {
		return nil, err
	}
	c.zk.OnNewSession(func() { c.post(event{kind: evSession}) })
	c.wg.Add(1)
	go c.loop()
	c.post(event{kind: evElect})
	return c, nil
}

// closeDrainTimeout bounds how long Close waits for the requests already
// queued to reach their brokers.
const closeDrainTimeout = 5 * time.Second

// Close stops the loop, lets the channel deliver what is queued (up to
// closeDrainTimeout) and stops it. The /controller znode goes with the
// ZooKeeper session, which the caller owns, so the requests still carry
// the active controller's epoch. A controller stopping for its broker's
// shutdown has just moved that broker's leaderships in ZooKeeper (its own
// controlled shutdown); dropping the LeaderAndIsr requests that tell the
// new leaders left those partitions without a serving leader, and the
// ISRs of the others waiting for the stopped broker, until the next
// controller's failover (a 10-s gap in a producer's acknowledgements at
// 30,000 partitions).
func (c *Controller) Close() {
	select {
	case <-c.done:
		return
	default:
	}
	close(c.done)
	c.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), closeDrainTimeout)
	c.channel.Drain(ctx)
	cancel()
	c.channel.Close()
}

// Active reports whether this broker is the controller.
func (c *Controller) Active() bool { return c.isActive.Load() }

// ControllerID is the active controller's broker id as last seen, -1 unknown.
func (c *Controller) ControllerID() int32 { return c.activeID.Load() }

// Epoch is the controller epoch this broker holds, 0 when standby.
func (c *Controller) Epoch() int32 { return c.epoch.Load() }

func (c *Controller) post(ev event) {
	select {
	case c.events <- ev:
	case <-c.done:
	}
}

// watch forwards a one-shot ZooKeeper watch into the loop, at most one per
// key at a time, so re-arming after every event never multiplies watches.
// Each forwarder carries a generation: a late event of a watch from an
// earlier session does not disarm the current one.
func (c *Controller) watch(kind eventKind, path string, ch <-chan zk.Event) {
	c.gen++
	gen := c.gen
	c.armed[watchKey{kind, path}] = gen
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case ev := <-ch:
			c.post(event{kind: kind, path: path, gen: gen, zkEv: ev})
		case <-c.done:
		}
	}()
}

func (c *Controller) isArmed(kind eventKind, path string) bool {
	_, ok := c.armed[watchKey{kind, path}]
	return ok
}

func (c *Controller) loop() {
	defer c.wg.Done()
	defer func() {
		if c.retry != nil {
			c.retry.Stop()
		}
		if c.rebal != nil {
			c.rebal.Stop()
		}
	}()
	for {
		var ev event
		select {
		case <-c.done:
			return
		case ev = <-c.events:
		case <-c.respWake:
			ev = event{kind: evCall, call: c.drainResponses}
		}
		if ev.kind != evCall && ev.kind != evElect && ev.kind != evSession && ev.kind != evRebalance {
			k := watchKey{ev.kind, ev.path}
			if c.armed[k] != ev.gen {
				continue // a watch replaced since (an earlier session's)
			}
			delete(c.armed, k)
			if ev.zkEv.Type == zk.EventNotWatching {
				continue // the session ended; evSession re-arms everything
			}
		}
		var err error
		switch ev.kind {
		case evCall:
			ev.call()
		case evSession:
			c.armed = map[watchKey]uint64{}
			c.resign("new ZooKeeper session")
			err = c.elect()
		case evElect, evController:
			err = c.elect()
		case evRebalance:
			if ev.gen != c.rebalGen || c.rebal == nil {
				continue // a check armed in an earlier term
			}
			c.rebal = nil
			if c.machine != nil {
				var out controller.Output
				if out, err = c.machine.OnAutoRebalance(c.cfg.ImbalancePercent); err == nil {
					err = c.perform(out)
				}
				c.scheduleRebalance()
			}
		default:
			if c.machine != nil {
				err = c.handle(ev)
			}
		}
		if err != nil {
			c.fail(err)
		}
	}
}

// fail resigns after an error of the active controller and runs for
// election again after a backoff (at once when another controller took over).
func (c *Controller) fail(err error) {
	c.log.Warn("controller error", "err", err)
	c.resign(err.Error())
	if errors.Is(err, controller.ErrControllerMoved) {
		if err := c.elect(); err == nil {
			return
		}
	}
	if c.retry != nil {
		c.retry.Stop()
	}
	c.retry = time.AfterFunc(c.cfg.RetryBackoff, func() { c.post(event{kind: evElect}) })
}

func (c *Controller) resign(why string) {
	if c.machine == nil {
		return
	}
	c.log.Info("resigning as controller", "epoch", c.machine.Ctx.Epoch, "why", why)
	for id := range c.machine.Ctx.Live {
		c.channel.RemoveBroker(id)
	}
	c.machine = nil
	c.isActive.Store(false)
	c.epoch.Store(0)
	if c.rebal != nil {
		c.rebal.Stop()
		c.rebal = nil
	}
}

// scheduleRebalance arms the next auto leader rebalance check.
func (c *Controller) scheduleRebalance() {
	if !c.cfg.AutoLeaderRebalance || c.rebal != nil {
		return
	}
	c.rebalGen++
	gen := c.rebalGen
	c.rebal = time.AfterFunc(c.cfg.ImbalanceCheckInterval, func() { c.post(event{kind: evRebalance, gen: gen}) })
}

// elect looks at /controller (keeping a watch on it) and, when there is
// none, tries to create it and bump /controller_epoch in one multi-op.
func (c *Controller) elect() error {
	for attempt := 0; attempt < 5; attempt++ {
		exists, _, ch, err := c.zk.ExistsW(zkdata.ControllerPath)
		if err != nil {
			return fmt.Errorf("watching /controller: %w", err)
		}
		if !c.isArmed(evController, "") {
			c.watch(evController, "", ch)
		}
		if exists {
			data, stat, err := c.zk.Get(zkdata.ControllerPath)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return fmt.Errorf("reading /controller: %w", err)
			}
			reg, err := zkdata.DecodeControllerRegistration(data)
			if err != nil {
				return err
			}
			c.activeID.Store(reg.BrokerID)
			mine := reg.BrokerID == c.cfg.BrokerID && stat.EphemeralOwner == c.zk.SessionID()
			if mine && c.machine == nil {
				// This session holds /controller but gave up its term
				// after an error: hand the role back and run again, as
				// Kafka's triggerControllerMove.
				if err := c.zk.Delete(zkdata.ControllerPath, stat.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
					return fmt.Errorf("giving up /controller: %w", err)
				}
				continue
			}
			if !mine {
				c.resign(fmt.Sprintf("broker %d is controller", reg.BrokerID))
			}
			return nil
		}
		c.resign("no controller")
		c.activeID.Store(-1)
		epoch, version, err := c.readEpoch()
		if err != nil {
			return err
		}
		reg, err := zkdata.ControllerRegistration{BrokerID: c.cfg.BrokerID, Timestamp: time.Now().UnixMilli(), KRaftControllerEpoch: -1}.Encode()
		if err != nil {
			return err
		}
		stat, err := c.zk.CreateAndSet(zkdata.ControllerPath, reg, zk.FlagEphemeral,
			zkdata.ControllerEpochPath, zkdata.EncodeControllerEpoch(epoch+1), version)
		if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) {
			continue // lost the race; look again
		}
		if err != nil {
			return fmt.Errorf("registering as controller: %w", err)
		}
		c.activeID.Store(c.cfg.BrokerID)
		return c.becomeController(epoch+1, stat.Version)
	}
	return errors.New("controller election did not settle after 5 attempts")
}

// readEpoch reads /controller_epoch, creating it at 0 (Kafka's initial
// epoch) when the cluster has never had a controller.
func (c *Controller) readEpoch() (int32, int32, error) {
	data, stat, err := c.zk.Get(zkdata.ControllerEpochPath)
	if errors.Is(err, zk.ErrNoNode) {
		if _, err := c.zk.Create(zkdata.ControllerEpochPath, zkdata.EncodeControllerEpoch(0), 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return 0, 0, fmt.Errorf("creating /controller_epoch: %w", err)
		}
		data, stat, err = c.zk.Get(zkdata.ControllerEpochPath)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("reading /controller_epoch: %w", err)
	}
	epoch, err := zkdata.DecodeControllerEpoch(data)
	return epoch, stat.Version, err
}

// becomeController loads the cluster from ZooKeeper and starts acting on it.
func (c *Controller) becomeController(epoch, epochVersion int32) error {
	c.log.Info("became controller", "epoch", epoch)
	start := time.Now()
	ctx := controller.NewContext(c.cfg.BrokerID, epoch, epochVersion)
	ctx.Listener = c.cfg.Listener
	ctx.IBP = c.cfg.IBP
	ctx.Unclean = c.unclean
	c.machine = controller.NewMachine(ctx, zkStates{c.zk})
	c.isActive.Store(true)
	c.epoch.Store(epoch)
	live, err := c.readBrokers()
	if err != nil {
		return err
	}
	ctx.Live = live
	c.syncChannel(nil)
	names, err := c.topicNames()
	if err != nil {
		return err
	}
	as, errs := c.readTopics(names)
	for i, n := range names {
		if errors.Is(errs[i], zk.ErrNoNode) {
			continue
		}
		if errs[i] != nil {
			return errs[i]
		}
		ctx.AddTopic(n, as[i])
	}
	states, err := zkStates{c.zk}.ReadPartitionStates(ctx.AllPartitions())
	if err != nil {
		return err
	}
	ctx.States = states
	queued, err := c.deletionQueue()
	if err != nil {
		return err
	}
	for _, n := range queued {
		if _, ok := ctx.Topics[n]; ok {
			ctx.Deleting[n] = true
		} else {
			_ = c.zk.Delete(zkdata.DeleteTopicPath(n), -1)
		}
	}
	loaded := time.Since(start)
	out, err := c.machine.Startup()
	if err != nil {
		return err
	}
	if err := c.perform(out); err != nil {
		return err
	}
	c.log.Info("controller failover: requests queued", "epoch", epoch, "partitions", len(ctx.States),
		"load", loaded, "total", time.Since(start))
	c.scheduleRebalance()
	// Like Kafka's onControllerFailover, pending log dir events are
	// dropped: the LeaderAndIsr every broker just got finds the replicas
	// in offline directories.
	if err := c.handleLogDirEvents(false); err != nil {
		return err
	}
	return c.handleISRChanges()
}
