package compat

// SASL over a SASL_PLAINTEXT listener: kcat (librdkafka) with SCRAM-SHA-256,
// good and wrong password; sarama with SCRAM-SHA-256/512 and PLAIN, through
// SaslHandshake v1 + SaslAuthenticate and through the v0 raw-token mode.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// saslUsers are the credentials every SASL compat broker has.
const (
	saslUser      = "alice"
	saslScramPass = "alice-secret"
	saslPlainPass = "alice-plain"
)

// startSASLBroker starts kbroker with a SASL_PLAINTEXT listener (returned
// address) besides the harness's PLAINTEXT one (b.Addr()), PLAIN user alice
// from the JAAS config and SCRAM-SHA-256/512 user alice from
// sasl.scram.bootstrap.users.
func startSASLBroker(t *testing.T, extra ...string) (*brokerProc, string) {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("kbroker did not build: %v", buildErr)
	}
	p := &brokerProc{t: t, dataDir: t.TempDir(), port: freePort(t)}
	saslAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	p.overrides = []string{
		// The SASL listener comes first: the broker binds listeners in
		// order, so once the harness sees the PLAINTEXT one accept, the
		// SASL one is bound too.
		fmt.Sprintf("listeners=SASL_PLAINTEXT://%s,PLAINTEXT://%s", saslAddr, p.Addr()),
		fmt.Sprintf(`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_%s="%s";`, saslUser, saslPlainPass),
		fmt.Sprintf("sasl.scram.bootstrap.users=SCRAM-SHA-256=[name=%s,password=%s],SCRAM-SHA-512=[name=%[1]s,password=%[2]s]", saslUser, saslScramPass),
	}
	p.overrides = append(p.overrides, extra...)
	t.Cleanup(p.cleanup)
	p.start()
	return p, saslAddr
}

// kcatSASLArgs are kcat's options for SCRAM-SHA-256 with password pass.
func kcatSASLArgs(pass string) []string {
	return []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256",
		"-X", "sasl.username=" + saslUser, "-X", "sasl.password=" + pass, "-X", "broker.address.family=v4"}
}

func TestSASLKcat(t *testing.T) {
	kcatPath(t)
	b, saslAddr := startSASLBroker(t)
	recordCap(t, "kcat", kcatVersion(t), capSASL)
	const topic, n = "sasl-kcat", 50
	createTopic(t, newAdmin(t, b.Addr()), topic, 2, nil)

	t.Run("produce-consume", func(t *testing.T) {
		var in strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&in, "m%d\n", i)
		}
		runKcat(t, in.String(), append([]string{"-P", "-b", saslAddr, "-t", topic, "-X", "acks=all"}, kcatSASLArgs(saslScramPass)...)...)
		out := runKcat(t, "", append([]string{"-C", "-b", saslAddr, "-t", topic, "-o", "beginning", "-c", strconv.Itoa(n), "-e", "-q", "-f", "%s\n"}, kcatSASLArgs(saslScramPass)...)...)
		got := map[string]bool{}
		for _, l := range strings.Fields(out) {
			got[l] = true
		}
		for i := 0; i < n; i++ {
			if !got[fmt.Sprintf("m%d", i)] {
				t.Fatalf("message m%d not consumed; got:\n%s", i, out)
			}
		}
		md := runKcat(t, "", append([]string{"-L", "-b", saslAddr}, kcatSASLArgs(saslScramPass)...)...)
		if want := "at " + saslAddr; !strings.Contains(md, want) {
			t.Fatalf("metadata on the SASL listener does not advertise it (%q):\n%s", want, md)
		}
	})

	t.Run("wrong-password", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcatPath(t), append([]string{"-L", "-b", saslAddr, "-m", "5"}, kcatSASLArgs("wrong")...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err == nil || ctx.Err() != nil {
			t.Fatalf("kcat -L with a wrong password: %v (ctx %v)\n%s", err, ctx.Err(), out.String())
		}
		want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
		if !strings.Contains(out.String(), want) {
			t.Fatalf("kcat output lacks %q:\n%s", want, out.String())
		}
	})
	b.Alive()
}

// franzScram adapts franz-go's SCRAM client to sarama's SCRAMClient.
type franzScram struct {
	mech       func(scram.Auth) sasl.Mechanism
	user, pass string
	sess       sasl.Session
	done       bool
}

func (c *franzScram) Begin(user, pass, _ string) error {
	c.user, c.pass = user, pass
	return nil
}

func (c *franzScram) Step(challenge string) (string, error) {
	if c.sess == nil {
		sess, first, err := c.mech(scram.Auth{User: c.user, Pass: c.pass}).Authenticate(context.Background(), "")
		c.sess = sess
		return string(first), err
	}
	done, next, err := c.sess.Challenge([]byte(challenge))
	c.done = done
	return string(next), err
}

func (c *franzScram) Done() bool { return c.done }

// saramaSASLConfig is saramaConfig with SASL mechanism mech, password pass
// and handshake version v (v0: raw tokens, which needs ApiVersions off).
func saramaSASLConfig(mech sarama.SASLMechanism, pass string, v int16) *sarama.Config {
	cfg := saramaConfig(sarama.V3_0_0_0, sarama.CompressionNone, false)
	cfg.Net.SASL.Enable = true
	cfg.Net.SASL.Mechanism = mech
	cfg.Net.SASL.User, cfg.Net.SASL.Password = saslUser, pass
	cfg.Net.SASL.Version = v
	cfg.Net.SASL.Handshake = true
	if v == sarama.SASLHandshakeV0 {
		cfg.ApiVersionsRequest = false
	}
	switch mech {
	case sarama.SASLTypeSCRAMSHA256:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
			return &franzScram{mech: func(a scram.Auth) sasl.Mechanism { return a.AsSha256Mechanism() }}
		}
	case sarama.SASLTypeSCRAMSHA512:
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
			return &franzScram{mech: func(a scram.Auth) sasl.Mechanism { return a.AsSha512Mechanism() }}
		}
	}
	cfg.Metadata.Retry.Max = 1
	return cfg
}

func TestSASLSarama(t *testing.T) {
	b, saslAddr := startSASLBroker(t)
	recordCap(t, "IBM/sarama", moduleVersion("github.com/IBM/sarama"), capSASL)
	adm := newAdmin(t, b.Addr())
	for _, tc := range []struct {
		name string
		mech sarama.SASLMechanism
		pass string
		v    int16
	}{
		{"scram-sha-256", sarama.SASLTypeSCRAMSHA256, saslScramPass, sarama.SASLHandshakeV1},
		{"scram-sha-512", sarama.SASLTypeSCRAMSHA512, saslScramPass, sarama.SASLHandshakeV1},
		{"plain", sarama.SASLTypePlaintext, saslPlainPass, sarama.SASLHandshakeV1},
		{"scram-sha-256-v0", sarama.SASLTypeSCRAMSHA256, saslScramPass, sarama.SASLHandshakeV0},
		{"plain-v0", sarama.SASLTypePlaintext, saslPlainPass, sarama.SASLHandshakeV0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "sasl-sarama-" + tc.name
			createTopic(t, adm, topic, 1, nil)
			cfg := saramaSASLConfig(tc.mech, tc.pass, tc.v)
			prod, err := sarama.NewSyncProducer([]string{saslAddr}, cfg)
			if err != nil {
				t.Fatalf("producer: %v", err)
			}
			defer prod.Close()
			const n = 10
			for i := 0; i < n; i++ {
				if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))}); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			cons, err := sarama.NewConsumer([]string{saslAddr}, cfg)
			if err != nil {
				t.Fatalf("consumer: %v", err)
			}
			defer cons.Close()
			pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatalf("consume partition: %v", err)
			}
			defer pc.Close()
			ctx := testCtx(t)
			for i := 0; i < n; i++ {
				select {
				case m := <-pc.Messages():
					if string(m.Value) != fmt.Sprintf("v%d", i) || m.Offset != int64(i) {
						t.Fatalf("message %d: offset %d value %q", i, m.Offset, m.Value)
					}
				case err := <-pc.Errors():
					t.Fatalf("consume: %v", err)
				case <-ctx.Done():
					t.Fatalf("consumed %d of %d", i, n)
				}
			}

			bad := saramaSASLConfig(tc.mech, "wrong", tc.v)
			if cl, err := sarama.NewClient([]string{saslAddr}, bad); err == nil {
				cl.Close()
				t.Fatal("wrong password accepted")
			} else if tc.v == sarama.SASLHandshakeV1 && !strings.Contains(err.Error(), "SASL Authentication failed") {
				t.Fatalf("wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
		})
	}
	b.Alive()
}
