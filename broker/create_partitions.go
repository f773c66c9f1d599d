package broker

// CreatePartitions v0–v3 (KIP-195): raises a topic's partition count. v1
// changed only throttling; v2 is flexible; v3 is identical to v2.
//
// Only growth is allowed: a count equal to or below the current one is
// INVALID_PARTITIONS. A manual Assignment must give one replica list per new
// partition, each naming only this broker once (INVALID_REPLICA_ASSIGNMENT
// otherwise). A topic named twice is INVALID_REQUEST. ValidateOnly checks
// without creating. New partitions are created empty, persisted in the
// metadata store, and served at once.

import (
	"fmt"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleCreatePartitions(_ *network.RequestContext, req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	count := map[string]int{}
	for _, rt := range req.Topics {
		count[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		var (
			kerrv *kerr.Error
			msg   string
		)
		if count[rt.Topic] > 1 {
			kerrv, msg = kerr.InvalidRequest, "Duplicate topic in request."
		} else {
			kerrv, msg = b.createPartitions(rt, req.ValidateOnly)
		}
		if kerrv != nil {
			st.ErrorCode = kerrv.Code
			if msg == "" {
				msg = kerrv.Message
			}
			st.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, st)
	}
	b.topicsChanged()
	return resp
}

func (b *Broker) createPartitions(rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) (*kerr.Error, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.mu.topics[rt.Topic]
	if !ok {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", rt.Topic)
	}
	cur := int32(len(t.partitions))
	switch {
	case rt.Count < cur:
		return kerr.InvalidPartitions, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", cur, rt.Count)
	case rt.Count == cur:
		return kerr.InvalidPartitions, fmt.Sprintf("Topic already has %d partitions.", cur)
	}
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != rt.Count-cur {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", rt.Count-cur, len(rt.Assignment))
		}
		for i, a := range rt.Assignment {
			if len(a.Replicas) != 1 || a.Replicas[0] != b.cfg.NodeID {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("Assignment of new partition %d names brokers %v; the only broker is %d.", cur+int32(i), a.Replicas, b.cfg.NodeID)
			}
		}
	}
	if validateOnly {
		return nil, ""
	}
	if err := b.store.AddPartitions(rt.Topic, rt.Count); err != nil {
		b.log.Error("adding partitions failed", "topic", rt.Topic, "err", err)
		return kerr.KafkaStorageError, err.Error()
	}
	meta := t.meta
	meta.Partitions = rt.Count
	nt := &topic{meta: meta, conf: t.conf, partitions: append(make([]*partition, 0, rt.Count), t.partitions...)}
	for i := cur; i < rt.Count; i++ {
		tp := storage.TopicPartition{Topic: meta.Name, Partition: i}
		dir := b.leastLoadedDir()
		log := dir.Log(tp)
		var err error
		if log == nil {
			log, err = dir.Create(tp, b.logConfig(meta.Configs))
		}
		var p *partition
		if err == nil {
			p, err = newPartition(nt, i, log, dir, b.partitionEnv())
		}
		if err != nil {
			// The store already has the new count: the missing logs are
			// created when the broker next opens its topics.
			b.log.Error("creating partition failed", "topic", meta.Name, "partition", i, "err", err)
			return kerr.KafkaStorageError, err.Error()
		}
		nt.partitions = append(nt.partitions, p)
	}
	b.mu.topics[meta.Name] = nt
	b.mu.byID[meta.ID] = nt
	b.log.Info("added partitions", "topic", meta.Name, "partitions", rt.Count)
	return nil, ""
}
