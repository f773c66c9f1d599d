package broker

import (
	"testing"

	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSingleNodeRefusesInterBrokerAPIs: without zookeeper.connect the
// controller → broker APIs and ControlledShutdown are neither advertised
// nor answered (the connection closes, as for any key a single node does
// not serve), so nothing changes for single-node users.
func TestSingleNodeRefusesInterBrokerAPIs(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	av := kmsg.NewPtrApiVersionsRequest()
	avr := kmsg.NewPtrApiVersionsResponse()
	if err := rawConn(t, b).roundTrip(av, avr); err != nil {
		t.Fatal(err)
	}
	for _, k := range avr.ApiKeys {
		if _, ib := protocol.InterBroker(k.ApiKey); ib {
			t.Errorf("a single node advertises %s", kmsg.NameForKey(k.ApiKey))
		}
	}
	for _, req := range []kmsg.Request{kmsg.NewPtrUpdateMetadataRequest(), kmsg.NewPtrLeaderAndISRRequest(),
		kmsg.NewPtrStopReplicaRequest(), kmsg.NewPtrControlledShutdownRequest()} {
		req.SetVersion(req.MaxVersion())
		if err := rawConn(t, b).roundTrip(req, req.ResponseKind()); err == nil {
			t.Errorf("%s answered on a single node", kmsg.NameForKey(req.Key()))
		}
	}
}
