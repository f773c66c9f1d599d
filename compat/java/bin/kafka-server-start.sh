#!/usr/bin/env bash
# kafka-server-start.sh as Apache Kafka ships it: kafka.Kafka from kafka-tools/kafka_2.13 4.4.0.
# The broker: Kafka's own defaults for its heap and logging.
export KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx1g -Xms1g}"
export KAFKA_JVM_PERFORMANCE_OPTS="${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC}"
export KAFKA_LOG4J_OPTS="${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/config/server-log4j2.properties}"
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" kafka.Kafka "$@"
