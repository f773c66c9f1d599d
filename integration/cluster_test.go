package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/kbroker/kbroker/controller"
	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkcontroller"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionTimeout is short, so expiry tests are quick, but long enough that a
// loaded 2-core machine running the race detector does not expire sessions
// nobody cut.
const sessionTimeout = 3 * time.Second

func dial(t *testing.T, connect string) *zkclient.Client {
	t.Helper()
	c, err := zkclient.Dial(zkclient.Config{Connect: connect, SessionTimeout: sessionTimeout, ConnectionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func registration(id int32) zkdata.BrokerRegistration {
	return zkdata.BrokerRegistration{ID: id, JMXPort: -1, Endpoints: []zkdata.Endpoint{
		{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 19090 + id, SecurityProtocol: "PLAINTEXT"}}}
}

// rawJSON reads a znode as a generic JSON object.
func rawJSON(t *testing.T, c *zkclient.Client, path string) map[string]any {
	t.Helper()
	data, _, err := c.Get(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s holds %q: %v", path, data, err)
	}
	return m
}

// recorder is a Channel that keeps what the controller sends.
type recorder struct {
	mu    sync.Mutex
	sends []controller.Send
	addrs map[int32]string
}

func newRecorder() *recorder { return &recorder{addrs: map[int32]string{}} }

func (r *recorder) AddBroker(id int32, addr string) { r.mu.Lock(); r.addrs[id] = addr; r.mu.Unlock() }
func (r *recorder) RemoveBroker(id int32)           { r.mu.Lock(); delete(r.addrs, id); r.mu.Unlock() }
func (r *recorder) Close()                          {}
func (r *recorder) Drain(context.Context)           {}
func (r *recorder) Send(id int32, req kmsg.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.addrs[id]; ok {
		r.sends = append(r.sends, controller.Send{Broker: id, Req: req})
	}
}

// SendAfter records req as sent: the recorder delivers nothing, so there
// is no order to keep.
func (r *recorder) SendAfter(id int32, req kmsg.Request, _ []int32) { r.Send(id, req) }

// leaderAndISR finds a LeaderAndIsr sent to broker for tp with the given
// leader and controller epoch.
func (r *recorder) leaderAndISR(broker int32, tp controller.TopicPartition, leader, controllerEpoch int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sends {
		req, ok := s.Req.(*kmsg.LeaderAndISRRequest)
		if !ok || s.Broker != broker || req.ControllerEpoch != controllerEpoch {
			continue
		}
		for _, ts := range req.TopicStates {
			for _, p := range ts.PartitionStates {
				if ts.Topic == tp.Topic && p.Partition == tp.Partition && p.Leader == leader {
					return true
				}
			}
		}
	}
	return false
}

func TestRegistrationSurvivesSessionExpiry(t *testing.T) {
	z := StartZooKeeper(t)
	if out, err := z.FourLetter("ruok"); err != nil || out != "imok" {
		t.Fatalf("ruok: %q %v", out, err)
	}
	proxy := StartProxy(t, z.Addr)
	c := dial(t, proxy.Addr+"/kbroker")
	observer := dial(t, z.Addr)
	reg, err := c.RegisterBroker(registration(1))
	if err != nil {
		t.Fatal(err)
	}
	// The chroot was created and the registration is under it, in Kafka's JSON.
	m := rawJSON(t, observer, "/kbroker/brokers/ids/1")
	if m["version"] != 5.0 || m["host"] != "127.0.0.1" || m["port"] != 19091.0 ||
		!reflect.DeepEqual(m["endpoints"], []any{"PLAINTEXT://127.0.0.1:19091"}) {
		t.Fatalf("registration JSON %v", m)
	}
	_, stat, _ := observer.Get("/kbroker/brokers/ids/1")
	if stat.EphemeralOwner != c.SessionID() || reg.Epoch() != stat.Czxid {
		t.Fatalf("owner 0x%x epoch %d, session 0x%x czxid %d", stat.EphemeralOwner, reg.Epoch(), c.SessionID(), stat.Czxid)
	}
	// A second broker with the same id is refused.
	other := dial(t, z.Addr+"/kbroker")
	if _, err := other.RegisterBroker(registration(1)); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("duplicate broker id: %v", err)
	}
	first := reg.Epoch()

	expireRegistration(t, proxy, observer)
	proxy.Restore()
	waitFor(t, 20*time.Second, "re-registration in a new session", func() (bool, error) {
		_, stat, err := observer.Get("/kbroker/brokers/ids/1")
		return err == nil && reg.Count() == 2 && stat.EphemeralOwner == c.SessionID() && reg.Epoch() == stat.Czxid, err
	})
	if reg.Epoch() <= first || c.Sessions() != 2 {
		t.Fatalf("epoch %d after %d, %d sessions", reg.Epoch(), first, c.Sessions())
	}
}

// expireRegistration cuts the registered broker's connection to ZooKeeper
// until its session expired and its /kbroker/brokers/ids/1 znode went, as
// observer sees it.
func expireRegistration(t *testing.T, proxy *Proxy, observer *zkclient.Client) {
	t.Helper()
	proxy.Cut()
	waitFor(t, 20*time.Second, "the session to expire and the registration to go", func() (bool, error) {
		ok, _, err := observer.Exists("/kbroker/brokers/ids/1")
		return !ok, err
	})
}

// TestReregistrationWaitsForPreviousSession: when a broker's new session
// starts while its id's znode is still held by another session (the
// previous one's, which ZooKeeper deletes when it applies that session's
// expiry, possibly after the client learnt of the expiry: seen after the
// ensemble regained its quorum in TestFaultsTransactions), the broker
// registers once that znode goes, instead of staying unregistered (offline
// for the controller) for good. The late znode is played by a second
// client holding the id while the broker's session expires.
func TestReregistrationWaitsForPreviousSession(t *testing.T) {
	z := StartZooKeeper(t)
	proxy := StartProxy(t, z.Addr)
	c := dial(t, proxy.Addr+"/kbroker")
	observer := dial(t, z.Addr)
	reg, err := c.RegisterBroker(registration(1))
	if err != nil {
		t.Fatal(err)
	}
	expireRegistration(t, proxy, observer)
	holder := dial(t, z.Addr+"/kbroker")
	if _, err := holder.RegisterBroker(registration(1)); err != nil {
		t.Fatal(err)
	}
	proxy.Restore()
	waitFor(t, 20*time.Second, "a new session whose registration is refused", func() (bool, error) {
		return c.Sessions() == 2 && errors.Is(reg.Err(), zk.ErrNodeExists), fmt.Errorf("%d sessions, last registration error %v", c.Sessions(), reg.Err())
	})
	holder.Close() // the znode goes with its session
	waitFor(t, 20*time.Second, "re-registration once the znode went", func() (bool, error) {
		_, stat, err := observer.Get("/kbroker/brokers/ids/1")
		return err == nil && stat.EphemeralOwner == c.SessionID() && reg.Epoch() == stat.Czxid, err
	})
}

// node is one simulated broker: its own ZooKeeper session (through a
// proxy the test can cut), registration and controller.
type node struct {
	id    int32
	proxy *Proxy
	zk    *zkclient.Client
	reg   *zkclient.Registration
	ctl   *zkcontroller.Controller
	ch    *recorder
}

func startNode(t *testing.T, z *ZooKeeper, id int32, opts ...func(*zkcontroller.Config)) *node {
	t.Helper()
	n := &node{id: id, proxy: StartProxy(t, z.Addr), ch: newRecorder()}
	n.zk = dial(t, n.proxy.Addr+"/cluster1")
	var err error
	if n.reg, err = n.zk.RegisterBroker(registration(id)); err != nil {
		t.Fatal(err)
	}
	cfg := zkcontroller.Config{BrokerID: id, ZK: n.zk, Channel: n.ch, RetryBackoff: 50 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	n.ctl, err = zkcontroller.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.ctl.Close)
	return n
}

func activeOf(nodes ...*node) []*node {
	var out []*node
	for _, n := range nodes {
		if n.ctl.Active() {
			out = append(out, n)
		}
	}
	return out
}

func TestControllerElectionAndFailover(t *testing.T) {
	z := StartZooKeeper(t)
	observer := dial(t, z.Addr+"/cluster1")
	a, b := startNode(t, z, 1), startNode(t, z, 2)
	waitFor(t, 20*time.Second, "one active controller", func() (bool, error) {
		act := activeOf(a, b)
		return len(act) == 1 && a.ctl.ControllerID() == act[0].id && b.ctl.ControllerID() == act[0].id, nil
	})
	first := activeOf(a, b)[0]
	standby := map[*node]*node{a: b, b: a}[first]
	ctl := rawJSON(t, observer, zkdata.ControllerPath)
	if ctl["brokerid"] != float64(first.id) || ctl["version"] != 2.0 || ctl["kraftControllerEpoch"] != -1.0 {
		t.Fatalf("/controller %v", ctl)
	}
	epochData, _, _ := observer.Get(zkdata.ControllerEpochPath)
	if string(epochData) != "1" || first.ctl.Epoch() != 1 {
		t.Fatalf("/controller_epoch %q, controller epoch %d", epochData, first.ctl.Epoch())
	}

	// A topic written as Kafka's admin client writes it gets its first
	// leader (the first replica) from the controller.
	tp := controller.TopicPartition{Topic: "orders", Partition: 0}
	if err := observer.CreateTopic("orders", zkdata.TopicAssignment{TopicID: controller.NewTopicID(),
		Partitions: map[int32][]int32{0: {first.id, standby.id}}}, map[string]string{"min.insync.replicas": "2"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the partition state", func() (bool, error) {
		st, err := observer.PartitionState(tp)
		return err == nil && st.Leader == first.id && reflect.DeepEqual(st.ISR, []int32{first.id, standby.id}) && st.ControllerEpoch == 1, err
	})
	waitFor(t, 10*time.Second, "LeaderAndIsr to the follower", func() (bool, error) {
		return first.ch.leaderAndISR(standby.id, tp, first.id, 1), nil
	})

	// The controller's session is lost: the standby takes over with epoch
	// 2, sees the old controller's broker gone and moves leadership.
	cut := time.Now()
	first.proxy.Cut()
	waitFor(t, 20*time.Second, "the standby to take over", func() (bool, error) {
		return standby.ctl.Active() && standby.ctl.Epoch() == 2, nil
	})
	t.Logf("controller failover %v after the session was cut (session timeout %v)", time.Since(cut).Round(time.Millisecond), sessionTimeout)
	// As in Kafka, the new controller first takes the dead broker out of
	// the ISR (leader epoch 1, no leader), then elects (epoch 2).
	waitFor(t, 10*time.Second, "leadership to move", func() (bool, error) {
		st, err := observer.PartitionState(tp)
		return err == nil && st.Leader == standby.id && st.LeaderEpoch == 2 &&
			reflect.DeepEqual(st.ISR, []int32{standby.id}) && st.ControllerEpoch == 2, err
	})
	waitFor(t, 10*time.Second, "LeaderAndIsr from the new controller", func() (bool, error) {
		return standby.ch.leaderAndISR(standby.id, tp, standby.id, 2), nil
	})

	standby.ch.mu.Lock()
	_, queued := standby.ch.addrs[first.id]
	standby.ch.mu.Unlock()
	if queued {
		t.Fatal("the new controller keeps a queue for the dead broker")
	}

	// The old controller comes back: it re-registers, stays standby, and
	// the new controller tells it about the partition.
	first.proxy.Restore()
	waitFor(t, 20*time.Second, "the old controller to rejoin as standby", func() (bool, error) {
		return !first.ctl.Active() && first.ctl.ControllerID() == standby.id && first.reg.Count() == 2, nil
	})
	waitFor(t, 10*time.Second, "LeaderAndIsr to the returned broker", func() (bool, error) {
		return standby.ch.leaderAndISR(first.id, tp, standby.id, 2), nil
	})
	if len(activeOf(a, b)) != 1 {
		t.Fatal("two active controllers")
	}
}

// Kafka's layout, written through a chroot: an operator's zkCli.sh sees
// the same znodes and JSON as on a Kafka cluster.
func TestTopicCreationKafkaLayout(t *testing.T) {
	z := StartZooKeeper(t)
	root := dial(t, z.Addr)
	n := startNode(t, z, 1)
	waitFor(t, 20*time.Second, "the controller", func() (bool, error) { return n.ctl.Active(), nil })
	assignment, err := controller.AssignReplicas([]controller.BrokerMetadata{{ID: 1}}, 3, 1, fixedRand{})
	if err != nil {
		t.Fatal(err)
	}
	id := controller.NewTopicID()
	if err := n.zk.CreateTopic("events", zkdata.TopicAssignment{TopicID: id, Partitions: assignment}, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "three partition states", func() (bool, error) {
		for p := int32(0); p < 3; p++ {
			if ok, _, err := root.Exists(fmt.Sprintf("/cluster1/brokers/topics/events/partitions/%d/state", p)); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	topic := rawJSON(t, root, "/cluster1/brokers/topics/events")
	if topic["version"] != 3.0 || topic["topic_id"] != zkdata.EncodeUUID(id) ||
		!reflect.DeepEqual(topic["partitions"], map[string]any{"0": []any{1.0}, "1": []any{1.0}, "2": []any{1.0}}) ||
		!reflect.DeepEqual(topic["adding_replicas"], map[string]any{}) {
		t.Fatalf("topic znode %v", topic)
	}
	cfg := rawJSON(t, root, "/cluster1/config/topics/events")
	if !reflect.DeepEqual(cfg, map[string]any{"version": 1.0, "config": map[string]any{"cleanup.policy": "compact"}}) {
		t.Fatalf("config znode %v", cfg)
	}
	st := rawJSON(t, root, "/cluster1/brokers/topics/events/partitions/1/state")
	if !reflect.DeepEqual(st, map[string]any{"version": 1.0, "leader": 1.0, "leader_epoch": 0.0, "isr": []any{1.0}, "controller_epoch": 1.0}) {
		t.Fatalf("state znode %v", st)
	}
	for _, p := range []string{"/cluster1/brokers/seqid", "/cluster1/isr_change_notification", "/cluster1/admin/delete_topics", "/cluster1/config/changes"} {
		if ok, _, err := root.Exists(p); !ok || err != nil {
			t.Errorf("%s missing (%v)", p, err)
		}
	}

	// CreatePartitions: a rewritten assignment with a new partition gets
	// that partition a leader, the others untouched.
	a, version, err := n.zk.TopicAssignment("events")
	if err != nil {
		t.Fatal(err)
	}
	a.Partitions[3] = []int32{1}
	if err := n.zk.SetTopicAssignment("events", a, version); err != nil {
		t.Fatal(err)
	}
	if err := n.zk.SetTopicAssignment("events", a, version); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("stale assignment write: %v", err)
	}
	waitFor(t, 10*time.Second, "the added partition's state", func() (bool, error) {
		st, err := n.zk.PartitionState(controller.TopicPartition{Topic: "events", Partition: 3})
		return err == nil && st.Leader == 1 && st.LeaderEpoch == 0, err
	})

	// Deletion through /admin/delete_topics removes every znode of the topic.
	if err := n.zk.MarkTopicForDeletion("events"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the topic to be deleted", func() (bool, error) {
		a, _, err1 := root.Exists("/cluster1/brokers/topics/events")
		b, _, err2 := root.Exists("/cluster1/config/topics/events")
		c, _, err3 := root.Exists("/cluster1/admin/delete_topics/events")
		return !a && !b && !c, errors.Join(err1, err2, err3)
	})
}

type fixedRand struct{}

func (fixedRand) Intn(int) int { return 0 }

// A state write conditional on an old version is refused; so is a
// controller write conditional on an old /controller_epoch.
func TestStaleWritersRefused(t *testing.T) {
	z := StartZooKeeper(t)
	n := startNode(t, z, 1)
	waitFor(t, 20*time.Second, "the controller", func() (bool, error) { return n.ctl.Active(), nil })
	if err := n.zk.CreateTopic("t", zkdata.TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	tp := controller.TopicPartition{Topic: "t", Partition: 0}
	waitFor(t, 10*time.Second, "the partition state", func() (bool, error) {
		_, err := n.zk.PartitionState(tp)
		return err == nil, err
	})
	leaderA, _ := n.zk.PartitionState(tp)
	leaderB := leaderA.Clone() // a second writer with the same view
	leaderA.ISR = []int32{1}
	v, err := n.zk.UpdatePartitionState(tp, leaderA)
	if err != nil || v != leaderA.ZkVersion+1 {
		t.Fatalf("first write: version %d, %v", v, err)
	}
	leaderB.LeaderEpoch = 9
	if _, err := n.zk.UpdatePartitionState(tp, leaderB); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("stale write: %v", err)
	}
	if st, _ := n.zk.PartitionState(tp); st.LeaderEpoch == 9 {
		t.Fatal("stale write landed")
	}
	// A controller fenced by a newer epoch cannot write either.
	_, stat, err := n.zk.Get(zkdata.ControllerEpochPath)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := leaderA.Encode()
	if _, checkFailed, err := n.zk.SetChecked(zkdata.ControllerEpochPath, stat.Version-1, zkdata.PartitionStatePath("t", 0), data, v); !checkFailed || err == nil {
		t.Fatalf("write under an old controller epoch: checkFailed=%v err=%v", checkFailed, err)
	}
	// The ISR change notification reaches the controller, which reads the
	// state back and tells the brokers.
	if err := n.zk.NotifyISRChange([]zkdata.TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the notification to be consumed", func() (bool, error) {
		children, _, err := n.zk.Children(zkdata.IsrChangePath)
		return err == nil && len(children) == 0, err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	snap, err := n.ctl.Snapshot(ctx)
	if err != nil || snap[tp].ZkVersion != v {
		t.Fatalf("controller's state %+v, want version %d (%v)", snap[tp], v, err)
	}
}

// Controlled shutdown through the active controller moves leadership off
// the broker before it stops; a standby answers NOT_CONTROLLER. A leader's
// ISR change goes through ZooKeeper and reaches the controller.
func TestControlledShutdownAndISRChange(t *testing.T) {
	z := StartZooKeeper(t)
	a, b := startNode(t, z, 1), startNode(t, z, 2)
	waitFor(t, 20*time.Second, "one active controller", func() (bool, error) { return len(activeOf(a, b)) == 1, nil })
	act := activeOf(a, b)[0]
	standby := map[*node]*node{a: b, b: a}[act]
	tp := controller.TopicPartition{Topic: "pay", Partition: 0}
	if err := a.zk.CreateTopic("pay", zkdata.TopicAssignment{Partitions: map[int32][]int32{0: {standby.id, act.id}}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the first leader", func() (bool, error) {
		st, err := a.zk.PartitionState(tp)
		return err == nil && st.Leader == standby.id, err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := standby.ctl.ControlledShutdown(ctx, standby.id, standby.reg.Epoch()); !errors.Is(err, zkcontroller.ErrNotController) {
		t.Fatalf("standby answered %v", err)
	}
	remaining, err := act.ctl.ControlledShutdown(ctx, standby.id, standby.reg.Epoch())
	if err != nil || len(remaining) != 0 {
		t.Fatalf("remaining %v, %v", remaining, err)
	}
	st, err := a.zk.PartitionState(tp)
	if err != nil || st.Leader != act.id || st.LeaderEpoch != 1 || !reflect.DeepEqual(st.ISR, []int32{act.id}) {
		t.Fatalf("after controlled shutdown: %+v %v", st, err)
	}
	if !act.ch.leaderAndISR(standby.id, tp, act.id, act.ctl.Epoch()) {
		t.Fatal("the shutting-down broker was not told it follows")
	}
	// The new leader re-admits the follower and notifies the controller.
	next, err := act.zk.ChangeISR(tp, st, []int32{act.id, standby.id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := standby.zk.ChangeISR(tp, st, []int32{act.id}); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("ISR change from a stale view: %v", err)
	}
	waitFor(t, 10*time.Second, "the controller to learn the ISR", func() (bool, error) {
		snap, err := act.ctl.Snapshot(ctx)
		return err == nil && snap[tp].ZkVersion == next.ZkVersion && reflect.DeepEqual(snap[tp].ISR, next.ISR), err
	})

	// The follower's session is lost: the controller drops it from the
	// ISR and stops queueing requests for it.
	standby.proxy.Cut()
	waitFor(t, 20*time.Second, "the dead follower to leave the ISR", func() (bool, error) {
		st, err := act.zk.PartitionState(tp)
		return err == nil && reflect.DeepEqual(st.ISR, []int32{act.id}) && st.LeaderEpoch == 2, err
	})
	// The state is written before the channel is updated: wait for both.
	waitFor(t, 10*time.Second, "the controller to drop the dead broker's queue", func() (bool, error) {
		act.ch.mu.Lock()
		defer act.ch.mu.Unlock()
		_, queued := act.ch.addrs[standby.id]
		return !queued, nil
	})
}

// With auto.leader.rebalance.enable, leadership returns to the preferred
// replica once it is back in the ISR.
func TestAutoLeaderRebalance(t *testing.T) {
	z := StartZooKeeper(t)
	rebalance := func(c *zkcontroller.Config) {
		c.AutoLeaderRebalance, c.ImbalanceCheckInterval = true, 100*time.Millisecond
	}
	a, b := startNode(t, z, 1, rebalance), startNode(t, z, 2, rebalance)
	waitFor(t, 20*time.Second, "one active controller", func() (bool, error) { return len(activeOf(a, b)) == 1, nil })
	act := activeOf(a, b)[0]
	other := map[*node]*node{a: b, b: a}[act]
	tp := controller.TopicPartition{Topic: "r", Partition: 0}
	if err := a.zk.CreateTopic("r", zkdata.TopicAssignment{Partitions: map[int32][]int32{0: {other.id, act.id}}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the first leader", func() (bool, error) {
		st, err := a.zk.PartitionState(tp)
		return err == nil && st.Leader == other.id, err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := act.ctl.ControlledShutdown(ctx, other.id, other.reg.Epoch()); err != nil {
		t.Fatal(err)
	}
	st, err := a.zk.PartitionState(tp)
	if err != nil || st.Leader != act.id {
		t.Fatalf("after controlled shutdown %+v %v", st, err)
	}
	// The broker restarts: it registers anew, catches up, rejoins the ISR.
	other.proxy.Cut()
	waitFor(t, 20*time.Second, "the broker's session to expire", func() (bool, error) {
		ok, _, err := a.zk.Exists(zkdata.BrokerPath(other.id))
		return !ok, err
	})
	other.proxy.Restore()
	waitFor(t, 20*time.Second, "re-registration", func() (bool, error) { return other.reg.Count() == 2, nil })
	changeISR(t, act.zk, tp, []int32{act.id, other.id})
	waitFor(t, 10*time.Second, "leadership back on the preferred replica", func() (bool, error) {
		st, err := a.zk.PartitionState(tp)
		return err == nil && st.Leader == other.id && st.LeaderEpoch == 2, err
	})
}

// A reassignment through the active controller, written to the topic znode
// as Kafka writes it, finishes when the new replica joins the ISR.
func TestReassignment(t *testing.T) {
	z := StartZooKeeper(t)
	a, b := startNode(t, z, 1), startNode(t, z, 2)
	waitFor(t, 20*time.Second, "one active controller", func() (bool, error) { return len(activeOf(a, b)) == 1, nil })
	act := activeOf(a, b)[0]
	tp := controller.TopicPartition{Topic: "m", Partition: 0}
	if err := a.zk.CreateTopic("m", zkdata.TopicAssignment{Partitions: map[int32][]int32{0: {1}}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the partition state", func() (bool, error) {
		_, err := a.zk.PartitionState(tp)
		return err == nil, err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	failed, err := act.ctl.Reassign(ctx, map[controller.TopicPartition][]int32{tp: {2}})
	if err != nil || len(failed) != 0 {
		t.Fatal(failed, err)
	}
	topic := rawJSON(t, a.zk, zkdata.TopicPath("m"))
	if !reflect.DeepEqual(topic["partitions"], map[string]any{"0": []any{2.0, 1.0}}) ||
		!reflect.DeepEqual(topic["adding_replicas"], map[string]any{"0": []any{2.0}}) ||
		!reflect.DeepEqual(topic["removing_replicas"], map[string]any{"0": []any{1.0}}) {
		t.Fatalf("topic znode during reassignment %v", topic)
	}
	if r, err := act.ctl.Reassignments(ctx); err != nil || len(r) != 1 {
		t.Fatalf("reassignments %v %v", r, err)
	}
	// Broker 2 caught up; the leader adds it to the ISR.
	changeISR(t, a.zk, tp, []int32{1, 2})
	waitFor(t, 10*time.Second, "the reassignment to finish", func() (bool, error) {
		st, err := a.zk.PartitionState(tp)
		asg, _, err2 := a.zk.TopicAssignment("m")
		return err == nil && err2 == nil && st.Leader == 2 && reflect.DeepEqual(st.ISR, []int32{2}) &&
			reflect.DeepEqual(asg.Partitions[0], []int32{2}) && len(asg.AddingReplicas) == 0, errors.Join(err, err2)
	})
	waitFor(t, 10*time.Second, "StopReplica to the removed replica", func() (bool, error) {
		act.ch.mu.Lock()
		defer act.ch.mu.Unlock()
		for _, s := range act.ch.sends {
			if r, ok := s.Req.(*kmsg.StopReplicaRequest); ok && s.Broker == 1 && len(r.Topics) == 1 && r.Topics[0].PartitionStates[0].Delete {
				return true, nil
			}
		}
		return false, nil
	})
}

// changeISR is a leader's ISR change; a version conflict (the controller
// wrote meanwhile) re-reads the state and tries again.
func changeISR(t *testing.T, c *zkclient.Client, tp controller.TopicPartition, isr []int32) zkdata.PartitionState {
	t.Helper()
	var next zkdata.PartitionState
	waitFor(t, 10*time.Second, "the ISR change", func() (bool, error) {
		st, err := c.PartitionState(tp)
		if err != nil {
			return false, err
		}
		next, err = c.ChangeISR(tp, st, isr)
		return err == nil, err
	})
	return next
}

// Five controller failovers in a row on three brokers: each time the
// active controller's session is cut, another takes over with a higher
// epoch, the partition is led by a live replica, and no two controllers
// are active at once when the cluster has settled.
func TestRepeatedControllerFailover(t *testing.T) {
	z := StartZooKeeper(t)
	nodes := []*node{startNode(t, z, 1), startNode(t, z, 2), startNode(t, z, 3)}
	observer := dial(t, z.Addr+"/cluster1")
	settled := func() *node {
		var act *node
		waitFor(t, 30*time.Second, "one active controller known to all", func() (bool, error) {
			a := activeOf(nodes...)
			if len(a) != 1 {
				return false, nil
			}
			for _, n := range nodes {
				if n.ctl.ControllerID() != a[0].id {
					return false, nil
				}
			}
			act = a[0]
			return true, nil
		})
		return act
	}
	act := settled()
	tp := controller.TopicPartition{Topic: "f", Partition: 0}
	if err := observer.CreateTopic("f", zkdata.TopicAssignment{Partitions: map[int32][]int32{0: {1, 2, 3}}}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the partition state", func() (bool, error) {
		_, err := observer.PartitionState(tp)
		return err == nil, err
	})
	epoch := act.ctl.Epoch()
	for round := 0; round < 5; round++ {
		// Every replica is in sync, so losing any broker changes the
		// state (a new leader or a smaller ISR) under the new epoch.
		changeISR(t, observer, tp, []int32{1, 2, 3})
		act.proxy.Cut()
		var next *node
		waitFor(t, 30*time.Second, "a new controller", func() (bool, error) {
			for _, n := range nodes {
				if n != act && n.ctl.Active() && n.ctl.Epoch() > epoch {
					next = n
					return true, nil
				}
			}
			return false, nil
		})
		waitFor(t, 10*time.Second, "a live leader and the lost broker out of the ISR", func() (bool, error) {
			st, err := observer.PartitionState(tp)
			return err == nil && st.Leader != act.id && st.Leader >= 0 && !slicesContains(st.ISR, act.id) &&
				st.ControllerEpoch == next.ctl.Epoch(), err
		})
		act.proxy.Restore()
		waitFor(t, 30*time.Second, "the old controller to re-register", func() (bool, error) {
			ok, _, err := observer.Exists(zkdata.BrokerPath(act.id))
			return ok, err
		})
		act = settled()
		if act.ctl.Epoch() <= epoch {
			t.Fatalf("round %d: epoch %d after %d", round, act.ctl.Epoch(), epoch)
		}
		epoch = act.ctl.Epoch()
	}
	data, _, err := observer.Get(zkdata.ControllerEpochPath)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := zkdata.DecodeControllerEpoch(data); e != epoch {
		t.Fatalf("/controller_epoch %d, active controller's %d", e, epoch)
	}
}

func slicesContains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
