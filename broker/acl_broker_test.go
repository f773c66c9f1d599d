package broker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/protocol/records"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// aclOverrides is a broker with the StandardAuthorizer, super user admin
// and SCRAM-SHA-256 users admin, alice and bob on its SASL listener
// (Addrs()[1]); the PLAINTEXT listener (Addrs()[0]) is User:ANONYMOUS.
func aclOverrides() map[string]string {
	return map[string]string{
		"listeners":                  "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms":    "SCRAM-SHA-256",
		"sasl.scram.bootstrap.users": "SCRAM-SHA-256=[name=admin,password=admin-secret];SCRAM-SHA-256=[name=alice,password=alice-secret];SCRAM-SHA-256=[name=bob,password=bob-secret]",
		"authorizer.class.name":      "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                "User:admin",
		"auto.create.topics.enable":  "false",
	}
}

// aclFixture is an ACL-enabled broker with topic "t" and an admin client.
type aclFixture struct {
	t   *testing.T
	b   *Broker
	ctx context.Context
	adm *kadm.Client
}

func newACLFixture(t *testing.T) *aclFixture {
	b := startTestBroker(t, t.TempDir(), aclOverrides())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	f := &aclFixture{t: t, b: b, ctx: ctx, adm: kadm.NewClient(f0(t, b, "admin"))}
	if _, err := f.adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	return f
}

// f0 is a client of user on the SASL listener.
func f0(t *testing.T, b *Broker, user string, opts ...kgo.Opt) *kgo.Client {
	return saslClient(t, b, scram256(user, user+"-secret"), append([]kgo.Opt{kgo.RetryTimeout(3 * time.Second)}, opts...)...)
}

// grant creates ACLs through the admin client and fails the test on any error.
func (f *aclFixture) grant(acls *kadm.ACLBuilder) {
	f.t.Helper()
	res, err := f.adm.CreateACLs(f.ctx, acls)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			f.t.Fatalf("creating ACL %+v: %v (%s)", r, r.Err, r.ErrMessage)
		}
	}
}

// endOffset is topic t's partition 0 end offset, read by the admin.
func (f *aclFixture) endOffset() int64 {
	f.t.Helper()
	offs, err := f.adm.ListEndOffsets(f.ctx, "t")
	if err != nil {
		f.t.Fatal(err)
	}
	o, ok := offs.Lookup("t", 0)
	if !ok || o.Err != nil {
		f.t.Fatalf("end offset of t: %+v", o)
	}
	return o.Offset
}

// topicID is topic t's id.
func (f *aclFixture) topicID() [16]byte {
	f.t.Helper()
	td, err := f.adm.ListTopics(f.ctx, "t")
	if err != nil || td["t"].Err != nil {
		f.t.Fatalf("topic t: %v %v", err, td["t"].Err)
	}
	return td["t"].ID
}

// direct is a raw request to the broker itself (no coordinator lookup).
func (f *aclFixture) direct(cl *kgo.Client, req kmsg.Request) kmsg.Response {
	f.t.Helper()
	resp, err := cl.Broker(int(f.b.cfg.NodeID)).Request(f.ctx, req)
	if err != nil {
		f.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func TestACLDeniedProduce(t *testing.T) {
	f := newACLFixture(t)
	f.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))

	bob := f0(t, f.b, "bob", kgo.DefaultProduceTopic("t"))
	err := bob.ProduceSync(f.ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// The partition answer itself, without the client's metadata step.
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "t", f.topicID()
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = oneBatch(t)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	pr := f.direct(bob, req).(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob's raw produce: error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	if o := f.endOffset(); o != 0 {
		t.Fatalf("end offset %d after denied produces, want 0", o)
	}

	alice := f0(t, f.b, "alice", kgo.DefaultProduceTopic("t"))
	if err := alice.ProduceSync(f.ctx, &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatalf("alice's produce: %v", err)
	}
	if o := f.endOffset(); o != 1 {
		t.Fatalf("end offset %d after alice's produce, want 1", o)
	}

	// A DENY wins over the ALLOW, and DeleteAcls takes it away again.
	f.grant(kadm.NewACLs().Topics("t").Deny("User:alice").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	pr = f.direct(alice, req).(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's produce under a DENY: error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	del, err := f.adm.DeleteACLs(f.ctx, kadm.NewACLs().Topics("t").Deny("User:alice").DenyHosts().Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(del) != 1 || del[0].Err != nil || len(del[0].Deleted) != 1 {
		t.Fatalf("deleting the DENY: %+v, %v", del, err)
	}
	pr = f.direct(alice, req).(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("alice's produce after the DENY went: error %d", code)
	}
}

// oneBatch is a valid record batch of one record.
func oneBatch(t *testing.T) []byte {
	t.Helper()
	b, err := records.Build(records.BatchSpec{FirstTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
		[]records.Record{{Key: []byte("k"), Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestACLDeniedConsume(t *testing.T) {
	f := newACLFixture(t)
	admin := f0(t, f.b, "admin", kgo.DefaultProduceTopic("t"))
	if err := admin.ProduceSync(f.ctx, &kgo.Record{Value: []byte("secret")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bob := f0(t, f.b, "bob")
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = 100, 1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", f.topicID()
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	fr := f.direct(bob, req).(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answer %+v", fr)
	}
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(p.RecordBatches) != 0 {
		t.Fatalf("bob's fetch: error %d with %d bytes, want TOPIC_AUTHORIZATION_FAILED and none", p.ErrorCode, len(p.RecordBatches))
	}
	// Bob does not even see the topic.
	md := f.direct(bob, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	if len(md.Topics) != 0 {
		t.Fatalf("bob's metadata lists %d topics, want none", len(md.Topics))
	}
	// Through the client: the consumer reports the error and no record.
	cons := f0(t, f.b, "bob", kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	defer cancel()
	for {
		fs := cons.PollFetches(pctx)
		if fs.NumRecords() > 0 {
			t.Fatal("bob consumed records")
		}
		var authErr bool
		fs.EachError(func(_ string, _ int32, err error) { authErr = authErr || errors.Is(err, kerr.TopicAuthorizationFailed) })
		if authErr {
			break
		}
		if pctx.Err() != nil {
			t.Log("the franz-go consumer reported no TOPIC_AUTHORIZATION_FAILED within 5s (it retries metadata); the raw fetch above is the check")
			break
		}
	}

	f.grant(kadm.NewACLs().Topics("t").Allow("User:bob").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	fr = f.direct(bob, req).(*kmsg.FetchResponse)
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("bob's fetch with READ: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
	}
}

func TestACLDeniedGroupJoin(t *testing.T) {
	f := newACLFixture(t)
	f.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	alice := f0(t, f.b, "alice")

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, []string{"g"}
	fcr := f.direct(alice, fc).(*kmsg.FindCoordinatorResponse)
	if len(fcr.Coordinators) != 1 || fcr.Coordinators[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("FindCoordinator: %+v, want GROUP_AUTHORIZATION_FAILED", fcr.Coordinators)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	jr := f.direct(alice, jg).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("JoinGroup: error %d, want GROUP_AUTHORIZATION_FAILED", jr.ErrorCode)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 8, "g", -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic, oct.TopicID = "t", f.topicID()
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	oc.Topics = append(oc.Topics, oct)
	ocr := f.direct(alice, oc).(*kmsg.OffsetCommitResponse)
	if len(ocr.Topics) != 1 || ocr.Topics[0].Partitions[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("OffsetCommit: %+v, want GROUP_AUTHORIZATION_FAILED", ocr.Topics)
	}
	// The group was never created.
	groups, err := f.adm.ListGroups(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(groups.Groups(), "g") {
		t.Fatal("group g exists after the denied join")
	}
	// A consumer in the group fails with the error too.
	cons := f0(t, f.b, "alice", kgo.ConsumeTopics("t"), kgo.ConsumerGroup("g"))
	pctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	for {
		fs := cons.PollFetches(pctx)
		var groupErr bool
		fs.EachError(func(_ string, _ int32, err error) {
			groupErr = groupErr || errors.Is(err, kerr.GroupAuthorizationFailed)
		})
		if groupErr {
			break
		}
		if pctx.Err() != nil {
			t.Fatal("the group consumer never reported GROUP_AUTHORIZATION_FAILED")
		}
	}
	// With READ on the group alice joins.
	f.grant(kadm.NewACLs().Groups("g").Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	jr = f.direct(alice, jg).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != kerr.MemberIDRequired.Code && jr.ErrorCode != 0 {
		t.Fatalf("JoinGroup with READ: error %d", jr.ErrorCode)
	}
}

func TestACLDeniedTransactionalID(t *testing.T) {
	f := newACLFixture(t)
	f.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	alice := f0(t, f.b, "alice")

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("tx"), 10000
	ipr := f.direct(alice, ip).(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("InitProducerId: error %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", ipr.ErrorCode)
	}
	// Idempotence needs only WRITE on some topic (KIP-679).
	ip.TransactionalID = nil
	if ipr = f.direct(alice, ip).(*kmsg.InitProducerIDResponse); ipr.ErrorCode != 0 {
		t.Fatalf("idempotent InitProducerId: error %d", ipr.ErrorCode)
	}
	bob := f0(t, f.b, "bob")
	if ipr = f.direct(bob, ip).(*kmsg.InitProducerIDResponse); ipr.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("bob's idempotent InitProducerId: error %d, want CLUSTER_AUTHORIZATION_FAILED", ipr.ErrorCode)
	}

	txp := f0(t, f.b, "alice", kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("t"))
	err := txp.BeginTransaction()
	if err == nil {
		err = txp.ProduceSync(f.ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional produce: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	if o := f.endOffset(); o != 0 {
		t.Fatalf("end offset %d after the denied transaction, want 0", o)
	}
	f.grant(kadm.NewACLs().TransactionalIDs("tx").Allow("User:alice").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	ip.TransactionalID = kmsg.StringPtr("tx")
	if ipr = f.direct(alice, ip).(*kmsg.InitProducerIDResponse); ipr.ErrorCode != 0 {
		t.Fatalf("InitProducerId with WRITE: error %d", ipr.ErrorCode)
	}
}

func TestACLAdminAPIs(t *testing.T) {
	f := newACLFixture(t)
	f.grant(kadm.NewACLs().Topics("t").Allow("User:alice").Operations(kadm.OpRead, kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	f.grant(kadm.NewACLs().Topics("pre-").Allow("User:*").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternPrefixed))

	described, err := f.adm.DescribeACLs(f.ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil || len(described) != 1 || described[0].Err != nil {
		t.Fatalf("DescribeACLs: %+v, %v", described, err)
	}
	if n := len(described[0].Described); n != 3 {
		t.Fatalf("described %d ACLs, want 3: %+v", n, described[0].Described)
	}

	aliceCl := f0(t, f.b, "alice")
	alice := kadm.NewClient(aliceCl)
	if d, err := alice.DescribeACLs(f.ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)); err != nil || len(d) != 1 || !errors.Is(d[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice's DescribeACLs: %+v, %v, want CLUSTER_AUTHORIZATION_FAILED", d, err)
	}
	res, err := alice.CreateACLs(f.ctx, kadm.NewACLs().Topics("x").Allow("User:alice").Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice's CreateACLs: %+v, %v", res, err)
	}
	// SCRAM credentials need ALTER on the cluster.
	sr, err := alice.AlterUserSCRAMs(f.ctx, nil, []kadm.UpsertSCRAM{{User: "eve", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "eve"}})
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(sr["eve"].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice's AlterUserScramCredentials: %+v, %v", sr, err)
	}
	// Topic admin is checked per topic.
	if _, err := alice.CreateTopic(f.ctx, 1, 1, nil, "new"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's CreateTopics: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if _, err := alice.DeleteTopic(f.ctx, "t"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice's DeleteTopics: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Metadata: the authorized operations are alice's.
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Version, mreq.IncludeTopicAuthorizedOperations = 10, true
	mreq.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("hidden")}}
	md := f.direct(aliceCl, mreq).(*kmsg.MetadataResponse)
	want := int32(1<<3 | 1<<4 | 1<<8) // READ, WRITE, DESCRIBE
	for _, mt := range md.Topics {
		switch *mt.Topic {
		case "t":
			if mt.ErrorCode != 0 || mt.AuthorizedOperations != want {
				t.Errorf("topic t: error %d, operations %b, want %b", mt.ErrorCode, mt.AuthorizedOperations, want)
			}
		case "hidden":
			if mt.ErrorCode != kerr.TopicAuthorizationFailed.Code {
				t.Errorf("topic hidden: error %d, want TOPIC_AUTHORIZATION_FAILED", mt.ErrorCode)
			}
		}
	}
	// DeleteAcls by filter, persisted: a restart keeps what is left.
	del, err := f.adm.DeleteACLs(f.ctx, kadm.NewACLs().Topics("pre-").Allow().AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil || len(del) != 1 || len(del[0].Deleted) != 1 {
		t.Fatalf("DeleteACLs: %+v, %v", del, err)
	}
	if acls := f.b.store.ACLs(); len(acls) != 2 {
		t.Fatalf("store holds %d ACLs, want 2: %+v", len(acls), acls)
	}
}

// TestNoAuthorizerStaysOpen: without authorizer.class.name every request
// is allowed and the ACL APIs answer SECURITY_DISABLED, as in Kafka.
func TestNoAuthorizerStaysOpen(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()[0].String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:a").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("CreateACLs without an authorizer: %+v, %v", res, err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "open"); err != nil {
		t.Fatalf("creating a topic anonymously: %v", err)
	}
}

// TestACLDescribeAndList: listings show what the principal may describe,
// and authorizedOperations are the principal's.
func TestACLDescribeAndList(t *testing.T) {
	f := newACLFixture(t)
	for _, g := range []string{"g1", "g2"} {
		offs := kadm.Offsets{}
		offs.AddOffset("t", 0, 0, -1)
		if _, err := f.adm.CommitOffsets(f.ctx, g, offs); err != nil {
			t.Fatalf("committing for %s: %v", g, err)
		}
	}
	f.grant(kadm.NewACLs().Groups("g1").Allow("User:alice").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	alice := f0(t, f.b, "alice")

	lg := f.direct(alice, kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "g1" {
		t.Fatalf("alice lists %+v, want only g1", lg.Groups)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"g1", "g2"}, true
	dr := f.direct(alice, dg).(*kmsg.DescribeGroupsResponse)
	got := map[string]kmsg.DescribeGroupsResponseGroup{}
	for _, g := range dr.Groups {
		got[g.Group] = g
	}
	if g := got["g1"]; g.ErrorCode != 0 || g.AuthorizedOperations != 1<<8 {
		t.Errorf("g1: error %d, operations %b, want DESCRIBE only", g.ErrorCode, g.AuthorizedOperations)
	}
	if g := got["g2"]; g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("g2: error %d, want GROUP_AUTHORIZATION_FAILED", g.ErrorCode)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if r := f.direct(alice, dc).(*kmsg.DescribeClusterResponse); r.ClusterAuthorizedOperations != 0 {
		t.Errorf("alice's cluster operations %b, want none", r.ClusterAuthorizedOperations)
	}
	admin := f0(t, f.b, "admin")
	if r := f.direct(admin, dc).(*kmsg.DescribeClusterResponse); r.ClusterAuthorizedOperations != 1<<5|1<<7|1<<8|1<<9|1<<10|1<<11|1<<12 {
		t.Errorf("admin's cluster operations %b", r.ClusterAuthorizedOperations)
	}

	// OffsetFetch: g2 is refused; g1's offsets of t are left out (no
	// DESCRIBE on t).
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 8
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g1"}, {Group: "g2"}}
	ofr := f.direct(alice, of).(*kmsg.OffsetFetchResponse)
	for _, g := range ofr.Groups {
		switch g.Group {
		case "g1":
			if g.ErrorCode != 0 || len(g.Topics) != 0 {
				t.Errorf("g1 offsets: error %d, topics %+v, want none", g.ErrorCode, g.Topics)
			}
		case "g2":
			if g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
				t.Errorf("g2 offsets: error %d", g.ErrorCode)
			}
		}
	}
}

// TestACLFetchSessionRevoked: taking READ away also stops an incremental
// fetch session that already holds the partition.
func TestACLFetchSessionRevoked(t *testing.T) {
	f := newACLFixture(t)
	read := kadm.NewACLs().Topics("t").Allow("User:bob").AllowHosts().Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	f.grant(read)
	bob := f0(t, f.b, "bob")
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 100, 1, 1<<20
	req.SessionID, req.SessionEpoch = 0, 0 // open a session
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", f.topicID()
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	fr := f.direct(bob, req).(*kmsg.FetchResponse)
	if fr.SessionID == 0 || len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("opening the session: %+v", fr)
	}
	if del, err := f.adm.DeleteACLs(f.ctx, read); err != nil || len(del) != 1 || len(del[0].Deleted) != 1 {
		t.Fatalf("revoking: %+v, %v", del, err)
	}
	admin := f0(t, f.b, "admin", kgo.DefaultProduceTopic("t"))
	if err := admin.ProduceSync(f.ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	inc := kmsg.NewPtrFetchRequest()
	inc.MaxWaitMillis, inc.MinBytes, inc.MaxBytes = 100, 1, 1<<20
	inc.SessionID, inc.SessionEpoch = fr.SessionID, 1
	fr = f.direct(bob, inc).(*kmsg.FetchResponse)
	for _, t2 := range fr.Topics {
		for _, p := range t2.Partitions {
			if p.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(p.RecordBatches) != 0 {
				t.Fatalf("session partition after revoking: error %d, %d bytes", p.ErrorCode, len(p.RecordBatches))
			}
		}
	}
	if len(fr.Topics) == 0 {
		t.Fatal("the session's partition with new data is not in the answer")
	}
}
