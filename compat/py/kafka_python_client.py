#!/usr/bin/python3
"""kafka-python (Debian's python3-kafka) as a kbroker compat client.

Driven by compat/matrix_proc_test.go; the commands are described there.
Run with /usr/bin/python3: Debian's python3-kafka is installed for it only.
"""
import json
import sys
import time

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

TIMEOUT_S = 60
RETENTION_MS = "3600000"


def fail(msg):
    print("kafka-python: " + msg, file=sys.stderr)
    sys.exit(1)


def admin(addr, topic):
    adm = KafkaAdminClient(bootstrap_servers=addr, client_id="kbroker-compat",
                           request_timeout_ms=TIMEOUT_S * 1000)
    try:
        resp = adm.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": RETENTION_MS})],
                                 timeout_ms=TIMEOUT_S * 1000)
        for name, code, *_ in resp.topic_errors:
            if code != 0:
                fail("create_topics %s: error %d" % (name, code))
        if topic not in adm.list_topics():
            fail("list_topics lacks %s" % topic)
        found = False
        for r in adm.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]):
            for code, msg, _rtype, name, entries in r.resources:
                if code != 0:
                    fail("describe_configs %s: error %d %s" % (name, code, msg))
                for e in entries:
                    if e[0] == "retention.ms" and e[1] == RETENTION_MS:
                        found = True
        if not found:
            fail("describe_configs: retention.ms is not %s" % RETENTION_MS)
        adm.list_consumer_groups()
        resp = adm.delete_topics([topic], timeout_ms=TIMEOUT_S * 1000)
        for name, code in resp.topic_error_codes:
            if code != 0:
                fail("delete_topics %s: error %d" % (name, code))
        if topic in adm.list_topics():
            fail("list_topics still has %s after delete" % topic)
    finally:
        adm.close()


def create(addr, topic, partitions, rf="1"):
    adm = KafkaAdminClient(bootstrap_servers=addr, client_id="kbroker-compat")
    try:
        resp = adm.create_topics([NewTopic(topic, int(partitions), int(rf))], timeout_ms=TIMEOUT_S * 1000)
        for name, code, *_ in resp.topic_errors:
            if code != 0:
                fail("create_topics %s: error %d" % (name, code))
    finally:
        adm.close()


def produce(addr, topic, codec, idempotent):
    if idempotent == "1":
        fail("kafka-python 2.0 has no idempotent producer")
    # kafka-python 2.0 defaults to retries=0, which hands a leader change's
    # NOT_LEADER_FOR_PARTITION to the application; on a cluster users set it.
    p = KafkaProducer(bootstrap_servers=addr, client_id="kbroker-compat", acks="all", retries=10,
                      compression_type=None if codec == "none" else codec, linger_ms=5,
                      request_timeout_ms=TIMEOUT_S * 1000)
    futures = []
    for line in sys.stdin:
        r = json.loads(line)
        headers = [(k, v.encode()) for k, v in r["h"]]
        futures.append((r["k"], p.send(topic, key=r["k"].encode(), value=r["v"].encode(), headers=headers)))
    p.flush(TIMEOUT_S)
    for key, f in futures:
        md = f.get(timeout=TIMEOUT_S)
        print(json.dumps({"k": key, "p": md.partition, "o": md.offset}))
    p.close(timeout=TIMEOUT_S)


def consume(addr, topic, group, instance, n):
    if instance:
        fail("kafka-python 2.0 has no group.instance.id")
    n = int(n)
    c = KafkaConsumer(topic, bootstrap_servers=addr, client_id="kbroker-compat", group_id=group,
                      auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=200)
    got = 0
    deadline = time.monotonic() + TIMEOUT_S
    while got < n:
        if time.monotonic() > deadline:
            fail("consumed %d of %d records before the deadline" % (got, n))
        for _tp, msgs in c.poll(timeout_ms=500).items():
            for m in msgs:
                got += 1
                print(json.dumps({"p": m.partition, "o": m.offset, "k": m.key.decode(), "v": m.value.decode(),
                                  "h": [[k, v.decode()] for k, v in m.headers]}))
    c.commit()  # synchronous
    c.close(autocommit=False)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "version":
        print(kafka.__version__)
    elif cmd == "admin":
        admin(*args)
    elif cmd == "create":
        create(*args)
    elif cmd == "produce":
        produce(*args)
    elif cmd == "consume":
        consume(*args)
    else:
        fail("unknown command %s" % cmd)


if __name__ == "__main__":
    main()
