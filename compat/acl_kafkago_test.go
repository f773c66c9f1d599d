package compat

// The ACL authorizer as segmentio/kafka-go's Client meets it, over
// SCRAM-SHA-256 as User:alice: a denied produce, a denied consume (Fetch; both
// with DESCRIBE granted, as kafka-go's Client calls an undescribable topic
// "not found" before sending anything)
// and a denied group (FindCoordinator, where Kafka checks DESCRIBE on the
// group), each with the Kafka error kafka-go reports and nothing written.
// kafka-go has no transactions, so there is no transactional-id case.

import (
	"context"
	"errors"
	"testing"

	segkafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kadm"
)

func TestACLKafkaGo(t *testing.T) {
	// Logging in over SASL SCRAM is the matrix's SASL cell.
	recordCap(t, "segmentio/kafka-go", moduleVersion("github.com/segmentio/kafka-go"), capSASL)
	s := startACLBroker(t)
	mech, err := scram.Mechanism(scram.SHA256, saslUser, saslScramPass)
	if err != nil {
		t.Fatal(err)
	}
	// A client per case: a Transport caches metadata (MetadataTTL), and
	// each case's topic is created after the previous case ran.
	client := func() *segkafka.Client {
		return &segkafka.Client{Addr: segkafka.TCP(s.saslAddr), Timeout: aclDeniedTimeout,
			Transport: &segkafka.Transport{SASL: mech, ClientID: "kbroker-compat-acl"}}
	}
	describe := func(topic string) { s.allow("topic", topic, kadm.OpDescribe) }
	for _, tc := range []aclCase[segkafka.Error]{
		// kafka-go's Client looks the topic up in Metadata first and calls
		// a topic it may not DESCRIBE "not found" itself: DESCRIBE lets
		// the Produce and Fetch reach the broker, which denies them.
		{"produce", describe, func(t *testing.T, topic string) error {
			resp, err := client().Produce(context.Background(), &segkafka.ProduceRequest{Topic: topic, Partition: 0,
				RequiredAcks: segkafka.RequireAll, Records: segkafka.NewRecordReader(segkafka.Record{Value: segkafka.NewBytes([]byte("denied"))})})
			if err != nil {
				return err
			}
			return resp.Error
		}, segkafka.TopicAuthorizationFailed},
		{"consume", describe, func(t *testing.T, topic string) error {
			resp, err := client().Fetch(context.Background(), &segkafka.FetchRequest{Topic: topic, Partition: 0, Offset: 0, MaxBytes: 1 << 20})
			if err != nil {
				return err
			}
			if resp.Records != nil {
				if r, err := resp.Records.ReadRecord(); err == nil {
					t.Fatalf("kafka-go fetched a record it may not read: %+v", r)
				}
			}
			return resp.Error
		}, segkafka.TopicAuthorizationFailed},
		{"group", func(topic string) { s.allow("topic", topic, kadm.OpRead) }, func(t *testing.T, topic string) error {
			resp, err := client().FindCoordinator(context.Background(), &segkafka.FindCoordinatorRequest{Key: "acl-kafkago-group", KeyType: segkafka.CoordinatorKeyTypeConsumer})
			if err != nil {
				return err
			}
			return resp.Error
		}, segkafka.GroupAuthorizationFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := "acl-kafkago-" + tc.name
			createTopic(t, s.adm, topic, 1, nil)
			tc.setup(topic)
			if err := tc.try(t, topic); !errors.Is(err, tc.want) {
				t.Fatalf("kafka-go %s: %v, want %s (%d)", tc.name, err, tc.want.Error(), int(tc.want))
			}
			s.noData(topic)
		})
	}
}
