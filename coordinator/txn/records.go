package txn

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// keyVersion is the only key version of __transaction_state records
// (TransactionLogKey, also CoordinatorRecordType TRANSACTION_LOG in Kafka
// 4). Records with other key versions are skipped on Replay, as Kafka does.
const keyVersion = 0

// ErrCorruptRecord is wrapped by the errors Replay returns for a record it
// cannot decode.
var ErrCorruptRecord = errors.New("corrupt __transaction_state record")

func txnKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = keyVersion
	k.TransactionalID = id
	return k.AppendTo(nil)
}

func tombstone(id string) Record {
	return Record{TxnID: id, Key: txnKey(id)}
}

// record encodes t as Kafka's TransactionLogValue: version 0 at
// transaction.version 0, else version 1 with the KIP-890 tagged fields
// (previous and next producer id, client transaction version). Empty
// writes a null partition list, every other state a list grouped by topic.
func (c *Coordinator) record(t *txn) Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	if c.cfg.TransactionVersion > tv0 {
		v.Version = 1
		v.PreviousProducerID = t.prevProducerID
		v.NextProducerID = t.nextProducerID
		v.ClientTransactionVersion = t.clientTV
	}
	v.ProducerID = t.producerID
	v.ProducerEpoch = t.epoch
	v.TimeoutMillis = t.timeoutMs
	v.State = kmsg.TransactionState(t.state)
	v.LastUpdateTimestamp = t.lastUpdateMs
	v.StartTimestamp = t.startMs
	if t.state != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, p := range t.sortedPartitions() {
			n := len(v.Topics)
			if n == 0 || v.Topics[n-1].Topic != p.Topic {
				vt := kmsg.NewTxnMetadataValueTopic()
				vt.Topic = p.Topic
				v.Topics = append(v.Topics, vt)
				n++
			}
			v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, p.Partition)
		}
	}
	return Record{TxnID: t.id, Key: txnKey(t.id), Value: v.AppendTo(nil)}
}

// Replay applies one __transaction_state record, in log order, to rebuild
// state. A nil value is a tombstone. Records with an unknown key version
// are skipped. Replay is meant for a Coordinator that has not yet served
// requests for the partition; call Loaded once the partitions are replayed.
func (c *Coordinator) Replay(key, value []byte) error {
	if len(key) < 2 {
		return fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != keyVersion {
		if v < 0 {
			return fmt.Errorf("%w: key version %d", ErrCorruptRecord, v)
		}
		return nil
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return fmt.Errorf("%w: key: %v", ErrCorruptRecord, err)
	}
	if value == nil {
		delete(c.txns, k.TransactionalID)
		return nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return fmt.Errorf("%w: value for %q: %v", ErrCorruptRecord, k.TransactionalID, err)
	}
	if v.Version < 0 || v.Version > 1 {
		return fmt.Errorf("%w: value version %d for %q", ErrCorruptRecord, v.Version, k.TransactionalID)
	}
	st := State(v.State)
	switch {
	case st < Empty || st > CompleteAbort:
		// Dead and PrepareEpochFence are never written by Kafka.
		return fmt.Errorf("%w: state %d for %q", ErrCorruptRecord, v.State, k.TransactionalID)
	case v.ProducerID < 0 || v.ProducerEpoch < 0:
		return fmt.Errorf("%w: producer %d epoch %d for %q", ErrCorruptRecord, v.ProducerID, v.ProducerEpoch, k.TransactionalID)
	}
	t := &txn{
		id:             k.TransactionalID,
		producerID:     v.ProducerID,
		epoch:          v.ProducerEpoch,
		lastEpoch:      noEpoch,
		prevProducerID: v.PreviousProducerID,
		nextProducerID: v.NextProducerID,
		timeoutMs:      v.TimeoutMillis,
		state:          st,
		partitions:     map[TopicPartition]struct{}{},
		startMs:        v.StartTimestamp,
		lastUpdateMs:   v.LastUpdateTimestamp,
		clientTV:       v.ClientTransactionVersion,
	}
	if st == Ongoing || st == PrepareCommit || st == PrepareAbort {
		for _, vt := range v.Topics {
			for _, p := range vt.Partitions {
				t.partitions[TopicPartition{vt.Topic, p}] = struct{}{}
			}
		}
	}
	if st != PrepareCommit && st != PrepareAbort {
		t.nextProducerID = noProducerID
	}
	c.txns[t.id] = t
	return nil
}
