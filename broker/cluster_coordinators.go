package broker

// The coordinators' view of the cluster (coordhost.Cluster): partition
// leaders from the metadata cache, and one-off inter-broker requests
// (WriteTxnMarkers to partition leaders, AddPartitionsToTxn to a
// transaction coordinator) on the inter-broker listener.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/kbroker/kbroker/broker/coordhost"
	"github.com/kbroker/kbroker/controller/zkcontroller"
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

// Send dials broker's inter-broker endpoint (with the inter-broker
// listener's TLS and SASL settings), sends req and reads its answer within
// ctx.
func (c coordCluster) Send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	e, ok := c.b.cluster.cache.BrokerEndpoint(broker, c.listener)
	if !ok {
		return nil, fmt.Errorf("broker %d: %w", broker, zkcontroller.ErrNoEndpoint)
	}
	opts := c.b.cluster.conn
	opts.ClientID = "broker-" + strconv.Itoa(int(c.b.cfg.NodeID)) + "-coordinator"
	conn, err := kconn.Dial(ctx, net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), opts)
	if err != nil {
		return nil, err
	}
	defer conn.Close() // it also closes when ctx ends, which unblocks the round trip
	timeout := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return conn.RoundTrip(req, timeout)
}
