#!/usr/bin/python3
"""confluent-kafka python (librdkafka) against kbroker's ACL authorizer.

Driven by compat/acl_test.go. Each command runs one thing the principal may
not do and prints the name of the Kafka error the client reported (e.g.
TOPIC_AUTHORIZATION_FAILED) on stdout; it exits 1 if the client reported no
error within the timeout, so that a broker that allows too much fails.

    confluent_kafka_acl.py ADDR USER PASSWORD produce TOPIC
    confluent_kafka_acl.py ADDR USER PASSWORD consume TOPIC GROUP
    confluent_kafka_acl.py ADDR USER PASSWORD transact TOPIC TRANSACTIONAL_ID
"""
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer

TIMEOUT_S = 30


def conf(addr, user, password):
    return {"bootstrap.servers": addr, "client.id": "kbroker-compat-acl", "broker.address.family": "v4",
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": user, "sasl.password": password}


def produce(c, topic):
    c.update({"acks": "all", "message.timeout.ms": TIMEOUT_S * 1000})
    p = Producer(c)
    errs = []
    p.produce(topic, value=b"denied", on_delivery=lambda err, msg: errs.append(err))
    p.flush(TIMEOUT_S)
    if errs and errs[0] is not None:
        return errs[0].name()
    return None


def consume(c, topic, group):
    c.update({"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    cons = Consumer(c)
    cons.subscribe([topic])
    deadline = time.time() + TIMEOUT_S
    try:
        while time.time() < deadline:
            m = cons.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                return m.error().name()
            print("confluent-kafka: consumed a record it may not read", file=sys.stderr)
            sys.exit(2)
    finally:
        cons.close()
    return None


def transact(c, topic, txn_id):
    c.update({"transactional.id": txn_id, "transaction.timeout.ms": 30000})
    p = Producer(c)
    try:
        p.init_transactions(TIMEOUT_S)
        p.begin_transaction()
        p.produce(topic, value=b"denied")
        p.commit_transaction(TIMEOUT_S)
    except KafkaException as e:
        return e.args[0].name()
    return None


def main():
    addr, user, password, cmd = sys.argv[1:5]
    rest = sys.argv[5:]
    c = conf(addr, user, password)
    if cmd == "produce":
        err = produce(c, rest[0])
    elif cmd == "consume":
        err = consume(c, rest[0], rest[1])
    elif cmd == "transact":
        err = transact(c, rest[0], rest[1])
    else:
        print("confluent-kafka: unknown command " + cmd, file=sys.stderr)
        sys.exit(2)
    if err is None:
        print("confluent-kafka: %s reported no error" % cmd, file=sys.stderr)
        sys.exit(1)
    print(err)


if __name__ == "__main__":
    main()
