package compat

// Security state moves with the broker (issue 24): SCRAM credentials, ACLs,
// client quotas, topic config overrides and dynamic broker configs live in
// ZooKeeper, and a broker that changes kind on the same chroot and log dir
// must read what the other kind wrote, and write it so the other kind reads
// it back.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/controller/zkclient"
	"github.com/kbroker/kbroker/integration"
)

// secTopic, secGroup and secPrefix are the resources the ACLs name.
const secTopic, secGroup, secPrefix = "sec-t", "sec-g", "sec-"

// securityProps are the properties both kinds start with: an ACL
// authorizer whose super user is the PLAINTEXT listener's ANONYMOUS (the
// admin client and the inter-broker listener), and SCRAM-SHA-256/512 on the
// SASL_PLAINTEXT listener, whose users live in ZooKeeper.
func securityProps(plainPort, saslPort int) map[string]string {
	jaas := "org.apache.kafka.common.security.scram.ScramLoginModule required;"
	l := fmt.Sprintf("SASL_PLAINTEXT://127.0.0.1:%d,PLAINTEXT://127.0.0.1:%d", saslPort, plainPort)
	return map[string]string{
		"listeners":               l,
		"advertised.listeners":    l,
		"authorizer.class.name":   "kafka.security.authorizer.AclAuthorizer",
		"super.users":             "User:ANONYMOUS",
		"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": jaas,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": jaas,
	}
}

// TestKafka39SecurityCarriesOver: Kafka 3.9 broker 1 (ZooKeeper mode) gets
// SCRAM users, ACLs (literal and prefixed), a user quota, a topic config
// override and dynamic broker configs (per broker and cluster default);
// kbroker then runs as broker 1 on the same chroot and log dir and must
// describe the same state and authenticate and authorize SCRAM clients the
// same way. kbroker changes every kind of it, and Kafka 3.9, started again
// on the dir, must describe and enforce kbroker's changes.
func TestKafka39SecurityCarriesOver(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ZooKeeper, Apache Kafka 3.9 twice and a kbroker broker")
	}
	const chroot = "/security"
	integration.BuildKbroker(t)
	z := integration.StartZooKeeper(t)
	logDir := filepath.Join(t.TempDir(), "data")
	kfPlain, kfSASL := freePort(t), freePort(t)
	saslAt := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

	// 1. Kafka 3.9 writes the security state.
	kf := startKafka39At(t, z, chroot, 1, logDir, kfPlain, securityProps(kfPlain, kfSASL))
	adm := newAdmin(t, kf.Addr())
	retention := "86400000"
	createTopic(t, adm, secTopic, 1, map[string]*string{"retention.ms": &retention})
	setBrokerConfig(t, adm, "message.max.bytes", "1500000", 1)
	setBrokerConfig(t, adm, "log.retention.ms", "3600000")
	alterSCRAMs(t, adm, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-pw"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-pw"},
	})
	createACLs(t, adm,
		kadm.NewACLs().Topics(secTopic).Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Groups(secGroup).Allow("User:alice").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Topics(secTopic).Allow("User:bob").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Topics(secPrefix).Allow("User:alice").Operations(kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternPrefixed),
	)
	alterQuotas(t, adm, "alice", []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}, {Key: "consumer_byte_rate", Value: 2097152}})

	fromKafka := waitSecurityView(t, kf.Addr(), "Kafka's own changes", func(v string) bool {
		for _, want := range []string{"scram bob SCRAM-SHA-256", "acl TOPIC:PREFIXED:sec-", "acl TOPIC:LITERAL:sec-t User:bob",
			"sec-t retention.ms=86400000", "1 message.max.bytes=1500000", "1 log.retention.ms=3600000", "user=alice consumer_byte_rate"} {
			if !strings.Contains(v, want) {
				return false
			}
		}
		return true
	}, "")
	t.Logf("security state written by Kafka 3.9:\n%s", fromKafka)
	kfAccess := secAccess{t: t, addr: saslAt(kfSASL)}
	kfAccess.checkKafkasState(2)
	kf.stop(t)
	if out := kf.out.String(); !strings.Contains(out, "[KafkaServer id=1] shut down completed") {
		t.Fatalf("Kafka 3.9 did not shut down cleanly:\n%s", tail(out, 4000))
	}

	// 2. kbroker as broker 1: the same state, the same answers.
	kbSASL := freePort(t)
	kb := startKbrokerSecure(t, z, chroot, logDir, kbSASL)
	kbAdm := newAdmin(t, kb.Addr())
	waitSecurityView(t, kb.Addr(), "kbroker to describe what Kafka wrote", nil, fromKafka)
	kbAccess := secAccess{t: t, addr: saslAt(kbSASL)}
	kbAccess.checkKafkasState(4)

	// 3. kbroker changes each kind of state.
	retention = "43200000"
	maxBytes := "500000"
	alterTopicConfigs(t, kbAdm, []kadm.AlterConfig{{Name: "retention.ms", Value: &retention}, {Name: "max.message.bytes", Value: &maxBytes}})
	setBrokerConfig(t, kbAdm, "message.max.bytes", "1400000", 1)
	deleteBrokerConfig(t, kbAdm, "log.retention.ms")
	setBrokerConfig(t, kbAdm, "log.cleaner.threads", "2")
	alterSCRAMs(t, kbAdm, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha512}}, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "bob-pw2"},
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-pw"},
	})
	createACLs(t, kbAdm,
		kadm.NewACLs().Topics(secTopic).Allow("User:bob").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Topics(secPrefix).Allow("User:carol").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed),
	)
	deleteACLs(t, kbAdm, kadm.NewACLs().Groups(secGroup).Allow("User:alice").AllowHosts().Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	alterQuotas(t, kbAdm, "alice", []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 524288}, {Key: "consumer_byte_rate", Remove: true}})
	alterQuotas(t, kbAdm, "carol", []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 50}})
	fromKbroker := waitSecurityView(t, kb.Addr(), "kbroker's own changes", func(v string) bool {
		return v != fromKafka && strings.Contains(v, "carol") && strings.Contains(v, "log.cleaner.threads") &&
			!strings.Contains(v, "log.retention.ms") && strings.Contains(v, "524288")
	}, "")
	t.Logf("security state after kbroker's changes:\n%s", fromKbroker)
	kbAccess.produce("bob", "bob-pw2", scramSHA256, nil)
	kbAccess.login("bob", "bob-pw", scramSHA256, kerr.SaslAuthenticationFailed)
	kbAccess.login("alice", "alice-pw", scramSHA512, kerr.SaslAuthenticationFailed)
	kbAccess.consume("carol", "carol-pw", scramSHA512, 5)
	kbAccess.commit("alice", "alice-pw", kerr.GroupAuthorizationFailed)
	// Kafka's notifications and entities from step 1 and kbroker's from
	// step 3 are in ZooKeeper side by side: all in Kafka's form.
	checkSecurityZnodes(t, dialRollingZK(t, z, chroot))
	if err := kb.Term(60 * time.Second); err != nil {
		t.Fatalf("kbroker did not stop cleanly: %v\n%s", err, kb.Log())
	}

	// 4. The way back: Kafka 3.9 reads and enforces kbroker's changes.
	kf = startKafka39At(t, z, chroot, 1, logDir, kfPlain, securityProps(kfPlain, kfSASL))
	waitSecurityView(t, kf.Addr(), "Kafka 3.9 to describe what kbroker wrote", nil, fromKbroker)
	kfAccess.produce("bob", "bob-pw2", scramSHA256, nil)
	kfAccess.login("bob", "bob-pw", scramSHA256, kerr.SaslAuthenticationFailed)
	kfAccess.produce("alice", "alice-pw", scramSHA256, nil)
	kfAccess.login("alice", "alice-pw", scramSHA512, kerr.SaslAuthenticationFailed)
	kfAccess.consume("carol", "carol-pw", scramSHA512, 7)
	kfAccess.produce("carol", "carol-pw", scramSHA512, kerr.TopicAuthorizationFailed)
	kfAccess.commit("alice", "alice-pw", kerr.GroupAuthorizationFailed)
	// Kafka enforces kbroker's max.message.bytes on the topic.
	cl := newKgo(t, kf.Addr(), kgo.DefaultProduceTopic(secTopic), kgo.RecordRetries(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := cl.ProduceSync(testCtx(t), &kgo.Record{Value: make([]byte, 600000)}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) && !errors.Is(err, kerr.RecordListTooLarge) {
		t.Errorf("Kafka 3.9: a 600000-byte record to %s with kbroker's max.message.bytes=500000: %v, want MESSAGE_TOO_LARGE", secTopic, err)
	}
}

// startKbrokerSecure starts kbroker as broker 1 on chroot and logDir with
// securityProps (its SASL listener on saslPort) and waits until it is the
// controller.
func startKbrokerSecure(t *testing.T, z *integration.ZooKeeper, chroot, logDir string, saslPort int) *integration.BrokerProc {
	t.Helper()
	bs := integration.StartClusterFunc(t, z, 1, func(b *integration.BrokerProc) map[string]string {
		props := securityProps(b.Port, saslPort)
		props["zookeeper.connect"] = z.Addr + chroot
		props["log.dirs"] = logDir
		props["offsets.topic.num.partitions"] = "50"
		props["transaction.state.log.num.partitions"] = "50"
		return props
	})
	waitKbrokerController(t, bs[0])
	return bs[0]
}

func scramSHA256(a scram.Auth) sasl.Mechanism { return a.AsSha256Mechanism() }
func scramSHA512(a scram.Auth) sasl.Mechanism { return a.AsSha512Mechanism() }

// secAccess runs SCRAM clients against one SASL_PLAINTEXT listener.
type secAccess struct {
	t    *testing.T
	addr string
}

func (a secAccess) client(user, pass string, mech func(scram.Auth) sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	return newKgo(a.t, a.addr, append([]kgo.Opt{kgo.SASL(mech(scram.Auth{User: user, Pass: pass}))}, opts...)...)
}

// check fails the test unless err is want (nil: no error).
func (a secAccess) check(what string, began time.Time, err, want error) {
	a.t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		a.t.Fatalf("%s on %s: %v, want %v", what, a.addr, err, want)
	}
	a.t.Logf("%s on %s (%v): %v", what, a.addr, time.Since(began).Round(time.Millisecond), err)
}

// produce produces one record to secTopic as user, without idempotence
// (an idempotent producer needs IDEMPOTENT_WRITE, or WRITE on some topic,
// before its first batch: see produceIdempotent).
func (a secAccess) produce(user, pass string, mech func(scram.Auth) sasl.Mechanism, want error) {
	a.t.Helper()
	a.produceWith(user+" produces (password "+pass+")", user, pass, mech, want, kgo.DisableIdempotentWrite())
}

// checkKafkasState checks the answers the state Kafka wrote in step 1
// gives, on either kind: alice produces with either mechanism, bob (READ
// only) is refused produce, also as an idempotent producer, and reads
// records (at least n), alice commits for secGroup and bob may not, and a
// wrong password fails authentication. Each call produces 2 records.
func (a secAccess) checkKafkasState(n int) {
	a.t.Helper()
	a.produce("alice", "alice-pw", scramSHA256, nil)
	a.produce("alice", "alice-pw", scramSHA512, nil)
	a.produce("bob", "bob-pw", scramSHA256, kerr.TopicAuthorizationFailed)
	a.produceIdempotent("bob", "bob-pw", scramSHA256, kerr.ClusterAuthorizationFailed)
	a.consume("bob", "bob-pw", scramSHA256, n)
	a.commit("alice", "alice-pw", nil)
	a.commit("bob", "bob-pw", kerr.GroupAuthorizationFailed)
	a.login("alice", "wrong", scramSHA256, kerr.SaslAuthenticationFailed)
}

// login authenticates as user with one Metadata request (a failed
// authentication is not retried, as a producer would).
func (a secAccess) login(user, pass string, mech func(scram.Auth) sasl.Mechanism, want error) {
	a.t.Helper()
	began := time.Now()
	cl := a.client(user, pass, mech)
	defer cl.Close()
	a.check(user+" logs in (password "+pass+")", began, cl.Ping(testCtx(a.t)), want)
}

// produceIdempotent is produce with an idempotent producer.
func (a secAccess) produceIdempotent(user, pass string, mech func(scram.Auth) sasl.Mechanism, want error) {
	a.t.Helper()
	a.produceWith(user+" produces idempotently", user, pass, mech, want)
}

func (a secAccess) produceWith(what, user, pass string, mech func(scram.Auth) sasl.Mechanism, want error, opts ...kgo.Opt) {
	a.t.Helper()
	began := time.Now()
	cl := a.client(user, pass, mech, append([]kgo.Opt{kgo.DefaultProduceTopic(secTopic), kgo.RecordRetries(2)}, opts...)...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(user)}).FirstErr()
	a.check(what, began, err, want)
}

// consume reads secTopic's partition 0 from the start as user, without a
// group, until it has read n records.
func (a secAccess) consume(user, pass string, mech func(scram.Auth) sasl.Mechanism, n int) {
	a.t.Helper()
	cl := a.client(user, pass, mech, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{secTopic: {0: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			a.t.Fatalf("%s consumes %s on %s: %d records of %d: %v", user, secTopic, a.addr, got, n, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			a.t.Fatalf("%s consumes %s on %s: %v", user, secTopic, a.addr, errs[0].Err)
		}
		got += fs.NumRecords()
	}
	a.t.Logf("%s consumes %d records of %s on %s", user, got, secTopic, a.addr)
}

// commit commits offset 1 of secTopic's partition 0 for secGroup as alice
// or bob.
func (a secAccess) commit(user, pass string, want error) {
	a.t.Helper()
	began := time.Now()
	adm := kadm.NewClient(a.client(user, pass, scramSHA256))
	defer adm.Close()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: secTopic, Partition: 0, At: 1, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(testCtx(a.t), secGroup, offs)
	if err == nil {
		err = resp.Error()
	}
	a.check(user+" commits for "+secGroup, began, err, want)
}

func setBrokerConfig(t *testing.T, adm *kadm.Client, name, value string, brokers ...int32) {
	t.Helper()
	alterBrokerConfig(t, adm, kadm.AlterConfig{Name: name, Value: &value}, brokers...)
}

func deleteBrokerConfig(t *testing.T, adm *kadm.Client, name string, brokers ...int32) {
	t.Helper()
	alterBrokerConfig(t, adm, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: name}, brokers...)
}

// alterBrokerConfig changes one dynamic config of the brokers (none: the
// cluster default) incrementally.
func alterBrokerConfig(t *testing.T, adm *kadm.Client, c kadm.AlterConfig, brokers ...int32) {
	t.Helper()
	rs, err := adm.AlterBrokerConfigs(testCtx(t), []kadm.AlterConfig{c}, brokers...)
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("altering broker config %s of %v: %v", c.Name, brokers, err)
	}
}

func alterTopicConfigs(t *testing.T, adm *kadm.Client, cs []kadm.AlterConfig) {
	t.Helper()
	rs, err := adm.AlterTopicConfigs(testCtx(t), cs, secTopic)
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("altering configs of %s: %v", secTopic, err)
	}
}

func alterSCRAMs(t *testing.T, adm *kadm.Client, del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) {
	t.Helper()
	rs, err := adm.AlterUserSCRAMs(testCtx(t), del, up)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		t.Fatalf("AlterUserScramCredentials: %v", err)
	}
}

func createACLs(t *testing.T, adm *kadm.Client, bs ...*kadm.ACLBuilder) {
	t.Helper()
	for _, b := range bs {
		rs, err := adm.CreateACLs(testCtx(t), b)
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
				}
			}
		}
		if err != nil {
			t.Fatalf("CreateAcls: %v", err)
		}
	}
}

func deleteACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	rs, err := adm.DeleteACLs(testCtx(t), b)
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
			} else if len(r.Deleted) != 1 {
				err = fmt.Errorf("deleted %d ACLs, want 1", len(r.Deleted))
			}
		}
	}
	if err != nil {
		t.Fatalf("DeleteAcls: %v", err)
	}
}

func alterQuotas(t *testing.T, adm *kadm.Client, user string, ops []kadm.AlterClientQuotaOp) {
	t.Helper()
	rs, err := adm.AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &user}}, Ops: ops,
	}})
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		t.Fatalf("AlterClientQuotas of user %s: %v", user, err)
	}
}

// waitSecurityView waits until securityView of the broker at addr is want (or, with
// want empty, until ok accepts it) and returns it. Both kinds apply a
// change from ZooKeeper's notifications, so the view may trail a change
// briefly.
func waitSecurityView(t *testing.T, addr string, what string, ok func(string) bool, want string) string {
	t.Helper()
	var v string
	var err error
	began := time.Now()
	deadline := began.Add(30 * time.Second)
	for {
		v, err = securityView(t, addr)
		if err == nil && (want != "" && v == want || want == "" && ok(v)) {
			t.Logf("%s: %d lines described after %v", what, strings.Count(v, "\n"), time.Since(began).Round(time.Millisecond))
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: security view (error %v):\n%s\nwant:\n%s", what, err, v, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// securityView describes, one sorted line each, the SCRAM credentials
// (user, mechanism, iterations), every ACL, secTopic's config overrides,
// broker 1's dynamic configs (per broker and cluster default) and the
// client quotas, as the broker at addr answers DescribeUserScramCredentials,
// DescribeAcls, DescribeConfigs and DescribeClientQuotas.
func securityView(t *testing.T, addr string) (string, error) {
	ctx := testCtx(t)
	cl := newKgo(t, addr, kgo.MetadataMinAge(10*time.Millisecond))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var lines []string
	scrams, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return "", fmt.Errorf("DescribeUserScramCredentials: %w", err)
	}
	for _, u := range scrams {
		if u.Err != nil {
			return "", fmt.Errorf("DescribeUserScramCredentials of %s: %w", u.User, u.Err)
		}
		for _, c := range u.CredInfos {
			lines = append(lines, fmt.Sprintf("scram %s %s iterations=%d", u.User, c.Mechanism, c.Iterations))
		}
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	acls, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(acls.ErrorCode)
	}
	if err != nil {
		return "", fmt.Errorf("DescribeAcls: %w", err)
	}
	for _, r := range acls.Resources {
		for _, a := range r.ACLs {
			lines = append(lines, fmt.Sprintf("acl %s:%s:%s %s host=%s %s %s", r.ResourceType, r.ResourcePatternType, r.ResourceName,
				a.Principal, a.Host, a.Operation, a.PermissionType))
		}
	}
	tcs, err := adm.DescribeTopicConfigs(ctx, secTopic)
	if err != nil {
		return "", fmt.Errorf("DescribeConfigs of %s: %w", secTopic, err)
	}
	bcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		return "", fmt.Errorf("DescribeConfigs of broker 1: %w", err)
	}
	for _, rc := range append(tcs, bcs...) {
		if rc.Err != nil {
			return "", fmt.Errorf("DescribeConfigs of %s: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			switch c.Source {
			case kmsg.ConfigSourceDynamicTopicConfig, kmsg.ConfigSourceDynamicBrokerConfig, kmsg.ConfigSourceDynamicDefaultBrokerConfig:
				lines = append(lines, fmt.Sprintf("config %s %s=%s %s", rc.Name, c.Key, c.MaybeValue(), c.Source))
			}
		}
	}
	qs, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil {
		return "", fmt.Errorf("DescribeClientQuotas: %w", err)
	}
	for _, q := range qs {
		var ent []string
		for _, e := range q.Entity {
			name := "<default>"
			if e.Name != nil {
				name = *e.Name
			}
			ent = append(ent, e.Type+"="+name)
		}
		for _, v := range q.Values {
			lines = append(lines, fmt.Sprintf("quota %s %s=%v", strings.Join(ent, ","), v.Key, v.Value))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n", nil
}

// securityZnodes returns the data of every znode under ZooKeeper's
// security and config roots (/config, /kafka-acl, /kafka-acl-extended and
// their change notifications), by path.
func securityZnodes(t *testing.T, c *zkclient.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(path string)
	walk = func(path string) {
		data, _, err := c.Get(path)
		if err != nil {
			return
		}
		out[path] = string(data)
		children, _, err := c.Children(path)
		if err != nil {
			return
		}
		for _, ch := range children {
			walk(path + "/" + ch)
		}
	}
	for _, root := range []string{"/config", "/kafka-acl", "/kafka-acl-extended", "/kafka-acl-changes", "/kafka-acl-extended-changes"} {
		walk(root)
	}
	return out
}

// kafkaSecurityZnodeForms are the forms of the znodes Kafka 3.9 writes for
// configs, credentials, quotas and ACLs, by path prefix: Java's enum names
// in ACL change notifications (TOPIC:sec-t), Jackson's JSON without Go's
// HTML escapes (brokers/<default>, not brokers/\u003cdefault\u003e) and
// with Kafka's key order.
var kafkaSecurityZnodeForms = []struct {
	prefix string
	form   *regexp.Regexp
}{
	{"/config/changes/config_change_", regexp.MustCompile(`^\{"version":2,"entity_path":"(topics|clients|users|brokers|ips)/[^"\\]+"\}$`)},
	{"/kafka-acl-changes/acl_changes_", regexp.MustCompile(`^(TOPIC|GROUP|CLUSTER|TRANSACTIONAL_ID|DELEGATION_TOKEN|USER):[^"\\]+$`)},
	{"/kafka-acl-extended-changes/acl_changes_", regexp.MustCompile(
		`^\{"version":1,"resourceType":"(TOPIC|GROUP|CLUSTER|TRANSACTIONAL_ID|DELEGATION_TOKEN|USER)","name":"[^"\\]+","patternType":"PREFIXED"\}$`)},
	{"/config/", regexp.MustCompile(`^(|\{"version":1,"config":\{[^\\]*\}\})$`)},
	{"/kafka-acl", regexp.MustCompile(`^(|\{"version":1,"acls":\[[^\\]*\]\})$`)},
}

// checkSecurityZnodes checks every znode under the security and config
// roots against kafkaSecurityZnodeForms.
func checkSecurityZnodes(t *testing.T, c *zkclient.Client) {
	t.Helper()
	nodes := securityZnodes(t, c)
	paths := slices.Sorted(maps.Keys(nodes))
	for _, p := range paths {
		for _, f := range kafkaSecurityZnodeForms {
			if strings.HasPrefix(p, f.prefix) {
				if !f.form.MatchString(nodes[p]) {
					t.Errorf("%s is not in Kafka 3.9's form %s: %s", p, f.form, nodes[p])
				}
				break
			}
		}
	}
	t.Logf("%d znodes checked against Kafka 3.9's forms", len(paths))
}
