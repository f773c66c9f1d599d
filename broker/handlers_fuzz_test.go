package broker

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/network"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzTimeout bounds one handler call in FuzzHandlers: the fuzzer caps
// every timeout a request carries (rebalance, session, long poll) far below
// it, so a call that takes longer is a hang.
const fuzzTimeout = 10 * time.Second

// FuzzHandlers decodes arbitrary request bytes as the connection does and
// hands whatever decodes to the handlers of a real broker, for every API
// ApiVersions advertises — the group, transaction and share APIs included,
// with the timeouts they carry capped so that rebalances and long polls end
// at once: no input may panic or hang, and every answer must encode.
func FuzzHandlers(f *testing.F) {
	b := startTestBroker(f, f.TempDir(), map[string]string{
		"num.partitions":                       "2",
		"offsets.topic.num.partitions":         "2",
		"transaction.state.log.num.partitions": "2",
		"group.initial.rebalance.delay.ms":     "0",
		"group.min.session.timeout.ms":         "1",
		"group.max.session.timeout.ms":         "200",
		"transaction.max.timeout.ms":           "60000",
	})
	topic, kerrv, msg := b.rm.CreateTopic("fuzz", 2, 1, nil, false)
	if kerrv != nil {
		f.Fatalf("creating the seed topic: %v %s", kerrv, msg)
	}
	for _, k := range protocol.SupportedKeys() {
		req := kmsg.RequestForKey(k)
		vr, _ := protocol.Supported(k)
		for v := vr.Min; v <= vr.Max; v++ {
			req.SetVersion(v)
			f.Add(k, v, req.AppendTo(nil))
		}
	}
	for _, s := range fuzzSeeds(topic.Meta.ID) {
		vr, _ := protocol.Supported(s.Key())
		for v := vr.Min; v <= vr.Max; v++ {
			s.SetVersion(v)
			f.Add(s.Key(), v, s.AppendTo(nil))
		}
	}

	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		vr, ok := protocol.Supported(key)
		if !ok || version < vr.Min || version > vr.Max {
			return
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.ReadFrom(body) != nil {
			return
		}
		if !tameFuzzedRequest(req) {
			return
		}
		pr := protocol.Request{Header: protocol.RequestHeader{APIKey: key, APIVersion: version, ClientID: "fuzz"}, Body: req}
		done := make(chan kmsg.Response, 1)
		go func() {
			done <- b.api.Handle(&network.RequestContext{Header: pr.Header, Principal: network.AnonymousPrincipal, RemoteAddr: "127.0.0.1:1"}, pr)
		}()
		select {
		case resp := <-done:
			if resp != nil {
				_ = protocol.AppendResponse(nil, 1, resp)
			}
		case <-time.After(fuzzTimeout):
			t.Fatalf("%s v%d did not answer in %v", kmsg.NameForKey(key), version, fuzzTimeout)
		}
	})
}

// tameFuzzedRequest caps the timeouts and sizes a request carries so the
// fuzzer neither waits nor builds thousands of logs; false skips a request
// that is legal but only slow.
func tameFuzzedRequest(req kmsg.Request) bool {
	capMs := func(v *int32, max int32) {
		if *v > max || *v < 0 {
			*v = max
		}
	}
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		r.MaxWaitMillis = 0 // no long polls in a fuzzer
	case *kmsg.ShareFetchRequest:
		r.MaxWaitMillis = 0
	case *kmsg.JoinGroupRequest:
		capMs(&r.SessionTimeoutMillis, 100)
		capMs(&r.RebalanceTimeoutMillis, 100)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		capMs(&r.RebalanceTimeoutMillis, 100)
	case *kmsg.CreateTopicsRequest:
		for _, t := range r.Topics {
			if t.NumPartitions > 64 || len(t.ReplicaAssignment) > 64 {
				return false // legal, but creating thousands of logs only slows the fuzzer
			}
		}
	case *kmsg.CreatePartitionsRequest:
		for _, t := range r.Topics {
			if t.Count > 64 {
				return false
			}
		}
	}
	return true
}

// fuzzSeeds are well-formed requests of the stateful APIs, so the fuzzer
// starts from inputs that reach the coordinators instead of failing their
// first checks.
func fuzzSeeds(topicID [16]byte) []kmsg.Request {
	topic := "fuzz"
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 100, 100
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1, 0, 0, 0, 1, 0, 4, 'f', 'u', 'z', 'z', 0, 0, 0, 0}}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g", 1, "m"
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: []byte{0, 1}}}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "g", 1, "m"
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "g", "m"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation, commit.MemberID = "g", -1, ""
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "g"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
	cgh := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cgh.Group, cgh.MemberEpoch, cgh.RebalanceTimeoutMillis = "cg", 0, 100
	cgh.SubscribedTopicNames = []string{topic}
	txnID := "t"
	initPID := kmsg.NewPtrInitProducerIDRequest()
	initPID.TransactionalID, initPID.TransactionTimeoutMillis = &txnID, 1000
	initPID.ProducerID, initPID.ProducerEpoch = -1, -1
	addParts := kmsg.NewPtrAddPartitionsToTxnRequest()
	addParts.TransactionalID, addParts.ProducerID = txnID, 1
	addParts.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	addParts.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: txnID, ProducerID: 1,
		Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: topic, Partitions: []int32{0}}}}}
	addOffs := kmsg.NewPtrAddOffsetsToTxnRequest()
	addOffs.TransactionalID, addOffs.ProducerID, addOffs.Group = txnID, 1, "g"
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.Commit = txnID, 1, true
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.Generation = txnID, "g", 1, -1
	toc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	sgh := kmsg.NewPtrShareGroupHeartbeatRequest()
	sgh.GroupID, sgh.MemberID, sgh.MemberEpoch = "s", "sm", 0
	sgh.SubscribedTopicNames = []string{topic}
	sf := kmsg.NewPtrShareFetchRequest()
	group, member := "s", "sm"
	sf.GroupID, sf.MemberID, sf.ShareSessionEpoch, sf.MaxBytes, sf.MaxRecords = &group, &member, 0, 1<<20, 100
	sf.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: topicID, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID, sa.ShareSessionEpoch = &group, &member, 1
	sa.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: topicID, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0,
		AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}}}}}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	return []kmsg.Request{join, sync, hb, leave, commit, fetch, cgh, initPID, addParts, addOffs, end, toc, sgh, sf, sa, meta}
}
