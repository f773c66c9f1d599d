package zkclient

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller/zkdata"
)

// EnsurePersistentPaths creates the top-level znodes every Kafka broker
// makes sure of at start-up (zkdata.PersistentPaths).
func (c *Client) EnsurePersistentPaths() error {
	for _, p := range zkdata.PersistentPaths {
		if err := c.EnsurePath(p); err != nil {
			return err
		}
	}
	return nil
}

// errOtherSession marks a registration refused because another session
// holds the broker's znode.
var errOtherSession = errors.New("registered by another session")

// Registration is a broker's ephemeral /brokers/ids/<id>, kept across
// session expiries: every new session registers it again, with a new
// broker epoch.
type Registration struct {
	c   *Client
	reg zkdata.BrokerRegistration
	now func() time.Time

	mu struct {
		sync.Mutex
		epoch   int64
		lastErr error
		count   int
	}
}

// RegisterBroker writes reg (timestamped now) to /brokers/ids/<id> as an
// ephemeral znode and re-registers after every session expiry. When the id
// is registered by another session it waits up to twice
// zookeeper.session.timeout.ms for that znode to go: a broker restarted
// right after a crash finds its previous session's registration, which
// ZooKeeper removes when the session expires (Kafka fails at once here).
// It fails if the znode outlives the wait: another live broker has the
// same broker.id.
func (c *Client) RegisterBroker(reg zkdata.BrokerRegistration) (*Registration, error) {
	r := &Registration{c: c, reg: reg, now: time.Now}
	if err := c.EnsurePersistentPaths(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(2 * c.sessionTimeout)
	for logged := false; ; {
		err := r.register()
		if err == nil {
			break
		}
		if !errors.Is(err, errOtherSession) || time.Now().After(deadline) {
			return nil, err
		}
		if !logged {
			c.log.Warn("broker id still registered by a previous session; waiting for it to expire",
				"broker", reg.ID, "err", err, "wait_max", (2 * c.sessionTimeout).String())
			logged = true
		}
		select {
		case <-c.done:
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
	c.OnNewSession(r.reregister)
	return r, nil
}

// reregisterEvery is how often a failed re-registration is tried again.
const reregisterEvery = 200 * time.Millisecond

// reregister registers the broker again in the session just established
// (an OnNewSession hook). If that fails it tries again every
// reregisterEvery, on a goroutine the client owns, until it succeeds, the
// client closes or a newer session starts (whose own hook takes over):
// a broker that stays unregistered is offline for the controller for
// good. The usual failure is the previous session's znode, still there
// when the new session starts: ZooKeeper deletes it when that session's
// expiry is applied, which can come later than the client learning of
// it, e.g. when the ensemble regains its quorum (seen in the fault tests:
// the broker never registered again).
func (r *Registration) reregister() {
	sid := r.c.SessionID()
	err := r.register()
	if err == nil {
		return
	}
	r.c.log.Warn("re-registering broker after session expiry failed; retrying", "broker", r.reg.ID, "err", err)
	r.c.wg.Add(1)
	go func() {
		defer r.c.wg.Done()
		t := time.NewTicker(reregisterEvery)
		defer t.Stop()
		for {
			select {
			case <-r.c.done:
				return
			case <-t.C:
			}
			if r.c.SessionID() != sid {
				return // a newer session registers in its own hook
			}
			if r.register() == nil {
				return
			}
		}
	}()
}

// register creates the znode, accepting one this same session already
// created (a retry after a lost response), and records the broker epoch:
// the znode's creation zxid.
func (r *Registration) register() error {
	reg := r.reg
	reg.Timestamp = r.now().UnixMilli()
	data, err := reg.Encode()
	if err != nil {
		return err
	}
	path := zkdata.BrokerPath(reg.ID)
	var epoch int64
	for attempt := 0; ; attempt++ {
		_, err = r.c.Create(path, data, zk.FlagEphemeral)
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			_, stat, gerr := r.c.Get(path)
			switch {
			case errors.Is(gerr, zk.ErrNoNode) && attempt < 3:
				continue // the old session's znode just went
			case gerr != nil:
				err = gerr
			case stat.EphemeralOwner != r.c.SessionID():
				err = fmt.Errorf("broker id %d is %w (0x%x): %w", reg.ID, errOtherSession, stat.EphemeralOwner, zk.ErrNodeExists)
			default:
				err, epoch = nil, stat.Czxid
			}
		}
		break
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.lastErr = err
	if err != nil {
		return fmt.Errorf("registering broker %d: %w", reg.ID, err)
	}
	r.mu.epoch = epoch
	r.mu.count++
	r.c.log.Info("registered broker", "broker", reg.ID, "epoch", epoch)
	return nil
}

// Epoch is the broker epoch of the current registration (the czxid of the
// znode), which controller requests to this broker must carry.
func (r *Registration) Epoch() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.epoch
}

// Count is how many times the broker has registered (1 + re-registrations).
func (r *Registration) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.count
}

// Err is the error of the last registration attempt, nil when registered.
func (r *Registration) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.lastErr
}

// GenerateBrokerID is Kafka's broker.id.generation: a write to
// /brokers/seqid whose new data version, plus reserved.broker.max.id, is
// the id.
func (c *Client) GenerateBrokerID(reservedMax int32) (int32, error) {
	stat, err := c.Set(zkdata.BrokerSeqIDPath, nil, -1)
	if errors.Is(err, zk.ErrNoNode) {
		if err = c.EnsurePath(zkdata.BrokerSeqIDPath); err == nil {
			stat, err = c.Set(zkdata.BrokerSeqIDPath, nil, -1)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("generating broker id: %w", err)
	}
	return stat.Version + reservedMax, nil
}
