package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterACLs: ACLs created through one broker reach every broker
// through ZooKeeper's /kafka-acl-changes, and replication keeps working
// under the authorizer although clients' principal (User:ANONYMOUS) is
// denied CLUSTER_ACTION by an ACL: the brokers' requests are recognised by
// the inter-broker listener (plaintext: shared with the clients) and, on a
// SASL_SSL inter-broker listener, by the brokers' SASL username — then a
// controller request from a client listener is refused.
func TestClusterACLs(t *testing.T) {
	authzProps := map[string]string{
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"allow.everyone.if.no.acl.found": "true",
		"min.insync.replicas":            "2",
		"default.replication.factor":     "2",
	}
	t.Run("plaintext", func(t *testing.T) {
		z := StartZooKeeper(t)
		clusterACLs(t, StartCluster(t, z, 2, authzProps), false)
	})
	t.Run("sasl_ssl", func(t *testing.T) {
		z := StartZooKeeper(t)
		secure := secureInterBrokerProps(t)
		clusterACLs(t, StartClusterFunc(t, z, 2, func(b *BrokerProc) map[string]string {
			props := secure(b, "broker-secret")
			for k, v := range authzProps {
				props[k] = v
			}
			return props
		}), true)
	})
}

func clusterACLs(t *testing.T, bs []*BrokerProc, separateListener bool) {
	waitClusterFormed(t, bs, 2)
	createTopic(t, bs[0].Addr(), "locked", 2, 2, false)
	createTopic(t, bs[0].Addr(), "open", 2, 2, false)

	// Through broker 1 only: everything on the cluster but CLUSTER_ACTION
	// for User:ANONYMOUS, and everything on topic locked but WRITE (a
	// resource with ACLs is closed to what they do not allow).
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Version = 3
	add := func(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = rt, name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:ANONYMOUS", "*", op, perm
		ca.Creations = append(ca.Creations, c)
	}
	add(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow)
	add(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationClusterAction, kmsg.ACLPermissionTypeDeny)
	add(kmsg.ACLResourceTypeTopic, "locked", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow)
	add(kmsg.ACLResourceTypeTopic, "locked", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeDeny)
	resp, err := send(bs[0].Addr(), ca)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("creation %d: error %d", i, r.ErrorCode)
		}
	}

	// Every partition leader refuses writes to locked, broker 2 included.
	batch, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]records.Record{{Value: []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	addrOf := map[int32]string{}
	for _, b := range bs {
		addrOf[b.ID] = b.Addr()
	}
	leaders := map[int32]bool{}
	waitFor(t, 30*time.Second, "every leader of locked refusing the write", func() (bool, error) {
		md, err := metadata(bs[1].Addr(), "locked")
		if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 2 {
			return false, fmt.Errorf("metadata: %v", err)
		}
		for _, p := range md.Topics[0].Partitions {
			pr := kmsg.NewPtrProduceRequest()
			pr.Version, pr.Acks, pr.TimeoutMillis = 9, -1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "locked"
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p.Partition, batch
			rt.Partitions = append(rt.Partitions, rp)
			pr.Topics = append(pr.Topics, rt)
			r, err := send(addrOf[p.Leader], pr)
			if err != nil {
				return false, err
			}
			if code := r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
				return false, fmt.Errorf("partition %d on broker %d: error %d", p.Partition, p.Leader, code)
			}
			leaders[p.Leader] = true
		}
		return true, nil
	})
	if len(leaders) != 2 {
		t.Logf("the partitions of locked are led by %v only", leaders)
	}

	// Replication under the authorizer: acks=all needs both replicas.
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs[1].Addr()), kgo.DefaultProduceTopic("open"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d to open: %v", i, err)
		}
	}
	dr := kmsg.NewPtrDescribeACLsRequest()
	dr.Version, dr.ResourceType, dr.ResourcePatternType = 3, kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	dr.Operation, dr.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	r, err := send(bs[1].Addr(), dr)
	if err != nil {
		t.Fatal(err)
	}
	if d := r.(*kmsg.DescribeACLsResponse); d.ErrorCode != 0 || len(d.Resources) != 2 {
		t.Fatalf("DescribeAcls on broker 2: error %d, %d resources, want 2", d.ErrorCode, len(d.Resources))
	}
	if !separateListener {
		return
	}
	// A client is not a broker: a controller request on its listener is
	// refused before the epoch checks.
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 8, 1, 1<<20, 1<<40
	r, err = send(bs[1].Addr(), um)
	if err != nil {
		t.Fatal(err)
	}
	if code := r.(*kmsg.UpdateMetadataResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("UpdateMetadata from a client: error %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
}
