package compat

// The cluster as the rolling migration test sees it, from ZooKeeper (the
// truth both kinds of controller write) and from every broker's Metadata
// answer, in one comparable form.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/kbroker/kbroker/integration"
)

// rollingTopics are the topics whose partitions the views hold.
var rollingTopics = []string{rollingTopic, offsetsTopic}

// rollingPartView is one partition in a view. ISR is sorted: Kafka's
// Metadata lists it in the order of the state znode, kbroker's too, but
// the order carries no meaning a client could act on.
type rollingPartView struct {
	topic       string
	partition   int32
	leader      int32
	leaderEpoch int32
	replicas    []int32
	isr         []int32
}

// rollingView is the cluster as one source sees it: the controller, the
// registered brokers (sorted) and every partition of rollingTopics that
// exists, in topic then partition order.
type rollingView struct {
	controller int32
	brokers    []int32
	parts      []rollingPartView
}

// String is the view in one line; two sources agree when their strings are
// equal.
func (v rollingView) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "controller %d brokers %v", v.controller, v.brokers)
	for _, p := range v.parts {
		fmt.Fprintf(&b, "; %s-%d leader %d epoch %d replicas %v isr %v", p.topic, p.partition, p.leader, p.leaderEpoch, p.replicas, p.isr)
	}
	return b.String()
}

// settled says why v is not yet the whole cluster: three brokers, every
// partition with three replicas all in the ISR and, with preferred, led by
// its first replica. nil when it is.
func (v rollingView) settled(preferred bool) error {
	if len(v.brokers) != 3 {
		return fmt.Errorf("brokers %v", v.brokers)
	}
	for _, p := range v.parts {
		if len(p.replicas) != 3 || len(p.isr) != 3 || (preferred && p.leader != p.replicas[0]) {
			return fmt.Errorf("%s-%d leader %d replicas %v isr %v", p.topic, p.partition, p.leader, p.replicas, p.isr)
		}
	}
	return nil
}

// dialRollingZK connects to z under chroot, closed at test cleanup.
func dialRollingZK(t testing.TB, z *integration.ZooKeeper, chroot string) *zkclient.Client {
	t.Helper()
	c, err := zkclient.Dial(zkclient.Config{Connect: z.Addr + chroot, SessionTimeout: 10 * time.Second, ConnectionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("connecting to ZooKeeper %s%s: %v", z.Addr, chroot, err)
	}
	t.Cleanup(c.Close)
	return c
}

// zkRollingView reads the view from ZooKeeper: /controller, /brokers/ids,
// and each topic's assignment and partition states.
func zkRollingView(c *zkclient.Client) (rollingView, error) {
	var v rollingView
	data, _, err := c.Get(zkdata.ControllerPath)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		v.controller = -1
	case err != nil:
		return v, fmt.Errorf("reading %s: %w", zkdata.ControllerPath, err)
	default:
		reg, err := zkdata.DecodeControllerRegistration(data)
		if err != nil {
			return v, fmt.Errorf("decoding %s: %w", zkdata.ControllerPath, err)
		}
		v.controller = reg.BrokerID
	}
	ids, _, err := c.Children(zkdata.BrokerIDsPath)
	if err != nil {
		return v, fmt.Errorf("listing %s: %w", zkdata.BrokerIDsPath, err)
	}
	for _, s := range ids {
		id, err := zkdata.ParseBrokerID(s)
		if err != nil {
			return v, fmt.Errorf("%s/%s: %w", zkdata.BrokerIDsPath, s, err)
		}
		v.brokers = append(v.brokers, id)
	}
	slices.Sort(v.brokers)
	for _, topic := range rollingTopics {
		a, _, err := c.TopicAssignment(topic)
		if errors.Is(err, zk.ErrNoNode) {
			continue // not created yet
		}
		if err != nil {
			return v, err
		}
		for p := range int32(len(a.Partitions)) {
			st, err := c.PartitionState(zkdata.TopicPartition{Topic: topic, Partition: p})
			if errors.Is(err, zk.ErrNoNode) {
				return v, fmt.Errorf("%s-%d has no state yet", topic, p)
			}
			if err != nil {
				return v, err
			}
			isr := slices.Clone(st.ISR)
			slices.Sort(isr)
			v.parts = append(v.parts, rollingPartView{topic, p, st.Leader, st.LeaderEpoch, slices.Clone(a.Partitions[p]), isr})
		}
	}
	return v, nil
}

// metadataRollingView asks the broker at addr for the view with one
// Metadata request. It polls often, so its client lives for one call only.
func metadataRollingView(addr string) (rollingView, error) {
	var v rollingView
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return v, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).Metadata(ctx, rollingTopics...)
	if err != nil {
		return v, err
	}
	v.controller = m.Controller
	v.brokers = m.Brokers.NodeIDs()
	slices.Sort(v.brokers)
	for _, tn := range rollingTopics {
		td := m.Topics[tn]
		if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			continue // not created yet
		}
		if td.Err != nil {
			return v, fmt.Errorf("%s: %w", tn, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			if p.Err != nil && !errors.Is(p.Err, kerr.ReplicaNotAvailable) {
				return v, fmt.Errorf("%s-%d: %w", tn, p.Partition, p.Err)
			}
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			v.parts = append(v.parts, rollingPartView{tn, p.Partition, p.Leader, p.LeaderEpoch, slices.Clone(p.Replicas), isr})
		}
	}
	return v, nil
}

// waitRollingCluster waits until ZooKeeper's view is settled (see
// rollingView.settled) and every broker's Metadata answer is that view:
// the same controller, brokers, and per partition the same leader, leader
// epoch, replicas and ISR.
func waitRollingCluster(t *testing.T, zkc *zkclient.Client, brokers []*rollingBroker, what string, preferred bool) {
	t.Helper()
	var last string
	deadline := time.Now().Add(kafkaStartTimeout)
	for {
		if last = rollingDisagreement(zkc, brokers, preferred); last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v:%s", what, kafkaStartTimeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rollingDisagreement says what is not yet as waitRollingCluster wants,
// "" when all is.
func rollingDisagreement(zkc *zkclient.Client, brokers []*rollingBroker, preferred bool) string {
	want, err := zkRollingView(zkc)
	if err != nil {
		return "\nZooKeeper: " + err.Error()
	}
	if err := want.settled(preferred); err != nil {
		return fmt.Sprintf("\nZooKeeper: %v\n  (%s)", err, want)
	}
	var out string
	for _, b := range brokers {
		got, err := metadataRollingView(b.Addr())
		switch {
		case err != nil:
			out += fmt.Sprintf("\n%s broker %d: %v", b.kind(), b.id, err)
		case got.String() != want.String():
			out += fmt.Sprintf("\n%s broker %d answers %s\n  ZooKeeper has %s", b.kind(), b.id, got, want)
		}
	}
	return out
}
