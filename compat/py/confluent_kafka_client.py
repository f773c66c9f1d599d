#!/usr/bin/python3
"""confluent-kafka python (Debian's python3-confluent-kafka, librdkafka) as a
kbroker compat client.

Driven by compat/matrix_proc_test.go; the commands are described there.
Run with /usr/bin/python3: Debian's package is installed for it only.
"""
import json
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

TIMEOUT_S = 60
RETENTION_MS = "3600000"


def fail(msg):
    print("confluent-kafka: " + msg, file=sys.stderr)
    sys.exit(1)


def base(addr):
    return {"bootstrap.servers": addr, "client.id": "kbroker-compat", "broker.address.family": "v4"}


def admin(addr, topic):
    adm = AdminClient(base(addr))
    fs = adm.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1,
                                     config={"retention.ms": RETENTION_MS})], operation_timeout=TIMEOUT_S)
    fs[topic].result(timeout=TIMEOUT_S)
    md = adm.list_topics(topic, timeout=TIMEOUT_S)
    if md.topics[topic].error is not None or len(md.topics[topic].partitions) != 2:
        fail("list_topics %s: %s" % (topic, md.topics[topic]))
    res = ConfigResource("topic", topic)
    configs = adm.describe_configs([res])[res].result(timeout=TIMEOUT_S)
    if configs["retention.ms"].value != RETENTION_MS:
        fail("retention.ms = %s, want %s" % (configs["retention.ms"].value, RETENTION_MS))
    adm.list_groups(timeout=TIMEOUT_S)
    adm.delete_topics([topic], operation_timeout=TIMEOUT_S)[topic].result(timeout=TIMEOUT_S)


def create(addr, topic, partitions, rf="1"):
    adm = AdminClient(base(addr))
    fs = adm.create_topics([NewTopic(topic, num_partitions=int(partitions), replication_factor=int(rf))],
                           operation_timeout=TIMEOUT_S)
    fs[topic].result(timeout=TIMEOUT_S)


def produce(addr, topic, codec, idempotent):
    conf = base(addr)
    conf.update({"compression.type": codec, "acks": "all", "linger.ms": 5,
                 "enable.idempotence": idempotent == "1"})
    p = Producer(conf)
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append("%s: %s" % (msg.key(), err))
            return
        print(json.dumps({"k": msg.key().decode(), "p": msg.partition(), "o": msg.offset()}))

    for line in sys.stdin:
        r = json.loads(line)
        p.produce(topic, key=r["k"].encode(), value=r["v"].encode(),
                  headers=[(k, v.encode()) for k, v in r["h"]], on_delivery=on_delivery)
        p.poll(0)
    left = p.flush(TIMEOUT_S)
    if left:
        fail("%d messages not delivered" % left)
    if errors:
        fail("delivery failed: %s" % errors)


def consume(addr, topic, group, instance, n, isolation=""):
    n = int(n)
    conf = base(addr)
    conf.update({"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                 "fetch.wait.max.ms": 200})
    if instance:
        conf["group.instance.id"] = instance
    if isolation:
        # librdkafka reads committed by default.
        conf["isolation.level"] = isolation
    c = Consumer(conf)
    c.subscribe([topic])
    got = 0
    deadline = time.monotonic() + TIMEOUT_S
    while got < n:
        if time.monotonic() > deadline:
            fail("consumed %d of %d records before the deadline" % (got, n))
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            fail("consume error: %s" % m.error())
        got += 1
        print(json.dumps({"p": m.partition(), "o": m.offset(), "k": m.key().decode(), "v": m.value().decode(),
                          "h": [[k, v.decode()] for k, v in (m.headers() or [])]}))
    c.commit(asynchronous=False)
    c.close()


def transact(addr, topic, txn_id, group, off_topic):
    """Runs the transactions read from stdin, one JSON object a line:
    {"commit": bool, "offset": N, "recs": [{"k","v","h"}...]}, with one
    transactional producer: produce the records, send_offsets_to_transaction
    {OFF_TOPIC partition 0: N} for GROUP when N >= 0, then commit or abort.
    Prints {"k","p","o"} per acknowledged record."""
    txns = [json.loads(line) for line in sys.stdin if line.strip()]
    conf = base(addr)
    conf.update({"transactional.id": txn_id, "acks": "all", "linger.ms": 5})
    p = Producer(conf)
    # The group metadata a consume-transform-produce loop takes from its
    # consumer; this consumer never joins (generation -1, no member id).
    c = Consumer(dict(base(addr), **{"group.id": group}))
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append("%s: %s" % (msg.key(), err))
            return
        print(json.dumps({"k": msg.key().decode(), "p": msg.partition(), "o": msg.offset()}))

    p.init_transactions(TIMEOUT_S)
    for spec in txns:
        p.begin_transaction()
        for r in spec["recs"]:
            p.produce(topic, key=r["k"].encode(), value=r["v"].encode(),
                      headers=[(k, v.encode()) for k, v in r["h"]], on_delivery=on_delivery)
            p.poll(0)
        left = p.flush(TIMEOUT_S)
        if left or errors:
            fail("%d messages not delivered, errors: %s" % (left, errors))
        if spec["offset"] >= 0:
            p.send_offsets_to_transaction([TopicPartition(off_topic, 0, spec["offset"])],
                                          c.consumer_group_metadata(), TIMEOUT_S)
        if spec["commit"]:
            p.commit_transaction(TIMEOUT_S)
        else:
            p.abort_transaction(TIMEOUT_S)
    c.close()


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "version":
        print("%s (librdkafka %s)" % (confluent_kafka.version()[0], confluent_kafka.libversion()[0]))
    elif cmd == "admin":
        admin(*args)
    elif cmd == "create":
        create(*args)
    elif cmd == "produce":
        produce(*args)
    elif cmd == "consume":
        consume(*args)
    elif cmd == "transact":
        transact(*args)
    else:
        fail("unknown command %s" % cmd)


if __name__ == "__main__":
    main()
