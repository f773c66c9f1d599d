package integration

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FaultKind names one kind of fault the nemesis injects.
type FaultKind string

// The fault kinds. Each hits the cluster in one way until healed; the
// nemesis injects one at a time and heals it before the next.
const (
	// FaultZombie isolates a partition leader from ZooKeeper and from the
	// other brokers while clients still reach it.
	FaultZombie FaultKind = "zombie-leader"
	// FaultZKCut cuts a partition leader from ZooKeeper only, long enough
	// for its session to expire while it leads.
	FaultZKCut FaultKind = "zk-cut"
	// FaultPeerCut cuts one broker from the other brokers only.
	FaultPeerCut FaultKind = "peer-cut"
	// FaultOneWay drops what one broker receives from the other brokers
	// and ZooKeeper, while what it sends still arrives.
	FaultOneWay FaultKind = "one-way"
	// FaultSplit splits brokers and ZooKeeper into two sides (a minority
	// and a majority) that cannot reach each other; clients reach both.
	FaultSplit FaultKind = "split"
	// FaultLoss drops a share of every packet each broker receives.
	FaultLoss FaultKind = "packet-loss"
	// FaultDelay delays every byte between one broker and the other
	// brokers and ZooKeeper, both ways, through TCP proxies (proxy.go).
	FaultDelay FaultKind = "delay"
	// FaultZKQuorum cuts a majority of the ZooKeeper ensemble off: the
	// ensemble loses its quorum and serves nobody.
	FaultZKQuorum FaultKind = "zk-quorum-loss"
	// FaultKill kills one broker with SIGKILL; healing restarts it.
	FaultKill FaultKind = "kill-9"
	// FaultPause stops one broker with SIGSTOP; healing sends SIGCONT.
	FaultPause FaultKind = "sigstop"
	// FaultSlowDisk makes every write and fsync of a partition leader's
	// log dir sleep first (the broker's disk-fault hook, SetDisk).
	FaultSlowDisk FaultKind = "slow-disk"
	// FaultFullDisk fills a partition leader's disk: its writes, fsyncs
	// and mkdirs fail with ENOSPC. As Kafka's, the broker takes the dir
	// offline and, with no log dir left, halts; its ZooKeeper session
	// ends and the controller elects new leaders from the ISR. Healing
	// frees the space and restarts it: Kafka brings an offline log dir
	// back only with a restart.
	FaultFullDisk FaultKind = "full-disk"
)

// AllFaults is every kind, in the order the tables list them.
var AllFaults = []FaultKind{FaultZombie, FaultZKCut, FaultPeerCut, FaultOneWay, FaultSplit, FaultLoss, FaultDelay, FaultZKQuorum, FaultKill, FaultPause, FaultSlowDisk, FaultFullDisk}

// DiskFaults are the kinds that hit a broker's disk (TestFaultsDisk).
var DiskFaults = []FaultKind{FaultSlowDisk, FaultFullDisk}

// ParseFaults reads a comma-separated list of fault kinds ("" or "all" is
// every kind).
func ParseFaults(s string) ([]FaultKind, error) {
	if s == "" || s == "all" {
		return AllFaults, nil
	}
	var out []FaultKind
	for _, f := range strings.Split(s, ",") {
		k := FaultKind(strings.TrimSpace(f))
		if !slices.Contains(AllFaults, k) {
			return nil, fmt.Errorf("unknown fault kind %q (known: %v)", k, AllFaults)
		}
		out = append(out, k)
	}
	return out, nil
}

// Fault is one injected fault: what was done and how to undo it.
type Fault struct {
	Kind FaultKind
	// What says which nodes it hit, for the log.
	What string
	// Broker is the broker a disk fault hit.
	Broker *BrokerProc
	heal   func() error
}

// Heal undoes the fault.
func (f *Fault) Heal() error { return f.heal() }

// Nemesis injects faults into a NetCluster, chosen by a seeded random
// source so that a run can be replayed from its seed.
//
// Invariant: at most one fault is active, and Heal leaves no rule in any
// namespace and every broker running.
type Nemesis struct {
	c     *NetCluster
	rng   *rand.Rand
	kinds []FaultKind
}

// NewNemesis picks faults among kinds with a source seeded by seed
// (leaving out zk-quorum-loss when c has a single ZooKeeper server).
func NewNemesis(c *NetCluster, seed uint64, kinds []FaultKind) *Nemesis {
	if len(c.ZK) < 3 {
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k FaultKind) bool { return k == FaultZKQuorum })
	}
	return &Nemesis{c: c, rng: rand.New(rand.NewPCG(seed, seed^0x6b62726f6b6572)), kinds: kinds}
}

// Next picks a fault kind.
func (n *Nemesis) Next() FaultKind { return n.kinds[n.rng.IntN(len(n.kinds))] }

// Intn is the nemesis's own random source, for hold times.
func (n *Nemesis) Intn(k int) int { return n.rng.IntN(k) }

// Inject applies a fault of kind; leader is a broker that leads some
// partition (the zombie's victim), chosen by the caller.
func (n *Nemesis) Inject(kind FaultKind, leader int32) (*Fault, error) {
	c := n.c
	victim := c.Brokers[n.rng.IntN(len(c.Brokers))]
	if kind == FaultZombie || kind == FaultZKCut || kind == FaultSlowDisk || kind == FaultFullDisk {
		victim = nil
		for _, b := range c.Brokers {
			if b.ID == leader {
				victim = b
			}
		}
		if victim == nil {
			return nil, fmt.Errorf("no broker %d to cut", leader)
		}
	}
	zk := c.ZKHosts()
	peers := func(self int32) []string {
		var out []string
		for _, b := range c.Brokers {
			if b.ID != self {
				out = append(out, b.Host)
			}
		}
		return out
	}
	f := &Fault{Kind: kind, heal: func() error { return nil }}
	flushAll := func() error {
		var errs []error
		for _, b := range c.Brokers {
			errs = append(errs, c.Net.Flush(nsOf(b.ID)))
		}
		for i := range c.ZK {
			errs = append(errs, c.Net.Flush(zkNs(i+1)))
		}
		return errors.Join(errs...)
	}
	// cut drops traffic between namespace ns and addrs: both ways, or only
	// what ns receives.
	cut := func(ns string, addrs []string, bothWays bool) error {
		for _, a := range addrs {
			if err := c.Net.Iptables(ns, "-A", "INPUT", "-s", a, "-j", "DROP"); err != nil {
				return err
			}
			if bothWays {
				if err := c.Net.Iptables(ns, "-A", "OUTPUT", "-d", a, "-j", "DROP"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var err error
	switch kind {
	case FaultZombie:
		f.What = fmt.Sprintf("broker %d (a leader) cut from ZooKeeper and brokers %v", victim.ID, peers(victim.ID))
		f.heal = flushAll
		err = cut(nsOf(victim.ID), append(peers(victim.ID), zk...), true)
	case FaultZKCut:
		f.What = fmt.Sprintf("broker %d (a leader) cut from ZooKeeper", victim.ID)
		f.heal = flushAll
		err = cut(nsOf(victim.ID), zk, true)
	case FaultPeerCut:
		f.What = fmt.Sprintf("broker %d cut from brokers %v", victim.ID, peers(victim.ID))
		f.heal = flushAll
		err = cut(nsOf(victim.ID), peers(victim.ID), true)
	case FaultOneWay:
		f.What = fmt.Sprintf("broker %d receives nothing from brokers %v and ZooKeeper", victim.ID, peers(victim.ID))
		f.heal = flushAll
		err = cut(nsOf(victim.ID), append(peers(victim.ID), zk...), false)
	case FaultSplit:
		// Nodes are the brokers and the ZooKeeper servers; a random
		// minority (at least one node, fewer than half or exactly half)
		// against the rest.
		type node struct{ ns, addr string }
		var nodes []node
		for _, b := range c.Brokers {
			nodes = append(nodes, node{nsOf(b.ID), b.Host})
		}
		for i, h := range zk {
			nodes = append(nodes, node{zkNs(i + 1), h})
		}
		n.rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		k := 1 + n.rng.IntN((len(nodes)-1)/2+(len(nodes)-1)%2)
		minority, majority := nodes[:k], nodes[k:]
		var a, b []string
		for _, x := range minority {
			a = append(a, x.ns)
		}
		for _, x := range majority {
			b = append(b, x.ns)
		}
		f.What = fmt.Sprintf("%v | %v", a, b)
		f.heal = flushAll
		for _, x := range minority {
			var addrs []string
			for _, y := range majority {
				addrs = append(addrs, y.addr)
			}
			if err = cut(x.ns, addrs, true); err != nil {
				break
			}
		}
	case FaultLoss:
		p := []string{"0.05", "0.1", "0.2"}[n.rng.IntN(3)]
		f.What = fmt.Sprintf("every broker drops %s of the packets it receives from other nodes", p)
		f.heal = flushAll
		for _, b := range c.Brokers {
			if err = c.Net.Iptables(nsOf(b.ID), "-A", "INPUT", "!", "-s", clientAddr, "-m", "statistic",
				"--mode", "random", "--probability", p, "-j", "DROP"); err != nil {
				break
			}
		}
	case FaultDelay:
		d := []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond}[n.rng.IntN(3)]
		f.What = fmt.Sprintf("broker %d's links to brokers %v and ZooKeeper delayed %v each way (TCP proxies)", victim.ID, peers(victim.ID), d)
		var proxies []*Proxy
		proxies, err = n.delayLinks(victim, d)
		f.heal = func() error {
			// The delayed connections are dropped while the nat rules
			// that translate them still stand (a close after the flush
			// did not reach the nodes: they noticed only ~13 s later),
			// then new connections go direct again.
			for _, p := range proxies {
				p.Close()
			}
			return flushAll()
		}
		if err != nil {
			return nil, errors.Join(err, f.heal())
		}
	case FaultZKQuorum:
		if len(zk) < 3 {
			return nil, fmt.Errorf("%s needs a ZooKeeper ensemble of 3 or more, not %d", kind, len(zk))
		}
		// A majority of the ensemble is cut from every other node.
		k := len(zk)/2 + 1
		ids := n.rng.Perm(len(zk))[:k]
		var names []string
		f.heal = flushAll
		for _, i := range ids {
			names = append(names, zkNs(i+1))
			var others []string
			for j, h := range zk {
				if j != i {
					others = append(others, h)
				}
			}
			for _, b := range c.Brokers {
				others = append(others, b.Host)
			}
			if err = cut(zkNs(i+1), append(others, clientAddr), true); err != nil {
				break
			}
		}
		f.What = fmt.Sprintf("ZooKeeper servers %v cut from every node: the ensemble has no quorum", names)
	case FaultKill:
		f.What = fmt.Sprintf("broker %d killed (SIGKILL)", victim.ID)
		victim.Kill()
		f.heal = func() error { victim.Restart(); return nil }
	case FaultPause:
		f.What = fmt.Sprintf("broker %d stopped (SIGSTOP)", victim.ID)
		victim.Pause()
		f.heal = func() error { victim.Resume(); return nil }
	case FaultSlowDisk:
		d := []string{"20ms", "100ms", "300ms"}[n.rng.IntN(3)]
		f.Broker = victim
		f.What = fmt.Sprintf("broker %d (a leader): every write and fsync of its log dir takes %s more", victim.ID, d)
		f.heal = func() error { return victim.SetDisk("ok") }
		err = victim.SetDisk("slow " + d)
	case FaultFullDisk:
		f.Broker = victim
		f.What = fmt.Sprintf("broker %d (a leader): disk full (ENOSPC)", victim.ID)
		f.heal = func() error {
			// Space again, then a restart (a no-op stop if it halted).
			if err := victim.SetDisk("ok"); err != nil {
				return err
			}
			_ = victim.Term(time.Minute) // its exit status: 1 after a halt
			victim.Restart()
			return nil
		}
		err = victim.SetDisk("full")
	default:
		return nil, fmt.Errorf("unknown fault kind %q", kind)
	}
	if err != nil {
		return nil, errors.Join(err, flushAll())
	}
	return f, nil
}

// delayLinks routes every connection between broker v and the other
// brokers and ZooKeeper through delayed proxies on the bridge: in v's
// namespace, connections to each peer and ZooKeeper server are DNATed to
// a proxy of that target; in each peer's, connections to v to a proxy of
// v. Connections already open bypass the NAT, so a rule resets them (TCP
// RST) and the nodes reconnect, through the proxies. The caller heals by
// flushing the rules (filter and nat) and closing the proxies it gets
// back, also when delayLinks fails.
func (n *Nemesis) delayLinks(v *BrokerProc, d time.Duration) ([]*Proxy, error) {
	c := n.c
	var proxies []*Proxy
	// route sends ns's connections to target through a new proxy.
	route := func(ns, target string) error {
		p, err := listenProxy(clientAddr, target, d)
		if err != nil {
			return err
		}
		proxies = append(proxies, p)
		c.Net.t.Cleanup(p.Close) // if the test ends before the heal
		host, port, err := net.SplitHostPort(target)
		if err != nil {
			return err
		}
		_, pport, err := net.SplitHostPort(p.Addr)
		if err != nil {
			return err
		}
		if err := c.Net.Iptables(ns, "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d", host, "--dport", port,
			"-j", "DNAT", "--to-destination", net.JoinHostPort(clientAddr, pport)); err != nil {
			return err
		}
		return c.Net.Iptables(ns, "-A", "OUTPUT", "-p", "tcp", "-d", host, "--dport", port, "-j", "REJECT", "--reject-with", "tcp-reset")
	}
	var targets []string
	for _, b := range c.Brokers {
		if b.ID != v.ID {
			targets = append(targets, b.Addr())
		}
	}
	for _, z := range c.ZK {
		targets = append(targets, z.Addr)
	}
	for _, target := range targets {
		if err := route(nsOf(v.ID), target); err != nil {
			return proxies, err
		}
	}
	for _, b := range c.Brokers {
		if b.ID != v.ID {
			if err := route(nsOf(b.ID), net.JoinHostPort(v.Host, strconv.Itoa(v.Port))); err != nil {
				return proxies, err
			}
		}
	}
	return proxies, nil
}
