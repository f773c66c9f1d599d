package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

/** The producing commands: produce (every codec, idempotent or not) and transact. */
final class Produce {
    private Produce() {}

    static Properties props(String addr) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, addr);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "kbroker-compat-java");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Client.TIMEOUT.toMillis());
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) Client.TIMEOUT.toMillis());
        p.putAll(Client.extra());
        return p;
    }

    static ProducerRecord<String, String> record(String topic, JsonNode r) {
        ProducerRecord<String, String> pr = new ProducerRecord<>(topic, r.get("k").asText(), r.get("v").asText());
        for (JsonNode h : r.path("h")) {
            pr.headers().add(h.get(0).asText(), h.get(1).asText().getBytes(StandardCharsets.UTF_8));
        }
        return pr;
    }

    /**
     * produce sends recs with codec. The Java producer is idempotent by
     * default (since 3.0); idempotent=true keeps that default as users run
     * it, idempotent=false turns it off so that the plain path is tested too.
     */
    static void produce(String addr, String topic, String codec, boolean idempotent, List<JsonNode> recs, PrintWriter out)
            throws Exception {
        Properties p = props(addr);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        if (!idempotent) {
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            sendAll(producer, topic, recs, out);
        }
    }

    /** sendAll sends recs, waits for every acknowledgement, prints them in order. */
    static void sendAll(KafkaProducer<String, String> producer, String topic, List<JsonNode> recs, PrintWriter out)
            throws Exception {
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (JsonNode r : recs) {
            acks.add(producer.send(record(topic, r)));
        }
        producer.flush();
        for (int i = 0; i < recs.size(); i++) {
            RecordMetadata md = acks.get(i).get();
            out.println(Client.rec(recs.get(i).get("k").asText(), null, null, md.partition(), md.offset()));
        }
    }

    /**
     * transact runs the transactions in txns ({"commit","offset","recs"})
     * with one transactional producer: send, sendOffsetsToTransaction for
     * group when offset >= 0, commit or abort.
     */
    static void transact(String addr, String topic, String txnId, String group, String offTopic, List<JsonNode> txns,
            PrintWriter out) throws Exception {
        Properties p = props(addr);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 30000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            for (JsonNode spec : txns) {
                producer.beginTransaction();
                List<JsonNode> recs = new ArrayList<>();
                spec.get("recs").forEach(recs::add);
                sendAll(producer, topic, recs, out);
                long offset = spec.get("offset").asLong();
                if (offset >= 0) {
                    producer.sendOffsetsToTransaction(
                            Map.of(new TopicPartition(offTopic, 0), new OffsetAndMetadata(offset)),
                            new ConsumerGroupMetadata(group));
                }
                if (spec.get("commit").asBoolean()) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
            }
        }
    }

    /**
     * hang leaves a hanging transaction behind, as a producer that dies in
     * the middle of one does: it begins a transaction, writes n records to
     * partition 0 of topic, waits for their acknowledgement and halts the
     * JVM without committing or aborting. Only for one-shot runs (not serve).
     */
    static void hang(String addr, String topic, String txnId, int n, PrintWriter out) throws Exception {
        Properties p = props(addr);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 600000);
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        producer.beginTransaction();
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            acks.add(producer.send(new ProducerRecord<>(topic, 0, "hang-" + i, "hanging-" + i)));
        }
        producer.flush();
        for (int i = 0; i < n; i++) {
            RecordMetadata md = acks.get(i).get();
            out.println(Client.rec("hang-" + i, null, null, md.partition(), md.offset()));
        }
        out.flush();
        Runtime.getRuntime().halt(0);
    }
}
