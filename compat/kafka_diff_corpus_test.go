package compat

// The request corpus of TestKafkaDiffCorpus, in the order it is sent: the
// everyday requests and their error paths (unknown topic, bad partition,
// offset out of range, wrong leader epoch, invalid config, unknown member,
// illegal generation, transactional state errors).

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	diffTopic = "diff-t"
	diffGroup = "diff-g"
)

func strp(s string) *string { return &s }

func diffCreateTopic(name string, partitions int32, validateOnly bool, configs map[string]string) func(*diffConn) kmsg.Request {
	return func(*diffConn) kmsg.Request {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10000
		req.ValidateOnly = validateOnly
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = name, partitions, 1
		for k, v := range configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, strp(v)
			tp.Configs = append(tp.Configs, c)
		}
		req.Topics = append(req.Topics, tp)
		return req
	}
}

func diffMetadata(topics ...string) func(*diffConn) kmsg.Request {
	return func(*diffConn) kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		// v4+: no auto-creation (v0-3 always ask for it).
		req.AllowAutoTopicCreation = false
		for _, name := range topics {
			tp := kmsg.NewMetadataRequestTopic()
			tp.Topic = strp(name)
			req.Topics = append(req.Topics, tp)
		}
		return req
	}
}

func diffProduce(topic string, partition int32) func(*diffConn) kmsg.Request {
	return func(c *diffConn) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic, tp.TopicID = topic, c.topicIDs[topic]
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = partition, rawBatch(-1, -1, -1, 3, "diff")
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		return req
	}
}

func diffListOffsets(topic string, partition int32, ts int64) func(*diffConn) kmsg.Request {
	return func(*diffConn) kmsg.Request {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		tp := kmsg.NewListOffsetsRequestTopic()
		tp.Topic = topic
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp, p.CurrentLeaderEpoch = partition, ts, -1
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		return req
	}
}

// diffOffsetFetch fetches group's offset of partition 0 of topic, by name
// and (v10) by id; an unknown topic gets a made-up id.
func diffOffsetFetch(group, topic string) func(*diffConn) kmsg.Request {
	return func(c *diffConn) kmsg.Request {
		id, ok := c.topicIDs[topic]
		if !ok {
			id = [16]byte{1}
		}
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		tp := kmsg.NewOffsetFetchRequestTopic()
		tp.Topic, tp.Partitions = topic, []int32{0}
		req.Topics = []kmsg.OffsetFetchRequestTopic{tp}
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.TopicID, gt.Partitions = topic, id, []int32{0}
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{gt}
		req.Groups = []kmsg.OffsetFetchRequestGroup{g}
		return req
	}
}

func diffFetch(topic string, partition int32, offset int64, leaderEpoch int32) func(*diffConn) kmsg.Request {
	return func(c *diffConn) kmsg.Request {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
		req.SessionEpoch = -1
		tp := kmsg.NewFetchRequestTopic()
		tp.Topic, tp.TopicID = topic, c.topicIDs[topic]
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.PartitionMaxBytes = partition, offset, 1<<20
		p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.LogStartOffset = leaderEpoch, -1, -1
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		return req
	}
}

// diffPID is the n-th newest producer id and epoch c got for txnID (n=0:
// the newest), or -1/-1.
func diffPID(c *diffConn, txnID string, n int) (int64, int16) {
	l := c.pids[txnID]
	if len(l) <= n {
		return -1, -1
	}
	p := l[len(l)-1-n]
	return p[0], int16(p[1])
}

func diffInitPID(txnID string) func(*diffConn) kmsg.Request {
	return func(*diffConn) kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = 60000, -1, -1
		if txnID != "" {
			req.TransactionalID = strp(txnID)
		}
		return req
	}
}

// diffProduceSeq produces n records as producer (txnID's n-th newest id)
// with first sequence seq.
func diffProduceSeq(topic, txnID string, nth int, seq int32, n int) func(*diffConn) kmsg.Request {
	return func(c *diffConn) kmsg.Request {
		pid, epoch := diffPID(c, txnID, nth)
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10000
		if txnID != "" {
			req.TransactionID = strp(txnID)
		}
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic, tp.TopicID = topic, c.topicIDs[topic]
		p := kmsg.NewProduceRequestTopicPartition()
		p.Partition, p.Records = 0, rawBatch(pid, epoch, seq, n, "seq")
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		return req
	}
}

func diffCorpus() []diffStep {
	return []diffStep{
		// Topics: create, exists, invalid partitions and configs, metadata.
		{name: "metadata-unknown-topic", build: diffMetadata("no-such-topic"), minVersion: 4},
		{name: "create-topic", build: diffCreateTopic(diffTopic, 3, false, nil)},
		{name: "create-topic-validate-only", build: diffCreateTopic("diff-validate", 2, true, map[string]string{"retention.ms": "1000"})},
		{name: "create-topic-bad-partitions", build: diffCreateTopic("diff-bad", -5, false, nil)},
		{name: "create-topic-invalid-config", build: diffCreateTopic("diff-bad-config", 1, false, map[string]string{"cleanup.policy": "bogus"})},
		{name: "create-topic-unknown-config", build: diffCreateTopic("diff-unknown-config", 1, false, map[string]string{"no.such.config": "1"})},
		{name: "metadata-topic", build: diffMetadata(diffTopic)},

		// Produce and read back: bad partition, unknown topic, offsets.
		{name: "produce", build: diffProduce(diffTopic, 0)},
		{name: "produce-bad-partition", build: diffProduce(diffTopic, 99)},
		{name: "produce-unknown-topic", build: diffProduce("no-such-topic", 0)},
		{name: "list-offsets-latest", build: diffListOffsets(diffTopic, 0, -1)},
		{name: "list-offsets-earliest", build: diffListOffsets(diffTopic, 0, -2)},
		{name: "list-offsets-bad-partition", build: diffListOffsets(diffTopic, 99, -1)},
		{name: "list-offsets-max-timestamp", build: diffListOffsets(diffTopic, 0, -3), minVersion: 7},
		{name: "list-offsets-earliest-local", build: diffListOffsets(diffTopic, 0, -4), minVersion: 8},
		{name: "list-offsets-latest-tiered", build: diffListOffsets(diffTopic, 0, -5), minVersion: 9},
		{name: "list-offsets-earliest-pending-upload", build: diffListOffsets(diffTopic, 0, -6), minVersion: 11},
		{name: "fetch-out-of-range", build: diffFetch(diffTopic, 0, 1000, -1)},
		{name: "fetch-wrong-leader-epoch", build: diffFetch(diffTopic, 0, 0, 99)},
		{name: "fetch-bad-partition", build: diffFetch(diffTopic, 99, 0, -1)},

		// Groups: unknown members, illegal generation, empty groups.
		{name: "find-coordinator", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorKeys = diffGroup, []string{diffGroup}
			return req
		}},
		{name: "offset-fetch-unknown-group", build: diffOffsetFetch(diffGroup, diffTopic)},
		{name: "heartbeat-unknown-member", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation, req.MemberID = diffGroup, 1, "no-such-member"
			return req
		}},
		{name: "sync-group-unknown-member", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.Generation, req.MemberID = diffGroup, 1, "no-such-member"
			req.ProtocolType, req.Protocol = strp("consumer"), strp("range")
			return req
		}},
		{name: "leave-group-unknown-member", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group, req.MemberID = diffGroup, "no-such-member"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "no-such-member"
			req.Members = []kmsg.LeaveGroupRequestMember{m}
			return req
		}},
		{name: "offset-commit-illegal-generation", build: func(c *diffConn) kmsg.Request {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation, req.MemberID = diffGroup, 7, "no-such-member"
			tp := kmsg.NewOffsetCommitRequestTopic()
			tp.Topic, tp.TopicID = diffTopic, c.topicIDs[diffTopic]
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = 0, 1, -1
			tp.Partitions = append(tp.Partitions, p)
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "describe-groups-unknown", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{"no-such-group"}
			return req
		}},
		{name: "list-groups", build: func(*diffConn) kmsg.Request { return kmsg.NewPtrListGroupsRequest() }},

		// Configs.
		{name: "describe-configs-topic", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDescribeConfigsRequest()
			r := kmsg.NewDescribeConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, diffTopic
			r.ConfigNames = []string{"retention.ms", "cleanup.policy", "max.message.bytes", "min.insync.replicas"}
			req.Resources = append(req.Resources, r)
			req.IncludeSynonyms = true
			return req
		}},
		{name: "incremental-alter-configs-invalid", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r := kmsg.NewIncrementalAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, diffTopic
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value, c.Op = "retention.ms", strp("not-a-number"), kmsg.IncrementalAlterConfigOpSet
			r.Configs = append(r.Configs, c)
			req.Resources = append(req.Resources, r)
			return req
		}},

		// Producer ids and transactional state errors.
		{name: "init-producer-id", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = 60000, -1, -1
			return req
		}},
		{name: "find-coordinator-txn", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType = 1
			req.CoordinatorKey, req.CoordinatorKeys = "no-such-txn", []string{"no-such-txn"}
			return req
		}, minVersion: 1},
		{name: "add-partitions-to-txn-unknown-id", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = "no-such-txn", 12345, 0
			tp := kmsg.NewAddPartitionsToTxnRequestTopic()
			tp.Topic, tp.Partitions = diffTopic, []int32{0}
			req.Topics = append(req.Topics, tp)
			return req
		}, maxVersion: 3}, // v4+ is the brokers' batched form
		{name: "end-txn-unknown-id", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "no-such-txn", 12345, 0, true
			return req
		}},

		// Idempotent producers: an out-of-order sequence, a too-large batch.
		{name: "init-producer-id-idempotent", build: diffInitPID(""), minVersion: 2},
		{name: "produce-out-of-order-sequence", build: diffProduceSeq(diffTopic, "", 0, 5, 1), minVersion: 3},
		{name: "create-topic-small", build: diffCreateTopic("diff-small", 1, false, map[string]string{"max.message.bytes": "200"}), minVersion: 7},
		{name: "produce-too-large", build: func(c *diffConn) kmsg.Request {
			req := diffProduce("diff-small", 0)(c).(*kmsg.ProduceRequest)
			req.Topics[0].TopicID = c.topicIDs["diff-small"]
			req.Topics[0].Partitions[0].Records = rawBatch(-1, -1, -1, 20, "too-large")
			return req
		}},

		// Transactions: a fenced producer, offsets to a group.
		{name: "init-producer-id-txn", build: diffInitPID("diff-txn"), minVersion: 3, maxVersion: 3},
		{name: "init-producer-id-txn-again", build: diffInitPID("diff-txn"), minVersion: 3, maxVersion: 3},
		{name: "add-partitions-to-txn-fenced", build: func(c *diffConn) kmsg.Request {
			pid, epoch := diffPID(c, "diff-txn", 1) // the older, fenced epoch
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = "diff-txn", pid, epoch
			tp := kmsg.NewAddPartitionsToTxnRequestTopic()
			tp.Topic, tp.Partitions = diffTopic, []int32{0}
			req.Topics = append(req.Topics, tp)
			return req
		}, maxVersion: 3},
		{name: "add-offsets-to-txn", build: func(c *diffConn) kmsg.Request {
			pid, epoch := diffPID(c, "diff-txn", 0)
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "diff-txn", pid, epoch, diffGroup
			return req
		}},
		{name: "txn-offset-commit", build: func(c *diffConn) kmsg.Request {
			pid, epoch := diffPID(c, "diff-txn", 0)
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "diff-txn", diffGroup, pid, epoch
			req.Generation = -1
			tp := kmsg.NewTxnOffsetCommitRequestTopic()
			tp.Topic = diffTopic
			p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = 0, 1, -1
			tp.Partitions = append(tp.Partitions, p)
			req.Topics = append(req.Topics, tp)
			return req
		}, maxVersion: 4}, // v5 (KIP-890) adds the partition itself
		{name: "txn-offset-commit-unknown-topic-id", build: func(c *diffConn) kmsg.Request {
			pid, epoch := diffPID(c, "diff-txn", 0)
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "diff-txn", diffGroup, pid, epoch
			req.Generation = -1
			tp := kmsg.NewTxnOffsetCommitRequestTopic()
			tp.Topic, tp.TopicID = "no-such-topic", [16]byte{1}
			p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = 0, 1, -1
			tp.Partitions = append(tp.Partitions, p)
			req.Topics = append(req.Topics, tp)
			return req
		}, minVersion: 6},
		{name: "describe-transactions", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{"diff-txn", "no-such-txn"}
			return req
		}},
		{name: "list-transactions", build: func(*diffConn) kmsg.Request { return kmsg.NewPtrListTransactionsRequest() }},
		{name: "list-transactions-pattern", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrListTransactionsRequest()
			req.DurationFilterMillis, req.TransactionalIDPattern = -1, strp("diff-t.n")
			return req
		}, minVersion: 2},
		{name: "list-transactions-invalid-pattern", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrListTransactionsRequest()
			req.DurationFilterMillis, req.TransactionalIDPattern = -1, strp("diff-(")
			return req
		}, minVersion: 2},
		{name: "describe-producers", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDescribeProducersRequest()
			tp := kmsg.NewDescribeProducersRequestTopic()
			tp.Topic, tp.Partitions = diffTopic, []int32{0, 99}
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "write-txn-markers-abort", build: func(c *diffConn) kmsg.Request {
			pid, epoch := diffPID(c, "diff-txn", 0)
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch = pid, epoch, -1
			for _, name := range []string{diffTopic, "no-such-topic"} {
				tp := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				tp.Topic, tp.Partitions = name, []int32{0}
				m.Topics = append(m.Topics, tp)
			}
			req.Markers = append(req.Markers, m)
			return req
		}},

		// Cluster and partitions.
		{name: "describe-cluster", build: func(*diffConn) kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() }},
		{name: "describe-log-dirs-bad-partition", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			tp := kmsg.NewDescribeLogDirsRequestTopic()
			tp.Topic, tp.Partitions = "no-such-topic", []int32{0}
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "create-partitions-fewer", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.TimeoutMillis = 10000
			tp := kmsg.NewCreatePartitionsRequestTopic()
			tp.Topic, tp.Count = diffTopic, 2
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "elect-leaders-preferred", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrElectLeadersRequest()
			req.TimeoutMillis = 10000
			tp := kmsg.NewElectLeadersRequestTopic()
			tp.Topic, tp.Partitions = diffTopic, []int32{0}
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "offset-for-leader-epoch", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			tp := kmsg.NewOffsetForLeaderEpochRequestTopic()
			tp.Topic = diffTopic
			p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = 0, -1, 0
			tp.Partitions = append(tp.Partitions, p)
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "describe-topic-partitions", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			req.ResponsePartitionLimit = 2000
			for _, name := range []string{diffTopic, "no-such-topic"} {
				tp := kmsg.NewDescribeTopicPartitionsRequestTopic()
				tp.Topic = name
				req.Topics = append(req.Topics, tp)
			}
			return req
		}},

		// Groups: offsets of a group with no members, KIP-848 describe.
		{name: "offset-commit-simple", build: func(c *diffConn) kmsg.Request {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation, req.MemberID = "diff-simple", -1, ""
			tp := kmsg.NewOffsetCommitRequestTopic()
			tp.Topic, tp.TopicID = diffTopic, c.topicIDs[diffTopic]
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = 0, 2, -1
			tp.Partitions = append(tp.Partitions, p)
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "offset-commit-simple-unknown-topic", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group, req.Generation, req.MemberID = "diff-simple", -1, ""
			tp := kmsg.NewOffsetCommitRequestTopic()
			tp.Topic, tp.TopicID = "no-such-topic", [16]byte{1}
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = 0, 2, -1
			tp.Partitions = append(tp.Partitions, p)
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "offset-fetch-simple", build: diffOffsetFetch("diff-simple", diffTopic)},
		{name: "offset-fetch-simple-unknown-topic", build: diffOffsetFetch("diff-simple", "no-such-topic")},
		{name: "offset-fetch-simple-all", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Group = "diff-simple"
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "diff-simple"
			req.Groups = []kmsg.OffsetFetchRequestGroup{g}
			return req
		}, minVersion: 2}, // v0-1 have no "all topics"
		{name: "offset-delete", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Group = "diff-simple"
			tp := kmsg.NewOffsetDeleteRequestTopic()
			tp.Topic = diffTopic
			tp.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "consumer-group-describe-unknown", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{"no-such-group"}
			return req
		}},
		{name: "delete-groups", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{"diff-simple", "no-such-group"}
			return req
		}},

		// Joining: a member id is required first (KIP-394); KIP-848 members
		// that are not in the group; subscribing with the new protocol.
		{name: "join-group-member-id-required", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "diff-join", 30000, 30000
			req.ProtocolType = "consumer"
			pr := kmsg.NewJoinGroupRequestProtocol()
			pr.Name = "range"
			meta := kmsg.NewConsumerMemberMetadata()
			meta.Topics = []string{diffTopic}
			pr.Metadata = meta.AppendTo(nil)
			req.Protocols = append(req.Protocols, pr)
			return req
		}, minVersion: 4},
		{name: "consumer-group-heartbeat-unknown-member", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = "diff-848", "AAAAAAAAAAAAAAAAAAAAAA", 5
			req.RebalanceTimeoutMillis = 30000
			return req
		}},
		{name: "consumer-group-heartbeat-join-no-member-id", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group, req.MemberID, req.MemberEpoch = "diff-848", "", 0
			req.RebalanceTimeoutMillis = 30000
			return req
		}},

		// SASL and SCRAM admin on a PLAINTEXT listener, legacy AlterConfigs.
		{name: "sasl-handshake-plaintext", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrSASLHandshakeRequest()
			req.Mechanism = "PLAIN"
			return req
		}},
		{name: "describe-user-scram-credentials", build: func(*diffConn) kmsg.Request {
			return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		}},
		{name: "alter-configs-invalid", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrAlterConfigsRequest()
			r := kmsg.NewAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, diffTopic
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", strp("not-a-number")
			r.Configs = append(r.Configs, c)
			req.Resources = append(req.Resources, r)
			return req
		}},

		// Config resources (KIP-1142): every type, topics only, a type
		// the version does not support.
		{name: "list-config-resources", build: func(*diffConn) kmsg.Request { return kmsg.NewPtrListConfigResourcesRequest() }},
		{name: "list-config-resources-topics", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrListConfigResourcesRequest()
			req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeTopic)}
			return req
		}, minVersion: 1},
		{name: "list-config-resources-unknown-type", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrListConfigResourcesRequest()
			req.ResourceTypes = []int8{99}
			return req
		}, minVersion: 1},

		// ApiVersions v5 (KIP-1242): the cluster and node the client
		// expects; a wrong one, and only one of the two.
		{name: "api-versions-wrong-cluster", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "kbroker-compat", "1"
			req.ClusterID, req.NodeID = strp("no-such-cluster"), 0
			return req
		}, minVersion: 5},
		{name: "api-versions-cluster-without-node", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "kbroker-compat", "1"
			req.ClusterID = strp("no-such-cluster")
			return req
		}, minVersion: 5},

		// Deletes.
		{name: "delete-topics-unknown", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.TimeoutMillis = 10000
			req.TopicNames = []string{"no-such-topic"}
			tp := kmsg.NewDeleteTopicsRequestTopic()
			tp.Topic = strp("no-such-topic")
			req.Topics = append(req.Topics, tp)
			return req
		}},
		{name: "delete-records-bad-offset", build: func(*diffConn) kmsg.Request {
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.TimeoutMillis = 10000
			tp := kmsg.NewDeleteRecordsRequestTopic()
			tp.Topic = diffTopic
			p := kmsg.NewDeleteRecordsRequestTopicPartition()
			p.Partition, p.Offset = 0, 1000
			tp.Partitions = append(tp.Partitions, p)
			req.Topics = append(req.Topics, tp)
			return req
		}},
	}
}
