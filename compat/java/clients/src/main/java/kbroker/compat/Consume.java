package kbroker.compat;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/** The consume command: a KafkaConsumer in a group, classic or KIP-848. */
final class Consume {
    private Consume() {}

    /**
     * consume subscribes to topic in group, polls until n records arrived,
     * commits synchronously, closes, and prints the records. instance is the
     * group.instance.id ("" for none); isolation the isolation.level ("" for
     * the default, read_uncommitted); protocol the group.protocol.
     */
    static void consume(String addr, String topic, String group, String instance, int n, String isolation,
            String protocol, PrintWriter out) throws Exception {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, addr);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kbroker-compat-java");
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        // The config name exists since 3.7; "classic" is the default.
        p.put("group.protocol", protocol);
        if (!instance.isEmpty()) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        }
        if (!isolation.isEmpty()) {
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        }
        p.putAll(Client.extra());
        List<ConsumerRecord<String, String>> got = new ArrayList<>();
        long deadline = System.nanoTime() + Client.TIMEOUT.toNanos();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            while (got.size() < n) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("consumed " + got.size() + " of " + n + " records in " + Client.TIMEOUT);
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    got.add(r);
                }
            }
            consumer.commitSync(Client.TIMEOUT);
            consumer.close(Client.TIMEOUT);
        }
        for (ConsumerRecord<String, String> r : got) {
            List<String[]> headers = new ArrayList<>();
            for (Header h : r.headers()) {
                headers.add(new String[] {h.key(), new String(h.value(), StandardCharsets.UTF_8)});
            }
            out.println(Client.rec(r.key(), r.value(), headers, r.partition(), r.offset()));
        }
    }
}
