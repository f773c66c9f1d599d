package broker

// The coordinators' view of the cluster (coordhost.Cluster): partition
// leaders from the metadata cache, and inter-broker requests
// (WriteTxnMarkers to partition leaders, AddPartitionsToTxn to a
// transaction coordinator) on the inter-broker listener, each kind over
// its own pool of connections, one per destination broker (as Kafka's
// TransactionMarkerChannelManager and AddPartitionsToTxnManager each keep
// theirs), so a marker write waiting for replication does not hold up a
// produce's transaction check; share-partition state goes to the share
// coordinators over a third pool. The broker closes the pools on shutdown,
// after the coordinators (closeCoordConns).

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/controller/zkcontroller"
	"github.com/kbroker/kbroker/coordinator/consumer"
	"github.com/kbroker/kbroker/protocol/kconn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// coordCluster is coordhost.Cluster over the cluster node.
type coordCluster struct {
	b        *Broker
	listener string
}

var _ coordhost.Cluster = coordCluster{}

func (c coordCluster) BrokerID() int32 { return c.b.cfg.NodeID }

// Leader reads the metadata cache. Until the first UpdateMetadata has
// filled it, every partition counts as existing without a leader: an empty
// cache must not make the marker sender drop markers as if their topics
// were deleted.
func (c coordCluster) Leader(topic string, partition int32) (int32, bool) {
	s := c.b.cluster.cache.Snapshot()
	st, ok := s.Partition(topic, partition)
	if !ok {
		if s.ControllerID < 0 && len(s.Brokers) == 0 {
			return -1, true
		}
		return -1, false
	}
	if _, live := s.Brokers[st.Leader]; !live {
		return -1, true
	}
	return st.Leader, true
}

// Send sends req to broker's inter-broker endpoint (with the inter-broker
// listener's TLS and SASL settings) on the pooled connection for its kind
// and reads its answer within ctx.
func (c coordCluster) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	e, ok := c.b.cluster.cache.BrokerEndpoint(broker, c.listener)
	if !ok {
		return nil, fmt.Errorf("broker %d: %w", broker, zkcontroller.ErrNoEndpoint)
	}
	pool := c.b.cluster.coordConns
	switch req.Key() {
	case kmsg.WriteTxnMarkers.Int16():
		pool = c.b.cluster.markerConns
	case kmsg.InitializeShareGroupState.Int16(), kmsg.ReadShareGroupState.Int16(), kmsg.WriteShareGroupState.Int16(),
		kmsg.DeleteShareGroupState.Int16(), kmsg.ReadShareGroupStateSummary.Int16():
		pool = c.b.cluster.shareConns
	}
	return pool.RoundTrip(ctx, net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), req)
}

// LiveBrokers counts the brokers of the metadata cache.
func (c coordCluster) LiveBrokers() int { return len(c.b.cluster.cache.Snapshot().Brokers) }

// Topics lists the metadata cache's topics.
func (c coordCluster) Topics() []consumer.TopicInfo {
	s := c.b.cluster.cache.Snapshot()
	out := make([]consumer.TopicInfo, 0, len(s.Topics))
	for _, t := range s.Topics {
		out = append(out, consumer.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))})
	}
	return out
}

// openCoordConns makes the coordinators' connection pools (before
// SetCluster hands coordCluster to them).
func (b *Broker) openCoordConns() {
	opts := b.cluster.conn
	opts.ClientID = "broker-" + strconv.Itoa(int(b.cfg.NodeID)) + "-coordinator"
	b.cluster.coordConns = kconn.NewPool(opts)
	opts.ClientID = "broker-" + strconv.Itoa(int(b.cfg.NodeID)) + "-txn-markers"
	b.cluster.markerConns = kconn.NewPool(opts)
	opts.ClientID = "broker-" + strconv.Itoa(int(b.cfg.NodeID)) + "-share-state"
	b.cluster.shareConns = kconn.NewPool(opts)
}

// closeCoordConns closes the coordinators' connections; called once the
// coordinators and the request handlers have stopped.
func (b *Broker) closeCoordConns() {
	if b.cluster == nil || b.cluster.coordConns == nil {
		return
	}
	b.cluster.coordConns.Close()
	b.cluster.markerConns.Close()
	b.cluster.shareConns.Close()
}
