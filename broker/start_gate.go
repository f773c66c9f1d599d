package broker

import (
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startGateWait bounds how long a client's request waits for the broker to
// join its cluster; after it the request is answered as things stand.
const startGateWait = 30 * time.Second

// startGate holds clients' requests, in cluster mode, until the broker has
// joined its cluster (Start registered it, which may first wait out a
// previous process's ZooKeeper session), as Kafka processes no request
// before its startup ends. Before that its metadata is its log dirs and an
// empty broker list: a Metadata answer would make a client forget every
// other broker (franz-go then dials only its seeds), and a Produce answer
// UNKNOWN_TOPIC_OR_PARTITION makes it fail records. The controller's and
// other brokers' requests, and the handshake, pass at once.
func (b *Broker) startGate(next network.Handler) network.Handler {
	return network.HandlerFunc(func(rc *network.RequestContext, req protocol.Request) kmsg.Response {
		if b.cluster != nil && !b.ready.Load() && !passesStartGate(req.Header.APIKey) {
			t := time.NewTimer(startGateWait)
			select {
			case <-b.joined:
			case <-b.closing:
			case <-t.C:
			}
			t.Stop()
		}
		return next.Handle(rc, req)
	})
}

// passesStartGate reports whether a request of key is served before the
// broker joined: the handshake and what the controller or other brokers
// send (they address this broker only once it registered, and the
// controller may run here before Start returns).
func passesStartGate(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions, kmsg.SASLHandshake, kmsg.SASLAuthenticate,
		kmsg.LeaderAndISR, kmsg.StopReplica, kmsg.UpdateMetadata, kmsg.ControlledShutdown,
		kmsg.AlterPartition, kmsg.AllocateProducerIDs, kmsg.Fetch, kmsg.OffsetForLeaderEpoch,
		kmsg.WriteTxnMarkers:
		return true
	}
	return false
}
