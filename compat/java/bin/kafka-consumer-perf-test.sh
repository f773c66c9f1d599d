#!/usr/bin/env bash
# kafka-consumer-perf-test.sh as Apache Kafka ships it: org.apache.kafka.tools.ConsumerPerformance from kafka-tools/kafka_2.13 4.4.0.
# A benchmark: full JIT and a bigger heap unless told otherwise.
export KAFKA_JVM_PERFORMANCE_OPTS="${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC}"
export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx1g}"
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" org.apache.kafka.tools.ConsumerPerformance "$@"
