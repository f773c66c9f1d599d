package coordhost

// Transactional produces to a partition whose transactional id another
// broker coordinates (cluster mode). The partition leader checks the
// partition against the producer's open transaction (KIP-890 part 1), or
// adds it (Produce v12+, TxnOffsetCommit v5+: part 2), by sending
// AddPartitionsToTxn v5 for that one transaction to the coordinator, the
// leader of the id's __transaction_state partition in the metadata cache,
// as Kafka's AddPartitionsToTxnManager does. As in Kafka, a partition that
// already holds an open transaction of this producer epoch needs no check,
// and an answer that only means "try again" (the coordinator moved, is
// loading, is finishing the previous transaction, or could not be reached)
// becomes NOT_ENOUGH_REPLICAS, which producers retry.

import (
	"context"
	"time"

	"github.com/kbroker/kbroker/coordinator/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCheckTimeout bounds the round trip to a remote transaction coordinator.
const txnCheckTimeout = 10 * time.Second

// txnCoordinatorElsewhere returns the broker that coordinates txnID when
// that is not this one (cluster mode only); -1 when no broker does right
// now.
func (h *Host) txnCoordinatorElsewhere(txnID string) (broker int32, elsewhere bool) {
	if h.cluster == nil {
		return 0, false
	}
	n := h.cfg.TransactionStateLogNumPartitions
	t := h.rm.TopicByName(txnStateTopic)
	if t != nil && len(t.Partitions) > 0 {
		n = int32(len(t.Partitions))
	}
	part := txn.PartitionFor(txnID, n)
	if t != nil && int(part) < len(t.Partitions) && t.Partitions[part].IsLeader() {
		return 0, false
	}
	leader, ok := h.cluster.Leader(txnStateTopic, part)
	if !ok {
		leader = -1
	}
	if leader == h.cluster.BrokerID() {
		// The cache names this broker but the partition has not become
		// leader here yet: wait for LeaderAndIsr.
		leader = -1
	}
	return leader, true
}

// inOpenTxn reports whether topic-partition holds an open transaction of
// producerID at epoch: it was verified (or added) already.
func (h *Host) inOpenTxn(producerID int64, epoch int16, topic string, partition int32) bool {
	p := h.rm.PartitionOf(topic, partition)
	if p == nil {
		return false
	}
	for _, ap := range p.ActiveProducers() {
		if ap.ProducerID == producerID {
			return ap.ProducerEpoch == int32(epoch) && ap.CurrentTxnStartOffset >= 0
		}
	}
	return false
}

// remoteTxnPartition verifies (verifyOnly) or adds topic-partition to
// txnID's open transaction at the coordinator broker. It returns 0 or the
// Kafka error code for the produce.
func (h *Host) remoteTxnPartition(broker int32, txnID string, producerID int64, epoch int16, topic string, partition int32, verifyOnly bool) int16 {
	if h.inOpenTxn(producerID, epoch, topic, partition) {
		return 0
	}
	if broker < 0 {
		return kerr.NotEnoughReplicas.Code
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = txnID, producerID, epoch, verifyOnly
	tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{partition}}}
	req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{tr}
	ctx, cancel := context.WithTimeout(context.Background(), txnCheckTimeout)
	defer cancel()
	resp, err := h.cluster.Send(ctx, broker, req)
	if err != nil {
		h.log.Warn("reaching the transaction coordinator failed", "transactional_id", txnID, "broker", broker, "err", err)
		return kerr.NotEnoughReplicas.Code
	}
	r, ok := resp.(*kmsg.AddPartitionsToTxnResponse)
	if !ok {
		return kerr.UnknownServerError.Code
	}
	code := r.ErrorCode
	for _, t := range r.Transactions {
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				if code == 0 {
					code = p.ErrorCode
				}
			}
		}
	}
	if code == 0 && len(r.Transactions) == 0 {
		code = kerr.UnknownServerError.Code
	}
	return produceCodeOfTxnCheck(code)
}

// produceCodeOfTxnCheck maps a coordinator's answer that only asks to try
// again onto NOT_ENOUGH_REPLICAS, which producers retry (Kafka's
// ReplicaManager does the same with verification errors).
func produceCodeOfTxnCheck(code int16) int16 {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.RequestTimedOut.Code:
		return kerr.NotEnoughReplicas.Code
	}
	return code
}
