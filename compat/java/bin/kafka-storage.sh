#!/usr/bin/env bash
# kafka-storage.sh as Apache Kafka ships it: kafka.tools.StorageTool from kafka-tools/kafka_2.13 4.4.0.
exec "$(dirname "${BASH_SOURCE[0]}")/kafka-run-class.sh" kafka.tools.StorageTool "$@"
