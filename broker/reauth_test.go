package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// countingMech counts the authentications a client starts.
type countingMech struct {
	sasl.Mechanism
	n *atomic.Int32
}

func (m countingMech) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	m.n.Add(1)
	return m.Mechanism.Authenticate(ctx, host)
}

// TestReauthentication (KIP-368): with connections.max.reauth.ms, franz-go
// re-authenticates on its connections and keeps producing; a client that
// does not is disconnected at its next request after the session ends;
// re-authenticating as another user is refused.
func TestReauthentication(t *testing.T) {
	o := saslOverrides()
	o["connections.max.reauth.ms"] = "1500"
	b := startTestBroker(t, t.TempDir(), o)
	ctx := testCtx(t)

	var auths atomic.Int32
	cl := saslClient(t, b, countingMech{scram256("alice", "alice-secret"), &auths}, kgo.DefaultProduceTopic("reauth"),
		kgo.AllowAutoTopicCreation(), kgo.MaxBufferedRecords(1))
	deadline := time.Now().Add(4 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d across re-authentications: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Two connections (bootstrap, then the broker's own), each
	// re-authenticating at least once in 4 s of 1.5 s sessions.
	t.Logf("%d authentications", auths.Load())
	if n := auths.Load(); n < 4 {
		t.Fatalf("%d authentications in 4 s of 1.5 s sessions: franz-go did not re-authenticate", n)
	}

	// A raw client: PLAIN with SaslAuthenticate v1 gets the lifetime; after
	// it a Metadata request closes the connection.
	nc, err := net.Dial("tcp", b.Addrs()[1].String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := &testConn{nc: nc}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if err := c.roundTrip(hs, kmsg.NewPtrSASLHandshakeResponse()); err != nil {
		t.Fatal(err)
	}
	authReq := func(pass string) (*kmsg.SASLAuthenticateResponse, error) {
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.Version, a.SASLAuthBytes = 1, []byte("\x00alice\x00"+pass)
		ar := kmsg.NewPtrSASLAuthenticateResponse()
		ar.Version = 1
		return ar, c.roundTrip(a, ar)
	}
	ar, err := authReq("alice-plain")
	if err != nil || ar.ErrorCode != 0 || ar.SessionLifetimeMillis <= 0 || ar.SessionLifetimeMillis > 1500 {
		t.Fatalf("authenticate: %+v %v", ar, err)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	mr := kmsg.NewPtrMetadataResponse()
	mr.Version = 9
	if err := c.roundTrip(md, mr); err != nil {
		t.Fatalf("metadata within the session: %v", err)
	}
	// Re-authenticate once by hand: the session is renewed.
	if err := c.roundTrip(hs, kmsg.NewPtrSASLHandshakeResponse()); err != nil {
		t.Fatal(err)
	}
	if ar, err := authReq("alice-plain"); err != nil || ar.ErrorCode != 0 || ar.SessionLifetimeMillis <= 0 {
		t.Fatalf("re-authenticate: %+v %v", ar, err)
	}
	time.Sleep(1600 * time.Millisecond) // let the session end: the condition under test is time itself
	if err := c.roundTrip(md, mr); !errors.Is(err, io.EOF) {
		t.Fatalf("metadata after the session ended: %v, want the connection closed", err)
	}

	// Re-authenticating as someone else is refused.
	o2 := saslOverrides()
	o2["connections.max.reauth.ms"] = "60000"
	o2["sasl.jaas.config"] = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-plain" user_bob="bob-plain";`
	b2 := startTestBroker(t, t.TempDir(), o2)
	nc2, err := net.Dial("tcp", b2.Addrs()[1].String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	c = &testConn{nc: nc2}
	if err := c.roundTrip(hs, kmsg.NewPtrSASLHandshakeResponse()); err != nil {
		t.Fatal(err)
	}
	if ar, err := authReq("alice-plain"); err != nil || ar.ErrorCode != 0 {
		t.Fatalf("authenticate: %+v %v", ar, err)
	}
	if err := c.roundTrip(hs, kmsg.NewPtrSASLHandshakeResponse()); err != nil {
		t.Fatal(err)
	}
	a := kmsg.NewPtrSASLAuthenticateRequest()
	a.Version, a.SASLAuthBytes = 1, []byte("\x00bob\x00bob-plain")
	ar2 := kmsg.NewPtrSASLAuthenticateResponse()
	ar2.Version = 1
	if err := c.roundTrip(a, ar2); err != nil || ar2.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authenticate as bob: %+v %v", ar2, err)
	}
}
