package compat

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaConfig is what a current sarama user configures: a modern protocol
// version, acks=all, successes returned to the SyncProducer.
func saramaConfig(version sarama.KafkaVersion, codec sarama.CompressionCodec, idempotent bool) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "kbroker-compat"
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Compression = codec
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	if idempotent {
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	}
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.MaxWaitTime = 200 * time.Millisecond
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// TestSaramaCodecs produces keyed messages with headers through a sarama
// SyncProducer for every codec and reads them back with ConsumePartition.
func TestSaramaCodecs(t *testing.T) {
	b := startBroker(t, t.TempDir())
	saramaCodecs(t, b.Addr())
	b.Alive()
}

// saramaCodecs is TestSaramaCodecs against any broker at addr.
func saramaCodecs(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	modern := sarama.V3_0_0_0
	cases := []struct {
		name       string
		version    sarama.KafkaVersion
		codec      sarama.CompressionCodec
		idempotent bool
	}{
		{"none", modern, sarama.CompressionNone, false},
		{"gzip", modern, sarama.CompressionGZIP, false},
		{"snappy", modern, sarama.CompressionSnappy, false},
		{"lz4", modern, sarama.CompressionLZ4, false},
		{"zstd", modern, sarama.CompressionZSTD, false},
		{"zstd-idempotent", modern, sarama.CompressionZSTD, true},
		// Older protocol versions, as older sarama configs request them
		// (Produce v5/v7, Fetch v6/v10); Kafka 4 still serves these.
		{"v1.0-gzip", sarama.V1_0_0_0, sarama.CompressionGZIP, false},
		{"v2.1-zstd", sarama.V2_1_0_0, sarama.CompressionZSTD, false},
	}
	const partitions, n = 3, 300
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic := "sarama-" + strings.ReplaceAll(c.name, ".", "_")
			createTopic(t, adm, topic, partitions, nil)
			cfg := saramaConfig(c.version, c.codec, c.idempotent)
			prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("NewSyncProducer: %v", err)
			}
			defer prod.Close()

			msgs := make([]*sarama.ProducerMessage, n)
			for i := range msgs {
				msgs[i] = &sarama.ProducerMessage{
					Topic:   topic,
					Key:     sarama.StringEncoder(fmt.Sprintf("key-%d", i)),
					Value:   sarama.ByteEncoder(fmt.Appendf(nil, "sarama-value-%d-%s", i, bytes.Repeat([]byte("z"), i%100))),
					Headers: []sarama.RecordHeader{{Key: []byte("seq"), Value: fmt.Appendf(nil, "%d", i)}},
				}
			}
			// Most in one SendMessages call (batched and compressed
			// together), the rest one by one.
			if err := prod.SendMessages(msgs[:n-30]); err != nil {
				t.Fatalf("SendMessages: %v", err)
			}
			for _, m := range msgs[n-30:] {
				if _, _, err := prod.SendMessage(m); err != nil {
					t.Fatalf("SendMessage: %v", err)
				}
			}

			want := make(map[int32]map[int64]*sarama.ProducerMessage)
			for _, m := range msgs {
				if want[m.Partition] == nil {
					want[m.Partition] = make(map[int64]*sarama.ProducerMessage)
				}
				if _, dup := want[m.Partition][m.Offset]; dup {
					t.Fatalf("two messages acknowledged at partition %d offset %d", m.Partition, m.Offset)
				}
				want[m.Partition][m.Offset] = m
			}
			consumer, err := sarama.NewConsumer([]string{addr}, cfg)
			if err != nil {
				t.Fatalf("NewConsumer: %v", err)
			}
			defer consumer.Close()
			for p := int32(0); p < partitions; p++ {
				checkSaramaPartition(t, consumer, topic, p, want[p])
			}
		})
	}
}

// checkSaramaPartition consumes partition p from the oldest offset and
// checks that it holds exactly want, at offsets 0..len(want)-1.
func checkSaramaPartition(t *testing.T, consumer sarama.Consumer, topic string, p int32, want map[int64]*sarama.ProducerMessage) {
	t.Helper()
	pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
	if err != nil {
		t.Fatalf("ConsumePartition %d: %v", p, err)
	}
	defer pc.Close()
	deadline := time.NewTimer(opTimeout)
	defer deadline.Stop()
	for next := int64(0); next < int64(len(want)); next++ {
		var got *sarama.ConsumerMessage
		select {
		case got = <-pc.Messages():
		case cerr := <-pc.Errors():
			t.Fatalf("partition %d: consumer error: %v", p, cerr)
		case <-deadline.C:
			t.Fatalf("partition %d: got %d of %d messages before the deadline", p, next, len(want))
		}
		if got.Offset != next {
			t.Fatalf("partition %d: message at offset %d, want %d", p, got.Offset, next)
		}
		m, ok := want[got.Offset]
		if !ok {
			t.Fatalf("partition %d offset %d: no message was acknowledged there", p, got.Offset)
		}
		wantKey, _ := m.Key.Encode()
		wantVal, _ := m.Value.Encode()
		if !bytes.Equal(got.Key, wantKey) || !bytes.Equal(got.Value, wantVal) {
			t.Fatalf("partition %d offset %d: got %q=%.40q, want %q=%.40q", p, got.Offset, got.Key, got.Value, wantKey, wantVal)
		}
		if len(got.Headers) != 1 || string(got.Headers[0].Key) != "seq" || !bytes.Equal(got.Headers[0].Value, m.Headers[0].Value) {
			t.Fatalf("partition %d offset %d: headers %v, want seq=%s", p, got.Offset, got.Headers, m.Headers[0].Value)
		}
	}
	if hwm := pc.HighWaterMarkOffset(); hwm != int64(len(want)) {
		t.Fatalf("partition %d: high watermark %d, want %d", p, hwm, len(want))
	}
}
