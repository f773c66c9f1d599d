package compat

// The ACL authorizer as the in-process Go clients meet it, in the pattern of
// acl_test.go: sarama and confluent-kafka-go, over SCRAM-SHA-256 as
// User:alice, a denied produce, a denied consume, a denied group join and a
// denied transactional id, each failing with the Kafka error the client
// reports and writing nothing.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	ckafka "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
)

// aclDeniedTimeout bounds one denied attempt of an in-process client.
const aclDeniedTimeout = 30 * time.Second

// aclCase is one denied request: setup grants what alice needs to reach
// the denial (e.g. READ on the topic for the group case), try makes the
// client attempt it and returns the error it reported.
type aclCase[E any] struct {
	name  string
	setup func(topic string)
	try   func(t *testing.T, topic string) error
	want  E
}

// ---------------------------------------------------------------- sarama

func TestACLSarama(t *testing.T) {
	s := startACLBroker(t)
	config := func() *sarama.Config {
		cfg := saramaSASLConfig(sarama.SASLTypeSCRAMSHA256, saslScramPass, sarama.SASLHandshakeV1)
		cfg.Producer.Retry.Max = 1
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Consumer.Offsets.AutoCommit.Enable = false
		// A denied JoinGroup is retried Rebalance.Retry.Max times.
		cfg.Consumer.Group.Rebalance.Retry.Backoff = 100 * time.Millisecond
		return cfg
	}
	consume := func(t *testing.T, topic, group string) error {
		cg, err := sarama.NewConsumerGroup([]string{s.saslAddr}, group, config())
		if err != nil {
			return err
		}
		defer cg.Close()
		ctx, cancel := context.WithTimeout(context.Background(), aclDeniedTimeout)
		defer cancel()
		h := &aclSaramaHandler{}
		err = cg.Consume(ctx, []string{topic}, h)
		if h.records > 0 {
			t.Fatalf("sarama consumed %d records it may not read", h.records)
		}
		if err == nil && ctx.Err() != nil {
			return errors.New("no error before the deadline")
		}
		return err
	}
	for _, tc := range []aclCase[sarama.KError]{
		{"produce", func(string) {}, func(t *testing.T, topic string) error {
			prod, err := sarama.NewSyncProducer([]string{s.saslAddr}, config())
			if err != nil {
				return err
			}
			defer prod.Close()
			_, _, err = prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("denied")})
			return err
		}, sarama.ErrTopicAuthorizationFailed},
		{"consume", func(string) { s.allow("group", "acl-sarama-c-group", kadm.OpRead) },
			func(t *testing.T, topic string) error { return consume(t, topic, "acl-sarama-c-group") },
			sarama.ErrTopicAuthorizationFailed},
		{"group", func(topic string) { s.allow("topic", topic, kadm.OpRead) },
			func(t *testing.T, topic string) error { return consume(t, topic, "acl-sarama-g-group") },
			sarama.ErrGroupAuthorizationFailed},
		{"transact", func(topic string) { s.allow("topic", topic, kadm.OpWrite) }, func(t *testing.T, topic string) error {
			cfg := config()
			cfg.Producer.Idempotent = true
			cfg.Net.MaxOpenRequests = 1
			cfg.Producer.Transaction.ID = "acl-sarama-tx"
			cfg.Producer.Transaction.Retry.Max = 1
			// NewSyncProducer runs InitProducerId for the transactional id.
			prod, err := sarama.NewSyncProducer([]string{s.saslAddr}, cfg)
			if err != nil {
				return err
			}
			defer prod.Close()
			if err := prod.BeginTxn(); err != nil {
				return err
			}
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("denied")}); err != nil {
				return err
			}
			return prod.CommitTxn()
		}, sarama.ErrTransactionalIDAuthorizationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "acl-sarama-" + tc.name
			createTopic(t, s.adm, topic, 1, nil)
			tc.setup(topic)
			if err := tc.try(t, topic); !errors.Is(err, tc.want) {
				t.Fatalf("sarama %s: %v, want %s (%d)", tc.name, err, tc.want.Error(), int16(tc.want))
			}
			s.noData(topic)
		})
	}
}

// aclSaramaHandler counts the records a denied consumer got (none).
type aclSaramaHandler struct{ records int }

func (h *aclSaramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *aclSaramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *aclSaramaHandler) ConsumeClaim(_ sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for range claim.Messages() {
		h.records++
	}
	return nil
}

// ---------------------------------------------------------------- confluent-kafka-go

func TestACLConfluentKafkaGo(t *testing.T) {
	// Logging in over SASL SCRAM is the matrix's SASL cell.
	recordCap(t, "confluent-kafka-go", confluentGoVersion(), capSASL)
	s := startACLBroker(t)
	c := &confluentGoClient{addr: s.saslAddr}
	config := func(t *testing.T, extra ckafka.ConfigMap) *ckafka.ConfigMap {
		cm := c.config(t, extra)
		for k, v := range map[string]any{
			"client.id":         "kbroker-compat-acl",
			"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-256",
			"sasl.username": saslUser, "sasl.password": saslScramPass,
		} {
			(*cm)[k] = v
		}
		return cm
	}
	consume := func(t *testing.T, topic, group string) error {
		cons, err := ckafka.NewConsumer(config(t, ckafka.ConfigMap{
			"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": false,
		}))
		if err != nil {
			t.Fatalf("NewConsumer: %v", err)
		}
		defer cons.Close()
		defer drainLogs(t, cons.Logs())()
		if err := cons.Subscribe(topic, nil); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		deadline := time.Now().Add(aclDeniedTimeout)
		for time.Now().Before(deadline) {
			m, err := cons.ReadMessage(500 * time.Millisecond)
			if err != nil {
				if ke, ok := err.(ckafka.Error); ok && ke.IsTimeout() {
					continue
				}
				return err
			}
			t.Fatalf("confluent-kafka-go consumed a record it may not read: %v", m)
		}
		return errors.New("no error before the deadline")
	}
	for _, tc := range []aclCase[ckafka.ErrorCode]{
		{"produce", func(string) {}, func(t *testing.T, topic string) error {
			p, err := ckafka.NewProducer(config(t, ckafka.ConfigMap{"acks": "all", "message.timeout.ms": int(aclDeniedTimeout / time.Millisecond)}))
			if err != nil {
				t.Fatalf("NewProducer: %v", err)
			}
			defer p.Close()
			defer drainLogs(t, p.Logs())()
			dr := make(chan ckafka.Event, 1)
			if err := p.Produce(&ckafka.Message{
				TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny}, Value: []byte("denied"),
			}, dr); err != nil {
				return err
			}
			select {
			case ev := <-dr:
				m, ok := ev.(*ckafka.Message)
				if !ok {
					t.Fatalf("unexpected delivery event %v", ev)
				}
				return m.TopicPartition.Error
			case <-time.After(aclDeniedTimeout + 10*time.Second):
				return errors.New("no delivery report")
			}
		}, ckafka.ErrTopicAuthorizationFailed},
		{"consume", func(string) { s.allow("group", "acl-ckgo-c-group", kadm.OpRead) },
			func(t *testing.T, topic string) error { return consume(t, topic, "acl-ckgo-c-group") },
			ckafka.ErrTopicAuthorizationFailed},
		{"group", func(topic string) { s.allow("topic", topic, kadm.OpRead) },
			func(t *testing.T, topic string) error { return consume(t, topic, "acl-ckgo-g-group") },
			ckafka.ErrGroupAuthorizationFailed},
		{"transact", func(topic string) { s.allow("topic", topic, kadm.OpWrite) }, func(t *testing.T, topic string) error {
			p, err := ckafka.NewProducer(config(t, ckafka.ConfigMap{"transactional.id": "acl-ckgo-tx", "transaction.timeout.ms": 30000}))
			if err != nil {
				t.Fatalf("NewProducer: %v", err)
			}
			defer p.Close()
			defer drainLogs(t, p.Logs())()
			ctx, cancel := context.WithTimeout(context.Background(), aclDeniedTimeout)
			defer cancel()
			if err := p.InitTransactions(ctx); err != nil {
				return err
			}
			if err := p.BeginTransaction(); err != nil {
				return err
			}
			if err := p.Produce(&ckafka.Message{
				TopicPartition: ckafka.TopicPartition{Topic: &topic, Partition: ckafka.PartitionAny}, Value: []byte("denied"),
			}, nil); err != nil {
				return err
			}
			return p.CommitTransaction(ctx)
		}, ckafka.ErrTransactionalIDAuthorizationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "acl-ckgo-" + tc.name
			createTopic(t, s.adm, topic, 1, nil)
			tc.setup(topic)
			err := tc.try(t, topic)
			var ke ckafka.Error
			if !errors.As(err, &ke) || ke.Code() != tc.want {
				t.Fatalf("confluent-kafka-go %s: %v, want %s (%d)", tc.name, err, tc.want, int(tc.want))
			}
			s.noData(topic)
		})
	}
}
