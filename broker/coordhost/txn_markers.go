package coordhost

import (
	"errors"

	"github.com/kbroker/kbroker/broker/replica"
	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// WriteTxnMarker writes one transaction marker that arrived from outside
// this broker's transaction coordinator (WriteTxnMarkers: an admin
// aborting a hanging transaction, or in a cluster another broker's
// coordinator) to p, and calls done with the partition's error code once
// the append is acknowledged. A marker on __consumer_offsets also settles
// the producer's pending transactional offsets there, as the coordinator's
// own markers do (txns.writeMarkersLocked).
//
// A marker older than the producer's epoch on p is INVALID_PRODUCER_EPOCH,
// as Kafka's ProducerStateManager answers. Kafka also fences a marker whose
// coordinator epoch is below the last one the partition saw; kbroker keeps
// no coordinator epoch per producer (DescribeProducers reports -1), so
// that check has nothing to compare.
func (h *Host) WriteTxnMarker(p *replica.Partition, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, done func(code int16)) {
	for _, ap := range p.ActiveProducers() {
		if ap.ProducerID == producerID && int32(epoch) < ap.ProducerEpoch {
			done(kerr.InvalidProducerEpoch.Code)
			return
		}
	}
	ct := records.ControlAbort
	if commit {
		ct = records.ControlCommit
	}
	part := p.Index
	offsets := p.Topic.Meta.Name == offsetsTopic
	h.rm.AppendMarker(p, producerID, epoch, ct, coordinatorEpoch, h.now().UnixMilli(), func(err error) {
		if err != nil {
			code := kerr.KafkaStorageError.Code
			var ke *kerr.Error
			if errors.As(err, &ke) {
				code = ke.Code // NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, ...
			} else {
				h.log.Error("writing a transaction marker failed", "topic", p.Topic.Meta.Name, "partition", part, "producer_id", producerID, "err", err)
			}
			done(code)
			return
		}
		if offsets {
			h.groups.completeTxnOffsets(producerID, part, commit)
		}
		done(0)
	})
}
