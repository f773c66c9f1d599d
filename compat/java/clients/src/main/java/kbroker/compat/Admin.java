package kbroker.compat;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

/**
 * The admin command: the Admin client's everyday calls, each checked against
 * what Apache Kafka answers. It uses only calls that kafka-clients 3.9 has
 * too (listConsumerGroups rather than 4.x's listGroups).
 */
final class Admin {
    private Admin() {}

    static final String RETENTION = "3600000";
    static final String GROUP_SUFFIX = "-admin-group";

    static org.apache.kafka.clients.admin.Admin client(String addr) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, addr);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "kbroker-compat-java-admin");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) Client.TIMEOUT.toMillis());
        p.putAll(Client.extra());
        return org.apache.kafka.clients.admin.Admin.create(p);
    }

    static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
        return f.get(Client.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    static void create(String addr, String topic, int partitions, short rf) throws Exception {
        try (org.apache.kafka.clients.admin.Admin adm = client(addr)) {
            get(adm.createTopics(List.of(new NewTopic(topic, partitions, rf))).all());
        }
    }

    /**
     * exercise: describe the cluster; create topic with 2 partitions and
     * retention.ms; list and describe it; describe and incrementally alter
     * its configs; add a partition; write records and delete those before
     * offset 2; commit offsets for a group, list, describe, fetch and delete
     * the group; delete the topic.
     */
    static void exercise(String addr, String topic) throws Exception {
        try (org.apache.kafka.clients.admin.Admin adm = client(addr)) {
            DescribeClusterResult cluster = adm.describeCluster();
            Collection<Node> nodes = get(cluster.nodes());
            Client.check(nodes.size() >= 1, "describeCluster: nodes " + nodes);
            Client.check(get(cluster.clusterId()) != null, "describeCluster: a cluster id");
            Node controller = get(cluster.controller());
            Client.check(controller != null && !controller.isEmpty(), "describeCluster: controller " + controller);

            // The broker's default replication factor: 1 on one node, as
            // many replicas as min.insync.replicas needs on a cluster (this
            // exercise produces with acks=all).
            NewTopic nt = new NewTopic(topic, Optional.of(2), Optional.empty()).configs(Map.of("retention.ms", RETENTION));
            get(adm.createTopics(List.of(nt)).all());
            Set<String> names = get(adm.listTopics().names());
            Client.check(names.contains(topic), "listTopics has " + topic + ": " + names);
            TopicDescription td = get(adm.describeTopics(List.of(topic)).allTopicNames()).get(topic);
            Client.check(td.partitions().size() == 2, "describeTopics: 2 partitions, got " + td);
            Client.check(td.partitions().get(0).leader() != null, "describeTopics: partition 0 has a leader: " + td);

            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config cfg = get(adm.describeConfigs(List.of(res)).all()).get(res);
            Client.check(RETENTION.equals(cfg.get("retention.ms").value()), "describeConfigs retention.ms: " + cfg.get("retention.ms"));
            Client.check(cfg.get("cleanup.policy") != null && "delete".equals(cfg.get("cleanup.policy").value()),
                    "describeConfigs cleanup.policy default delete: " + cfg.get("cleanup.policy"));
            get(adm.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET)))).all());
            cfg = get(adm.describeConfigs(List.of(res)).all()).get(res);
            Client.check("7200000".equals(cfg.get("retention.ms").value()), "after incrementalAlterConfigs retention.ms: " + cfg.get("retention.ms"));
            Client.check("2000000".equals(cfg.get("max.message.bytes").value()), "after incrementalAlterConfigs max.message.bytes: " + cfg.get("max.message.bytes"));
            get(adm.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", ""), AlterConfigOp.OpType.DELETE)))).all());
            cfg = get(adm.describeConfigs(List.of(res)).all()).get(res);
            Client.check(cfg.get("max.message.bytes").source() != ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG,
                    "after DELETE max.message.bytes is no longer a topic config: " + cfg.get("max.message.bytes"));

            get(adm.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all());
            td = get(adm.describeTopics(List.of(topic)).allTopicNames()).get(topic);
            Client.check(td.partitions().size() == 3, "createPartitions: 3 partitions, got " + td);

            // Records to delete: 5 on partition 0.
            TopicPartition tp0 = new TopicPartition(topic, 0);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Produce.props(addr))) {
                for (int i = 0; i < 5; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
                }
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends =
                    get(adm.listOffsets(Map.of(tp0, OffsetSpec.latest())).all());
            Client.check(ends.get(tp0).offset() == 5, "listOffsets latest: 5, got " + ends.get(tp0));
            var deleted = get(adm.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(2))).all());
            var starts = get(adm.listOffsets(Map.of(tp0, OffsetSpec.earliest())).all());
            Client.check(starts.get(tp0).offset() == 2, "after deleteRecords earliest: 2, got " + starts.get(tp0));

            // A group with committed offsets and no members.
            String group = topic + GROUP_SUFFIX;
            get(adm.alterConsumerGroupOffsets(group, Map.of(tp0, new OffsetAndMetadata(4))).all());
            Map<TopicPartition, OffsetAndMetadata> committed =
                    get(adm.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
            Client.check(committed.get(tp0) != null && committed.get(tp0).offset() == 4, "listConsumerGroupOffsets: 4, got " + committed);
            @SuppressWarnings("deprecation")
            Collection<ConsumerGroupListing> groups = get(adm.listConsumerGroups().all());
            Set<String> ids = groups.stream().map(ConsumerGroupListing::groupId).collect(Collectors.toSet());
            Client.check(ids.contains(group), "listConsumerGroups has " + group + ": " + ids);
            ConsumerGroupDescription gd = get(adm.describeConsumerGroups(List.of(group)).all()).get(group);
            Client.check(gd.members().isEmpty(), "describeConsumerGroups: no members, got " + gd);
            get(adm.deleteConsumerGroups(List.of(group)).all());
            @SuppressWarnings("deprecation")
            Collection<ConsumerGroupListing> after = get(adm.listConsumerGroups().all());
            Client.check(after.stream().noneMatch(g -> g.groupId().equals(group)), "group listed after deleteConsumerGroups: " + after);

            get(adm.deleteTopics(List.of(topic)).all());
            waitGone(adm, topic);
        }
    }

    /** waitGone waits until listTopics no longer has topic. */
    static void waitGone(org.apache.kafka.clients.admin.Admin adm, String topic) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (get(adm.listTopics().names()).contains(topic)) {
            Client.check(System.nanoTime() < deadline, "listTopics still has " + topic + " 30 s after deleteTopics");
            Thread.sleep(100);
        }
    }
}
