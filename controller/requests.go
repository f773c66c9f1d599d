package controller

import (
	"sort"

	"github.com/kbroker/kbroker/controller/zkdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions of the controller → broker requests at the default
// inter.broker.protocol.version, those Kafka 3.9 sends in ZooKeeper mode
// (IBP ≥ 3.4); Context.IBP picks older ones (protocol.IBP).
const (
	LeaderAndISRVersion   int16 = 7
	UpdateMetadataVersion int16 = 8
	StopReplicaVersion    int16 = 4
)

// Leader and epoch sentinels of a partition whose topic is being deleted
// (Kafka's LeaderAndIsr.LeaderDuringDelete / EpochDuringDelete).
const (
	LeaderDuringDelete int32 = -2
	EpochDuringDelete  int32 = -2
)

// Send is one request for one broker. A controller channel sends them to a
// broker in slice order.
type Send struct {
	Broker int32
	Req    kmsg.Request
}

// Batch collects what one controller decision tells the brokers (Kafka's
// ControllerBrokerRequestBatch) and turns it into requests with Build: per
// broker one LeaderAndIsr, then one UpdateMetadata, then one StopReplica.
type Batch struct {
	leaderAndISR map[int32]map[TopicPartition]bool // broker → partition → isNew
	umBrokers    map[int32]bool
	umParts      map[TopicPartition]bool
	stop         map[int32]map[TopicPartition]bool // broker → partition → delete
}

// NewBatch returns an empty batch.
func NewBatch() *Batch {
	return &Batch{
		leaderAndISR: map[int32]map[TopicPartition]bool{}, umBrokers: map[int32]bool{},
		umParts: map[TopicPartition]bool{}, stop: map[int32]map[TopicPartition]bool{},
	}
}

// Empty reports whether the batch holds nothing to send.
func (b *Batch) Empty() bool {
	return len(b.leaderAndISR) == 0 && len(b.umBrokers) == 0 && len(b.stop) == 0
}

// LeaderAndISR tells brokers tp's leader, ISR and replicas; like Kafka it
// also queues an UpdateMetadata of tp for every live broker.
func (b *Batch) LeaderAndISR(c *Context, brokers []int32, tp TopicPartition, isNew bool) {
	for _, id := range brokers {
		if !c.IsLive(id) {
			continue
		}
		m := b.leaderAndISR[id]
		if m == nil {
			m = map[TopicPartition]bool{}
			b.leaderAndISR[id] = m
		}
		m[tp] = m[tp] || isNew
	}
	b.UpdateMetadata(c, c.LiveIDs(), tp)
}

// UpdateMetadata sends the live broker list and the given partitions' state
// to brokers (no partitions: brokers only).
func (b *Batch) UpdateMetadata(c *Context, brokers []int32, tps ...TopicPartition) {
	for _, id := range brokers {
		if c.IsLive(id) {
			b.umBrokers[id] = true
		}
	}
	for _, tp := range tps {
		b.umParts[tp] = true
	}
}

// StopReplica tells broker to stop fetching/leading tp and, with del, to
// delete its log.
func (b *Batch) StopReplica(c *Context, broker int32, tp TopicPartition, del bool) {
	if !c.IsLive(broker) {
		return
	}
	m := b.stop[broker]
	if m == nil {
		m = map[TopicPartition]bool{}
		b.stop[broker] = m
	}
	m[tp] = m[tp] || del
}

// Build turns the batch into requests stamped with the controller id and
// epoch and each target's broker epoch, in broker order.
func (b *Batch) Build(c *Context) []Send {
	ids := map[int32]bool{}
	for id := range b.leaderAndISR {
		ids[id] = true
	}
	for id := range b.umBrokers {
		ids[id] = true
	}
	for id := range b.stop {
		ids[id] = true
	}
	sorted := make([]int32, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var out []Send
	for _, id := range sorted {
		epoch := c.Live[id].Epoch
		if parts := b.leaderAndISR[id]; len(parts) > 0 {
			out = append(out, Send{id, c.leaderAndISRRequest(epoch, parts)})
		}
		if b.umBrokers[id] {
			out = append(out, Send{id, c.updateMetadataRequest(epoch, b.umParts)})
		}
		if parts := b.stop[id]; len(parts) > 0 {
			out = append(out, Send{id, c.stopReplicaRequest(epoch, parts)})
		}
	}
	return out
}

func sortedKeys(m map[TopicPartition]bool) []TopicPartition {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	return tps
}

func (c *Context) leaderAndISRRequest(brokerEpoch int64, parts map[TopicPartition]bool) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = c.IBP.LeaderAndISRVersion()
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = c.ControllerID, c.Epoch, brokerEpoch
	leaders := map[int32]bool{}
	var topic *kmsg.LeaderAndISRRequestTopicState
	for _, tp := range sortedKeys(parts) {
		if topic == nil || topic.Topic != tp.Topic {
			req.TopicStates = append(req.TopicStates, kmsg.NewLeaderAndISRRequestTopicState())
			topic = &req.TopicStates[len(req.TopicStates)-1]
			topic.Topic = tp.Topic
			if t := c.Topics[tp.Topic]; t != nil {
				topic.TopicID = t.ID
			}
		}
		st := c.States[tp]
		a, _ := c.Assignment(tp)
		p := kmsg.NewLeaderAndISRRequestTopicPartition()
		p.Partition = tp.Partition
		p.ControllerEpoch, p.Leader, p.LeaderEpoch = st.ControllerEpoch, st.Leader, st.LeaderEpoch
		p.ISR, p.ZKVersion, p.Replicas = nonNil(st.ISR), st.ZkVersion, nonNil(a.Replicas)
		p.AddingReplicas, p.RemovingReplicas = nonNil(a.Adding), nonNil(a.Removing)
		p.IsNew, p.LeaderRecoveryState = parts[tp], st.LeaderRecoveryState
		topic.PartitionStates = append(topic.PartitionStates, p)
		if st.Leader >= 0 {
			leaders[st.Leader] = true
		}
	}
	for _, id := range c.LiveIDs() {
		if !leaders[id] {
			continue
		}
		ep, ok := c.Live[id].Registration.Endpoint(c.Listener)
		if !ok {
			continue
		}
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		l.BrokerID, l.Host, l.Port = id, ep.Host, ep.Port
		req.LiveLeaders = append(req.LiveLeaders, l)
	}
	return req
}

// securityProtocolIDs are Kafka's SecurityProtocol ids.
var securityProtocolIDs = map[string]int16{"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

func (c *Context) updateMetadataRequest(brokerEpoch int64, parts map[TopicPartition]bool) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = c.IBP.UpdateMetadataVersion()
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = c.ControllerID, c.Epoch, brokerEpoch
	var topic *kmsg.UpdateMetadataRequestTopicState
	for _, tp := range sortedKeys(parts) {
		st, ok := c.States[tp]
		if !ok {
			continue
		}
		if topic == nil || topic.Topic != tp.Topic {
			req.TopicStates = append(req.TopicStates, kmsg.NewUpdateMetadataRequestTopicState())
			topic = &req.TopicStates[len(req.TopicStates)-1]
			topic.Topic = tp.Topic
			if t := c.Topics[tp.Topic]; t != nil {
				topic.TopicID = t.ID
			}
		}
		a, _ := c.Assignment(tp)
		p := kmsg.NewUpdateMetadataRequestTopicPartition()
		p.Partition = tp.Partition
		p.ControllerEpoch, p.Leader, p.LeaderEpoch = st.ControllerEpoch, st.Leader, st.LeaderEpoch
		if c.Deleting[tp.Topic] {
			p.Leader = LeaderDuringDelete
		}
		p.ISR, p.ZKVersion, p.Replicas = nonNil(st.ISR), st.ZkVersion, nonNil(a.Replicas)
		p.OfflineReplicas = filter(a.Replicas, func(id int32) bool { return !c.IsReplicaOnline(id, tp) })
		topic.PartitionStates = append(topic.PartitionStates, p)
	}
	for _, id := range c.LiveIDs() {
		reg := c.Live[id].Registration
		b := kmsg.NewUpdateMetadataRequestLiveBroker()
		b.ID = id
		if reg.Rack != "" {
			rack := reg.Rack
			b.Rack = &rack
		}
		for _, e := range reg.Endpoints {
			ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
			ep.Host, ep.Port, ep.ListenerName = e.Host, e.Port, e.Listener
			ep.SecurityProtocol = securityProtocolIDs[e.SecurityProtocol]
			b.Endpoints = append(b.Endpoints, ep)
		}
		req.LiveBrokers = append(req.LiveBrokers, b)
	}
	return req
}

func (c *Context) stopReplicaRequest(brokerEpoch int64, parts map[TopicPartition]bool) *kmsg.StopReplicaRequest {
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version = c.IBP.StopReplicaVersion()
	req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = c.ControllerID, c.Epoch, brokerEpoch
	var topic *kmsg.StopReplicaRequestTopic
	for _, tp := range sortedKeys(parts) {
		if topic == nil || topic.Topic != tp.Topic {
			req.Topics = append(req.Topics, kmsg.NewStopReplicaRequestTopic())
			topic = &req.Topics[len(req.Topics)-1]
			topic.Topic = tp.Topic
		}
		p := kmsg.NewStopReplicaRequestTopicPartitionState()
		p.Partition, p.Delete = tp.Partition, parts[tp]
		p.LeaderEpoch = -1 // unknown: the broker then stops whatever epoch it has
		if st, ok := c.States[tp]; ok {
			p.LeaderEpoch = st.LeaderEpoch
		}
		if c.Deleting[tp.Topic] {
			p.LeaderEpoch = EpochDuringDelete
		}
		topic.PartitionStates = append(topic.PartitionStates, p)
	}
	return req
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return append([]int32(nil), s...)
}

// stateWithEpoch stamps a state with the controller epoch that writes it.
func (c *Context) stateWithEpoch(s zkdata.PartitionState) zkdata.PartitionState {
	s.ControllerEpoch = c.Epoch
	return s
}
