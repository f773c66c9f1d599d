package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/broker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslOverrides is a broker with a PLAINTEXT and a SASL_PLAINTEXT listener,
// PLAIN user alice (alice-plain) and SCRAM-SHA-256 user alice (alice-secret).
func saslOverrides() map[string]string {
	return map[string]string{
		"listeners":                  "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.jaas.config":           `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-plain";`,
		"sasl.scram.bootstrap.users": "SCRAM-SHA-256=[name=alice,password=alice-secret]",
	}
}

// saslClient is a franz-go client on the broker's SASL listener.
func saslClient(t *testing.T, b *Broker, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()[1].String()), kgo.SASL(m)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func scram256(user, pass string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
}

func TestSASLListeners(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), saslOverrides())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plainPort, saslPort := int32(b.Addrs()[0].(*net.TCPAddr).Port), int32(b.Addrs()[1].(*net.TCPAddr).Port)

	// SCRAM: produce and consume through the SASL listener only, which
	// works only if metadata advertises that listener's port.
	prod := saslClient(t, b, scram256("alice", "alice-secret"), kgo.DefaultProduceTopic("sasl"), kgo.AllowAutoTopicCreation())
	const n = 20
	for i := 0; i < n; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, prod)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Port != saslPort {
		t.Fatalf("metadata on the SASL listener advertises %+v, want port %d", md.Brokers, saslPort)
	}
	cons := saslClient(t, b, scram256("alice", "alice-secret"), kgo.ConsumeTopics("sasl"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", got, n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	if !hasPrincipal(b, "User:alice") {
		t.Fatal("no connection holds the principal User:alice")
	}

	plainCl := newClient(t, b)
	md, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, plainCl)
	if err != nil {
		t.Fatal(err)
	}
	if md.Brokers[0].Port != plainPort {
		t.Fatalf("metadata on the PLAINTEXT listener advertises %+v, want port %d", md.Brokers, plainPort)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	fcr, err := fc.RequestWith(ctx, plainCl)
	if err != nil || fcr.Port != plainPort {
		t.Fatalf("FindCoordinator on PLAINTEXT: %+v, %v", fcr, err)
	}

	// PLAIN.
	if err := saslClient(t, b, plain.Auth{User: "alice", Pass: "alice-plain"}.AsMechanism()).Ping(ctx); err != nil {
		t.Fatalf("PLAIN: %v", err)
	}

	// Failures carry Kafka's code and message.
	for _, tc := range []struct {
		name string
		m    sasl.Mechanism
		msg  string
	}{
		{"scram wrong password", scram256("alice", "nope"), "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"},
		{"scram unknown user", scram256("mallory", "x"), "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"},
		{"scram-512 without credential", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), "invalid credentials with SASL mechanism SCRAM-SHA-512"},
		{"plain wrong password", plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), "Authentication failed: Invalid username or password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := saslClient(t, b, tc.m, kgo.RetryTimeout(time.Second)).Ping(ctx)
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want SASL_AUTHENTICATION_FAILED with %q", err, tc.msg)
			}
		})
	}

	// A SASL client on the PLAINTEXT listener gets ILLEGAL_SASL_STATE.
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()[0].String()), kgo.SASL(scram256("alice", "alice-secret")), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); !errors.Is(err, kerr.IllegalSaslState) {
		t.Fatalf("SASL on PLAINTEXT: %v, want ILLEGAL_SASL_STATE", err)
	}
}

func hasPrincipal(b *Broker, p string) bool {
	return slices.Contains(b.net.Principals(config.ProtoSASLPlaintext), p)
}

// TestSASLUnauthenticatedRequestCloses sends Metadata before any handshake
// on the SASL listener: Kafka closes the connection without an answer.
func TestSASLUnauthenticatedRequestCloses(t *testing.T) {
	b := startTestBroker(t, t.TempDir(), saslOverrides())
	nc, err := net.Dial("tcp", b.Addrs()[1].String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	body := requestFrame(md, 7)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := nc.Write(append(frame, body...)); err != nil {
		t.Fatal(err)
	}
	// The deadline only bounds a broken broker; the close is what ends the read.
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := nc.Read(make([]byte, 64)); !errors.Is(err, io.EOF) {
		t.Fatalf("read %d bytes, %v: want the connection closed without an answer", n, err)
	}

	// The same request on the PLAINTEXT listener is answered.
	pc, err := net.Dial("tcp", b.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.Write(append(frame, body...)); err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.ReadFrame(pc, 1<<20, nil); err != nil {
		t.Fatalf("PLAINTEXT answer: %v", err)
	}
}

// TestScramCredentialsAdmin creates, describes and deletes SCRAM credentials
// with kadm and checks that logins follow, across a restart.
func TestScramCredentialsAdmin(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, saslOverrides())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, b))

	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "bob-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("upsert bob: %v, %v", err, res.Error())
	}
	bob := scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()
	if err := saslClient(t, b, bob).Ping(ctx); err != nil {
		t.Fatalf("bob after upsert: %v", err)
	}

	desc, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a := desc["alice"]; a.Err != nil || len(a.CredInfos) != 1 || a.CredInfos[0].Mechanism != kadm.ScramSha256 || a.CredInfos[0].Iterations != 4096 {
		t.Fatalf("alice: %+v", a)
	}
	if b := desc["bob"]; b.Err != nil || len(b.CredInfos) != 1 || b.CredInfos[0].Mechanism != kadm.ScramSha512 || b.CredInfos[0].Iterations != 8192 {
		t.Fatalf("bob: %+v", b)
	}

	// Raw requests for the per-user errors and Kafka's messages.
	dreq := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"alice", "carol", "alice"} {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		dreq.Users = append(dreq.Users, ru)
	}
	dresp, err := dreq.RequestWith(ctx, newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, r := range dresp.Results {
		codes[r.User] = r.ErrorCode
	}
	if len(dresp.Results) != 2 || codes["alice"] != kerr.DuplicateResource.Code || codes["carol"] != kerr.ResourceNotFound.Code {
		t.Fatalf("describe results %+v", dresp.Results)
	}

	areq := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := func(user string, mech int8) {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = user, mech
		areq.Deletions = append(areq.Deletions, d)
	}
	up := func(user string, mech int8, iters int32) {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = user, mech, iters, []byte("salt"), []byte("salted")
		areq.Upsertions = append(areq.Upsertions, u)
	}
	del("carol", 1)       // does not exist
	del("dave", 3)        // unknown mechanism
	del("alice", 1)       // deleted and upserted: duplicate, nothing done
	up("alice", 1, 4096)  //
	up("frank", 1, 100)   // too few
	up("grace", 2, 20000) // too many
	up("", 1, 4096)       // no name
	aresp, err := areq.RequestWith(ctx, newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{
		"carol": kerr.ResourceNotFound.Code, "dave": kerr.UnsupportedSaslMechanism.Code, "alice": kerr.DuplicateResource.Code,
		"frank": kerr.UnacceptableCredential.Code, "grace": kerr.UnacceptableCredential.Code, "": kerr.UnacceptableCredential.Code,
	}
	if len(aresp.Results) != len(want) {
		t.Fatalf("alter results %+v", aresp.Results)
	}
	for _, r := range aresp.Results {
		if r.ErrorCode != want[r.User] || r.ErrorMessage == nil {
			t.Errorf("user %q: code %d (%v), want %d", r.User, r.ErrorCode, r.ErrorMessage, want[r.User])
		}
	}

	// Credentials survive a restart; the bootstrap user is not re-salted.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := b.store.ScramCredential("alice", config.MechScramSHA256)
	b = startTestBroker(t, dir, saslOverrides())
	after, _ := b.store.ScramCredential("alice", config.MechScramSHA256)
	if string(before.Salt) != string(after.Salt) {
		t.Fatal("bootstrap credential re-created at restart")
	}
	adm = kadm.NewClient(newClient(t, b))
	if err := saslClient(t, b, bob).Ping(ctx); err != nil {
		t.Fatalf("bob after restart: %v", err)
	}
	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || res.Error() != nil {
		t.Fatalf("delete bob: %v, %v", err, res.Error())
	}
	if err := saslClient(t, b, bob, kgo.RetryTimeout(time.Second)).Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("bob after delete: %v", err)
	}
}

// requestFrame encodes a request as the frame body the authenticator reads.
func requestFrame(req kmsg.Request, corr int32) []byte {
	b := make([]byte, 0, 64)
	b = append(b, byte(req.Key()>>8), byte(req.Key()), byte(req.GetVersion()>>8), byte(req.GetVersion()))
	b = append(b, byte(corr>>24), byte(corr>>16), byte(corr>>8), byte(corr))
	b = append(b, 0, 1, 'c')
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}
