package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// A network of Linux network namespaces for fault tests: each broker and
// the ZooKeeper server live in a namespace of their own, joined by veth
// pairs to one bridge, so that iptables rules inside a namespace can cut,
// half-cut or degrade any link. The test's clients sit on the bridge
// itself and reach every node.
//
// Everything is private to the test: the test re-executes itself under
// `unshare --net --mount` (inNetns), so the bridge, the links, the rules
// and the `ip netns` bind mounts (on a tmpfs over /run inside that mount
// namespace) belong to a network and mount namespace that vanish when the
// re-executed test and its processes exit, on failure or panic too. The
// host's network is never touched.

// netnsChildEnv marks the re-executed test that runs inside its own
// network and mount namespaces.
const netnsChildEnv = "KBROKER_NETNS_CHILD"

// netnsBinEnv passes the kbroker binary the parent built to the child (the
// child has no network to fetch modules with).
const netnsBinEnv = "KBROKER_NETNS_BIN"

// Addresses of the fault network (10.77.0.0/24, used by nothing else).
const (
	netPrefix  = "10.77.0."
	clientAddr = netPrefix + "254" // the bridge: the test's own clients
)

// zkHost is the address of ZooKeeper server id (1, 2, 3…).
func zkHost(id int) string { return fmt.Sprintf("%s%d", netPrefix, 1+id) }

// zkNs names the namespace of ZooKeeper server id.
func zkNs(id int) string { return fmt.Sprintf("zk%d", id) }

// brokerAddr is the address of broker id.
func brokerAddr(id int32) string { return fmt.Sprintf("%s%d", netPrefix, 10+id) }

// inNetns reports whether the test runs inside its own namespaces. When it
// does not, it re-executes this one test under unshare, waits for it,
// fails t if the child failed, and returns false: the caller returns at
// once. Where namespaces cannot be made (no unshare, ip or iptables, or no
// privilege), the test fails when CI=true and is skipped otherwise.
func inNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsChildEnv) == "1" {
		if bin := os.Getenv(netnsBinEnv); bin != "" {
			kbroker.once.Do(func() { kbroker.bin = bin })
		}
		return true
	}
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("inNetns re-runs top-level tests only, not %s", t.Name())
	}
	var missing []string
	for _, tool := range []string{"unshare", "ip", "iptables", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		requireTool(t, fmt.Errorf("fault tests need %s (apt-get install util-linux iproute2 iptables)", strings.Join(missing, ", ")))
	}
	if out, err := exec.Command("unshare", "--net", "--mount", "--", "ip", "link", "add", "probe0", "type", "bridge").CombinedOutput(); err != nil {
		requireTool(t, fmt.Errorf("cannot make a network namespace with a bridge (root or CAP_NET_ADMIN and CAP_SYS_ADMIN needed): %v: %s", err, out))
	}
	bin := buildKbroker(t)
	args := []string{"--net", "--mount", "--propagation", "private", "--", os.Args[0],
		"-test.run", "^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v"}
	if d, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout", time.Until(d).Round(time.Second).String())
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append(os.Environ(), netnsChildEnv+"=1", netnsBinEnv+"="+bin)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s in its own network namespace: %v (its output is above)", t.Name(), err)
	}
	return false
}

// Netns is the private network of one test: the bridge and the
// namespaces made so far.
type Netns struct {
	t     testing.TB
	names []string
}

// NewNetns mounts a private /run (for `ip netns`), brings up loopback and
// the bridge br0 at clientAddr, and removes every namespace it later
// adds when the test ends. It must run inside inNetns's child.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	if os.Getenv(netnsChildEnv) != "1" {
		t.Fatal("NewNetns outside the test's own namespaces")
	}
	n := &Netns{t: t}
	n.must("mount", "-t", "tmpfs", "kbroker-netns", "/run")
	n.must("ip", "link", "set", "lo", "up")
	n.must("ip", "link", "add", "br0", "type", "bridge")
	n.must("ip", "addr", "add", clientAddr+"/24", "dev", "br0")
	n.must("ip", "link", "set", "br0", "up")
	t.Cleanup(func() {
		for _, name := range n.names {
			_ = exec.Command("ip", "netns", "del", name).Run()
		}
		_ = exec.Command("ip", "link", "del", "br0").Run()
		_ = exec.Command("umount", "/run").Run()
	})
	return n
}

// must runs a command and fails the test if it fails.
func (n *Netns) must(argv ...string) {
	n.t.Helper()
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		n.t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
}

// Add makes namespace name with eth0 at addr on the bridge and returns the
// command prefix that runs a program inside it.
func (n *Netns) Add(name, addr string) []string {
	n.t.Helper()
	n.must("ip", "netns", "add", name)
	n.names = append(n.names, name)
	host := "v-" + name
	n.must("ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", name)
	n.must("ip", "link", "set", host, "master", "br0", "up")
	n.must("ip", "-n", name, "addr", "add", addr+"/24", "dev", "eth0")
	n.must("ip", "-n", name, "link", "set", "eth0", "up")
	n.must("ip", "-n", name, "link", "set", "lo", "up")
	return []string{"ip", "netns", "exec", name}
}

// Iptables runs iptables with args inside namespace name.
func (n *Netns) Iptables(name string, args ...string) error {
	argv := append([]string{"netns", "exec", name, "iptables", "-w"}, args...)
	if out, err := exec.Command("ip", argv...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables %s in %s: %v: %s", strings.Join(args, " "), name, err, out)
	}
	return nil
}

// Flush removes every filter and nat rule inside namespace name.
func (n *Netns) Flush(name string) error {
	return errors.Join(n.Iptables(name, "-F"), n.Iptables(name, "-t", "nat", "-F"))
}

// NetCluster is ZooKeeper (one server or an ensemble) and brokers, each
// in its own namespace.
type NetCluster struct {
	Net     *Netns
	ZK      []*ZooKeeper
	Brokers []*BrokerProc
}

// ZKHosts are the addresses of the ZooKeeper servers, by id from 1.
func (c *NetCluster) ZKHosts() []string {
	var out []string
	for i := range c.ZK {
		out = append(out, zkHost(i+1))
	}
	return out
}

// nsOf names the namespace of broker id.
func nsOf(id int32) string { return fmt.Sprintf("b%d", id) }

// StartNetCluster starts zkServers ZooKeeper servers (1: standalone; 3: an
// ensemble) and n brokers (ids 1..n, each with props on top of the
// cluster defaults), each in a namespace of its own.
func StartNetCluster(t *testing.T, n, zkServers int, props map[string]string) *NetCluster {
	t.Helper()
	c := &NetCluster{Net: NewNetns(t)}
	var ensemble []zkServer
	if zkServers > 1 {
		for id := 1; id <= zkServers; id++ {
			ensemble = append(ensemble, zkServer{id, zkHost(id)})
		}
	}
	var connect []string
	for id := 1; id <= zkServers; id++ {
		c.ZK = append(c.ZK, startZooKeeper(t, zkHost(id), 2181, c.Net.Add(zkNs(id), zkHost(id)), ensemble, id))
		connect = append(connect, c.ZK[id-1].Addr)
	}
	for _, z := range c.ZK {
		z.waitServing(t, "standalone", "leader", "follower")
	}
	c.Brokers = startBrokers(t, strings.Join(connect, ","), n, func(b *BrokerProc) {
		b.Host, b.Port, b.HTTPPort = brokerAddr(b.ID), 9092, 8080
		b.Wrap = c.Net.Add(nsOf(b.ID), b.Host)
		b.FaultFS = true // the nemesis's slow-disk and full-disk
	}, func(*BrokerProc) map[string]string { return props })
	return c
}
