#!/usr/bin/env bash
# kbroker's benchmarks in one command, all on this machine:
#   1. BenchmarkProduceConsume: produce + consume of 1 KiB records through
#      franz-go against kbroker, kfake and Apache Kafka 4.4.0, rounds
#      alternating, medians, kbroker's ratios, the loopback ceiling;
#   2. BenchmarkJavaPerfTools: kafka-producer-perf-test (acks=all,
#      uncompressed and lz4) and kafka-consumer-perf-test against Kafka,
#      kbroker and kfake;
#   3. BenchmarkClusterAcksAll: acks=all produce (idempotent, RF=3,
#      min.insync.replicas=2) on three kbrokers on ZooKeeper beside a
#      three-node Kafka 4.4 KRaft cluster and three Kafka 3.9 brokers in
#      ZooKeeper mode, and on one kbroker and one Kafka 4.4 with RF=1;
#   4. BenchmarkFixedRate: publish and end-to-end latency at fixed offered
#      rates (50 MB/s, 200 MB/s, 70% of each broker's maximum) against
#      kbroker, kfake and Kafka, HdrHistogram percentiles and SVG plots
#      (docs/PERFORMANCE.md);
#   5. BenchmarkSustained: KBROKER_BENCH_SUSTAINED_GB (default 20) produced
#      while a consumer tails, beside dd of the same size on the same disk;
#   6. BenchmarkClusterLatency: part 4's fixed-rate latency (50 and 100
#      MB/s) on part 3's three 3-broker clusters (RF 3, acks=all,
#      min.insync.replicas=2).
# It builds the compat test binary once and prints the load average before
# and after each part (the machine may be shared: read the numbers with it).
#
#   scripts/bench.sh [-o FILE]     -o also writes everything to FILE
#
# Environment: BENCH_ROUNDS (default 5; the first round of each part is a
# warm-up left out of the medians), KBROKER_BENCH_MIB (64, MiB per round of
# part 1), KBROKER_BENCH_RECORDS (200000, part 2), KBROKER_BENCH_CLUSTER_MIB
# (64, part 3), KBROKER_BENCH_SECS (60, part 4), KBROKER_BENCH_SUSTAINED_GB
# (20, part 5), KBROKER_BENCH_SECS also for part 6, BENCH_PARTS (default
# "1 2 3 4 5 6": a subset to run), and those of
# BenchmarkProduceConsume (KBROKER_BENCH_TLS, KBROKER_BENCH_BASELINE,
# KBROKER_BENCH_PPROF). Needs what the Java compat tests need: a JDK and
# Maven, with compat/java's dependencies in ~/.m2 (scripts/test.sh fetches
# them; the first build here falls back to fetching them too).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out=""
if [[ "${1:-}" == "-o" ]]; then
	[[ -n "${2:-}" ]] || { echo "usage: $0 [-o FILE]" >&2; exit 2; }
	out="$(realpath -m "$2")"
	exec > >(tee "$out") 2>&1
elif [[ $# -gt 0 ]]; then
	echo "usage: $0 [-o FILE]" >&2
	exit 2
fi
rounds="${BENCH_ROUNDS:-5}"
parts="${BENCH_PARTS:-1 2 3 4 5 6}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

load() { echo "== $1: $(uptime)"; }

echo "== kbroker $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), $(go version), $(nproc) cores"
# compat/java: offline when ~/.m2 has everything, else Maven fetches it.
if ! (cd "$root/compat/java" && { mvn -q -o -B package -DskipTests || mvn -q -B package -DskipTests; }) >"$tmp/mvn.log" 2>&1; then
	cat "$tmp/mvn.log" >&2
	exit 1
fi
(cd "$root" && go test -c -o "$tmp/compat.test" ./compat/)

run() { # name benchtime [env...]
	local name="$1" benchtime="$2"
	shift 2
	load "before $name"
	(cd "$root/compat" && env "$@" "$tmp/compat.test" -test.run '^$' -test.bench "^$name\$" \
		-test.benchtime "$benchtime" -test.timeout 60m)
	load "after $name"
}

for p in $parts; do
	case "$p" in
	1) run BenchmarkProduceConsume "${rounds}x" KBROKER_BENCH_KAFKA=1 ;;
	2) run BenchmarkJavaPerfTools 1x ;;
	3) run BenchmarkClusterAcksAll "${rounds}x" ;;
	4) run BenchmarkFixedRate 1x ;;
	5) run BenchmarkSustained 1x ;;
	6) run BenchmarkClusterLatency 1x ;;
	*) echo "BENCH_PARTS: unknown part $p (want 1 to 6)" >&2; exit 2 ;;
	esac
done
