#!/usr/bin/python3
"""kafka-python (Debian's python3-kafka) against kbroker's ACL authorizer.

Driven by compat/acl_proc_test.go, in the pattern of confluent_kafka_acl.py.
Each command runs one thing the principal may not do and prints the name of
the Kafka error the client raised (e.g. TOPIC_AUTHORIZATION_FAILED) on
stdout; it exits 1 if the client raised no error within the timeout, so
that a broker that allows too much fails. kafka-python 2.0 has no
transactional producer, so there is no denied transactional id here.

kafka-python 2.0.2 does not raise a Metadata TOPIC_AUTHORIZATION_FAILED for a
lone topic (the producer times out, the consumer retries silently), so the
test grants DESCRIBE on the topic and the Produce or Fetch is what is denied.

    kafka_python_acl.py ADDR USER PASSWORD produce TOPIC
    kafka_python_acl.py ADDR USER PASSWORD consume TOPIC GROUP
"""
import sys
import time

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError

TIMEOUT_S = 30


def conf(addr, user, password):
    return {"bootstrap_servers": addr, "client_id": "kbroker-compat-acl",
            "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_plain_username": user, "sasl_plain_password": password}


def name(e):
    """The Kafka error name of a kafka-python error (its class's message)."""
    return getattr(type(e), "message", type(e).__name__)


def produce(c, topic):
    p = KafkaProducer(acks="all", retries=0, max_block_ms=TIMEOUT_S * 1000,
                      request_timeout_ms=TIMEOUT_S * 1000, **c)
    try:
        p.send(topic, value=b"denied").get(TIMEOUT_S)
    except KafkaError as e:
        return name(e)
    finally:
        p.close(TIMEOUT_S)
    return None


def consume(c, topic, group):
    cons = KafkaConsumer(group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **c)
    cons.subscribe([topic])
    deadline = time.time() + TIMEOUT_S
    try:
        while time.time() < deadline:
            for recs in cons.poll(500).values():
                if recs:
                    print("kafka-python: consumed a record it may not read", file=sys.stderr)
                    sys.exit(2)
    except KafkaError as e:
        return name(e)
    finally:
        cons.close(autocommit=False)
    return None


def main():
    addr, user, password, cmd = sys.argv[1:5]
    rest = sys.argv[5:]
    c = conf(addr, user, password)
    if cmd == "produce":
        err = produce(c, rest[0])
    elif cmd == "consume":
        err = consume(c, rest[0], rest[1])
    else:
        print("kafka-python: unknown command " + cmd, file=sys.stderr)
        sys.exit(2)
    if err is None:
        print("kafka-python: %s reported no error" % cmd, file=sys.stderr)
        sys.exit(1)
    print(err)


if __name__ == "__main__":
    main()
