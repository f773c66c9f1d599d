#!/usr/bin/python3
"""kafka-python (Debian's python3-kafka) as one member of a consumer group
that churns, driven by compat/rebalance_proc_test.go.

    member ADDR TOPIC GROUP

consumes TOPIC in GROUP (range assignor, 6 s session, 500 ms heartbeats)
until SIGTERM, then leaves the group (LeaveGroup) and exits 0. For every
record it prints {"e":"d","p","o","k"}; after each poll it commits the
polled records synchronously and, if the commit succeeded, prints
{"e":"c","p","o"} per partition (o: the committed next offset). A failed
commit (rebalance, broker down) is reported on stderr only: its records may
be delivered again.
"""
import json
import signal
import sys

from kafka import KafkaConsumer, OffsetAndMetadata
from kafka.coordinator.assignors.range import RangePartitionAssignor

stopping = False


def stop(_sig, _frame):
    global stopping
    stopping = True


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def member(addr, topic, group):
    signal.signal(signal.SIGTERM, stop)
    c = KafkaConsumer(topic, bootstrap_servers=addr, client_id="rb-kafka-python", group_id=group,
                      auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100,
                      session_timeout_ms=6000, heartbeat_interval_ms=500, max_poll_records=50,
                      reconnect_backoff_ms=100, reconnect_backoff_max_ms=500, retry_backoff_ms=100,
                      partition_assignment_strategy=[RangePartitionAssignor])
    while not stopping:
        batch = c.poll(timeout_ms=200)
        if not batch:
            continue
        offsets = {}
        for tp, msgs in batch.items():
            for m in msgs:
                out({"e": "d", "p": m.partition, "o": m.offset, "k": m.key.decode()})
            offsets[tp] = OffsetAndMetadata(msgs[-1].offset + 1, None)
        try:
            c.commit(offsets)  # synchronous
        except Exception as e:  # noqa: BLE001 - any failure: not committed
            print("kafka-python: commit failed: %r" % e, file=sys.stderr)
            continue
        for tp, om in offsets.items():
            out({"e": "c", "p": tp.partition, "o": om.offset})
    c.close(autocommit=False)  # sends LeaveGroup


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "member":
        member(*args)
    else:
        print("kafka-python: unknown command %s" % cmd, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
