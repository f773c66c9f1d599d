package compat

// The ACL authorizer as real clients meet it: for kcat (librdkafka),
// confluent-kafka python and the Java client, over SCRAM-SHA-256 as
// User:alice, a denied produce, a denied consume, a denied group join and
// a denied transactional id, each failing with the error Kafka gives and
// writing nothing; and kafka-acls.sh adding, listing and removing ACLs.
// The PLAINTEXT listener's User:ANONYMOUS is the super user that sets up.

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// aclBrokerOverrides turn on the authorizer of startSASLBroker's broker.
var aclBrokerOverrides = []string{
	"authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
	"super.users=User:ANONYMOUS",
	"auto.create.topics.enable=false",
}

// aclSetup is a broker with the authorizer, its admin (super user) and
// the SASL listener alice uses.
type aclSetup struct {
	t        *testing.T
	b        *brokerProc
	saslAddr string
	adm      *kadm.Client
}

func startACLBroker(t *testing.T) *aclSetup {
	b, saslAddr := startSASLBroker(t, aclBrokerOverrides...)
	return &aclSetup{t: t, b: b, saslAddr: saslAddr, adm: newAdmin(t, b.Addr())}
}

// allow grants alice op on a literal resource ("topic", "group" or "txn").
func (s *aclSetup) allow(kind, name string, op kadm.ACLOperation) {
	s.t.Helper()
	b := kadm.NewACLs().Allow("User:" + saslUser).Operations(op).ResourcePatternType(kadm.ACLPatternLiteral)
	switch kind {
	case "topic":
		b.Topics(name)
	case "group":
		b.Groups(name)
	case "txn":
		b.TransactionalIDs(name)
	}
	res, err := s.adm.CreateACLs(testCtx(s.t), b)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			s.t.Fatalf("creating ACL %+v: %v", r, r.Err)
		}
	}
}

// endOffset is partition 0's end offset of topic.
func (s *aclSetup) endOffset(topic string) int64 {
	s.t.Helper()
	offs, err := s.adm.ListEndOffsets(testCtx(s.t), topic)
	if err != nil {
		s.t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		s.t.Fatalf("end offset of %s: %+v", topic, o)
	}
	return o.Offset
}

// noData fails the test if topic holds records (a denied write went through).
func (s *aclSetup) noData(topic string) {
	s.t.Helper()
	if o := s.endOffset(topic); o != 0 {
		s.t.Fatalf("topic %s has end offset %d after the denied request, want 0", topic, o)
	}
}

// tryKcat runs kcat until it exits or until its stderr contains want (then
// it is killed: kcat retries some errors forever); it returns stderr.
func tryKcat(t *testing.T, want string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.Stdin = strings.NewReader("denied\n")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return stderr.String()
		case <-tick.C:
			if strings.Contains(stderr.String(), want) {
				cancel()
				<-done
				return stderr.String()
			}
		}
	}
}

func TestACLKcat(t *testing.T) {
	s := startACLBroker(t)
	sasl := kcatSASLArgs(saslScramPass)
	t.Run("produce", func(t *testing.T) {
		createTopic(t, s.adm, "acl-kcat-p", 1, nil)
		out := tryKcat(t, "authorization failed", append([]string{"-P", "-b", s.saslAddr, "-t", "acl-kcat-p"}, sasl...)...)
		if !strings.Contains(out, "Topic authorization failed") {
			t.Fatalf("kcat -P: want Topic authorization failed, got:\n%s", out)
		}
		s.noData("acl-kcat-p")
	})
	t.Run("consume", func(t *testing.T) {
		createTopic(t, s.adm, "acl-kcat-c", 1, nil)
		out := tryKcat(t, "authorization failed", append([]string{"-C", "-b", s.saslAddr, "-t", "acl-kcat-c", "-o", "beginning", "-e"}, sasl...)...)
		if !strings.Contains(out, "Topic authorization failed") {
			t.Fatalf("kcat -C: want Topic authorization failed, got:\n%s", out)
		}
	})
	t.Run("group", func(t *testing.T) {
		createTopic(t, s.adm, "acl-kcat-g", 1, nil)
		s.allow("topic", "acl-kcat-g", kadm.OpRead)
		out := tryKcat(t, "GROUP_AUTHORIZATION_FAILED", append([]string{"-G", "acl-kcat-group", "-b", s.saslAddr, "acl-kcat-g"}, sasl...)...)
		if !strings.Contains(out, "GROUP_AUTHORIZATION_FAILED") {
			t.Fatalf("kcat -G: want GROUP_AUTHORIZATION_FAILED, got:\n%s", out)
		}
		groups, err := s.adm.ListGroups(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := groups["acl-kcat-group"]; ok {
			t.Fatal("the denied group exists")
		}
	})
}

func TestACLConfluentKafkaPython(t *testing.T) {
	c := pythonClient(t, "confluent_kafka_acl.py", "confluent_kafka", "python3-confluent-kafka")
	// Logging in over SASL SCRAM is the matrix's SASL cell.
	recordCap(t, "confluent-kafka python", pythonClient(t, "confluent_kafka_client.py", "confluent_kafka", "python3-confluent-kafka").version(t), capSASL)
	s := startACLBroker(t)
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		argv := append(append([]string{}, c.argv...), append([]string{s.saslAddr, saslUser, saslScramPass}, args...)...)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = c.dir, append(cmd.Environ(), c.env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("confluent-kafka %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return strings.TrimSpace(stdout.String())
	}
	for _, tc := range []struct {
		name  string
		setup func(topic string)
		args  func(topic string) []string
		want  string
	}{
		{"produce", func(string) {}, func(topic string) []string { return []string{"produce", topic} }, "TOPIC_AUTHORIZATION_FAILED"},
		{"consume", func(string) { s.allow("group", "acl-py-c-group", kadm.OpRead) },
			func(topic string) []string { return []string{"consume", topic, "acl-py-c-group"} }, "TOPIC_AUTHORIZATION_FAILED"},
		{"group", func(topic string) { s.allow("topic", topic, kadm.OpRead) },
			func(topic string) []string { return []string{"consume", topic, "acl-py-g-group"} }, "GROUP_AUTHORIZATION_FAILED"},
		{"transact", func(topic string) { s.allow("topic", topic, kadm.OpWrite) },
			func(topic string) []string { return []string{"transact", topic, "acl-py-tx"} }, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "acl-py-" + tc.name
			createTopic(t, s.adm, topic, 1, nil)
			tc.setup(topic)
			if got := run(t, tc.args(topic)...); got != tc.want {
				t.Fatalf("confluent-kafka %s: %q, want %s", tc.name, got, tc.want)
			}
			s.noData(topic)
		})
	}
}

func TestACLJava(t *testing.T) {
	ensureJava(t)
	s := startACLBroker(t)
	c := &javaClient{jvm: startJVM(t, javaMod44, javaSASLProps("SCRAM-SHA-256", saslScramPass)...), protocol: "classic"}
	c.setAddr(s.saslAddr)
	rec, _ := json.Marshal(map[string]any{"k": "k", "v": "denied"})
	txn, _ := json.Marshal(map[string]any{"recs": []json.RawMessage{rec}, "offset": -1, "commit": true})
	for _, tc := range []struct {
		name  string
		setup func(topic string)
		stdin string
		args  func(topic string) []string
		want  string
	}{
		{"produce", func(string) {}, string(rec) + "\n",
			func(topic string) []string { return []string{"produce", s.saslAddr, topic, "none", "0"} }, "TopicAuthorizationException"},
		{"consume", func(string) { s.allow("group", "acl-java-c-group", kadm.OpRead) }, "",
			func(topic string) []string {
				return []string{"consume", s.saslAddr, topic, "acl-java-c-group", "", "1"}
			}, "TopicAuthorizationException"},
		{"group", func(topic string) { s.allow("topic", topic, kadm.OpRead) }, "",
			func(topic string) []string {
				return []string{"consume", s.saslAddr, topic, "acl-java-g-group", "", "1"}
			}, "GroupAuthorizationException"},
		{"transact", func(topic string) { s.allow("topic", topic, kadm.OpWrite) }, string(txn) + "\n",
			func(topic string) []string {
				return []string{"transact", s.saslAddr, topic, "acl-java-tx", "acl-java-tx-group", topic}
			}, "TransactionalIdAuthorizationException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "acl-java-" + tc.name
			createTopic(t, s.adm, topic, 1, nil)
			tc.setup(topic)
			_, javaErr := c.jvm.try(t, tc.stdin, tc.args(topic)...)
			if !strings.Contains(javaErr, tc.want) {
				t.Fatalf("java %s: want %s, got %q", tc.name, tc.want, javaErr)
			}
			s.noData(topic)
		})
	}
}

// TestACLKafkaAclsTool: kafka-acls.sh (Kafka 4.4's AclCommand) adds, lists
// and removes ACLs on kbroker, and the broker enforces what it added.
func TestACLKafkaAclsTool(t *testing.T) {
	ensureJava(t)
	s := startACLBroker(t)
	bin := filepath.Join(javaDir(t), "bin")
	acls := func(args ...string) toolRun {
		t.Helper()
		r := runTool(bin, "kafka-acls.sh", "", append([]string{"--bootstrap-server", s.b.Addr()}, args...))
		if r.err != nil || r.code != 0 {
			t.Fatalf("kafka-acls %s: %s", strings.Join(args, " "), r)
		}
		return r
	}
	acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", "acl-tool")
	acls("--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1", "--operation", "All", "--topic", "acl-", "--resource-pattern-type", "prefixed")
	acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "acl-tool-group")
	r := acls("--list", "--topic", "acl-tool")
	for _, want := range []string{
		"ResourcePattern(resourceType=TOPIC, name=acl-tool, patternType=LITERAL)",
		"(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
		"(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("kafka-acls --list --topic acl-tool lacks %q:\n%s", want, r)
		}
	}
	r = acls("--list")
	for _, want := range []string{
		"ResourcePattern(resourceType=TOPIC, name=acl-, patternType=PREFIXED)",
		"(principal=User:bob, host=10.0.0.1, operation=ALL, permissionType=DENY)",
		"ResourcePattern(resourceType=GROUP, name=acl-tool-group, patternType=LITERAL)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("kafka-acls --list lacks %q:\n%s", want, r)
		}
	}
	// The broker holds what the tool wrote.
	described, err := s.adm.DescribeACLs(testCtx(t), kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range described {
		n += len(d.Described)
	}
	if n != 4 {
		t.Fatalf("the broker describes %d ACLs, want 4: %+v", n, described)
	}
	acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Describe", "--topic", "acl-tool")
	r = acls("--list", "--topic", "acl-tool")
	if strings.Contains(r.stdout, "operation=DESCRIBE") || !strings.Contains(r.stdout, "operation=READ") {
		t.Fatalf("after --remove of DESCRIBE:\n%s", r)
	}
}
