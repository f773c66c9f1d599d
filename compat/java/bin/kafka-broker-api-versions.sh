#!/usr/bin/env bash
# kafka-broker-api-versions.sh as Apache Kafka ships it: org.apache.kafka.tools.BrokerApiVersionsCommand from kafka-tools/kafka_2.13 4.4.0.
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
