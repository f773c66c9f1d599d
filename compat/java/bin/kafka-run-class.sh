#!/usr/bin/env bash
# kafka-run-class.sh CLASS ARGS...: runs a class of Apache Kafka 4.4.0
# (kafka_2.13, kafka-tools) on the classpath Maven resolved for
# compat/java/kafka, as Kafka's own bin/kafka-run-class.sh does. It builds
# compat/java first if needed (offline when ~/.m2 has everything).
# KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_LOG4J_OPTS and
# KAFKA_OPTS work as in Kafka's script.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
java_dir="$(dirname "$here")"
cp_file="$java_dir/kafka/target/classpath.txt"
if [ ! -s "$cp_file" ]; then
	(cd "$java_dir" && { mvn -q -o -B package -DskipTests || mvn -q -B package -DskipTests; }) >&2
fi
if [ $# -lt 1 ]; then
	echo "usage: $0 CLASS [ARGS...]" >&2
	exit 1
fi
heap="${KAFKA_HEAP_OPTS:--Xmx256m}"
perf="${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseSerialGC -XX:TieredStopAtLevel=1}"
log4j="${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=$java_dir/config/tools-log4j2.properties}"
# shellcheck disable=SC2086 # the option variables are word lists, as in Kafka's script
exec java $heap $perf $log4j ${KAFKA_OPTS:-} -cp "$(cat "$cp_file")" "$@"
