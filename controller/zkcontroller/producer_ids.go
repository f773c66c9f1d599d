package zkcontroller

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/controller/zkdata"
)

// ProducerIDBlockSize is the number of producer ids the controller hands a
// broker per AllocateProducerIds, Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
const ProducerIDBlockSize = 1000

// AllocateProducerIDs answers AllocateProducerIds (KIP-730) from broker id
// at brokerEpoch: a Kafka 3.x broker whose inter.broker.protocol.version
// is 3.0-IV0 or later asks the controller for its producer id blocks
// instead of claiming them in ZooKeeper itself. As Kafka's controller, it
// refuses an unregistered broker (BROKER_ID_NOT_REGISTERED) and another
// incarnation's epoch (STALE_BROKER_EPOCH), and otherwise claims the next
// block of /latest_producer_id_block for that broker, with the same
// version-checked write kbroker's own brokers use, so ids stay unique
// whichever kind claims them. A ZooKeeper error is returned as it is (the
// handler answers UNKNOWN_SERVER_ERROR, and Kafka's broker retries).
func (c *Controller) AllocateProducerIDs(ctx context.Context, id int32, brokerEpoch int64) (zkdata.ProducerIDBlock, error) {
	var out zkdata.ProducerIDBlock
	err := c.call(ctx, func() error {
		lb, ok := c.machine.Ctx.Live[id]
		switch {
		case !ok:
			return fmt.Errorf("AllocateProducerIds from broker %d: %w", id, kerr.BrokerIDNotRegistered)
		case lb.Epoch != brokerEpoch:
			return fmt.Errorf("AllocateProducerIds from broker %d at epoch %d, registered at %d: %w", id, brokerEpoch, lb.Epoch, kerr.StaleBrokerEpoch)
		}
		var err error
		out, err = c.zk.ClaimProducerIDBlock(id, ProducerIDBlockSize)
		if err != nil {
			return fmt.Errorf("AllocateProducerIds from broker %d: %w", id, err)
		}
		return nil
	})
	return out, err
}
