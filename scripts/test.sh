#!/usr/bin/env bash
# The one command that runs every test of kbroker on a fresh Debian machine
# that has only Go: it installs the tools and clients the tests drive (gcc
# for the race detector and confluent-kafka-go; kcat, kafka-python and
# confluent-kafka python and chromium from Debian; kafkajs and
# playwright-core through npm ci), then builds,
# vets and tests every package, and regenerates COMPATIBILITY.md from the
# compat results.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*"; }

# as_root runs a command as root, through sudo only when we are not root.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	else
		sudo "$@"
	fi
}

# apt_install installs Debian packages, refreshing the package lists only if
# the first attempt fails (a fresh machine may have none).
apt_install() {
	export DEBIAN_FRONTEND=noninteractive
	if ! as_root apt-get install -y --no-install-recommends "$@"; then
		as_root apt-get update
		as_root apt-get install -y --no-install-recommends "$@"
	fi
}

step "go version"
go version

# has_deb reports whether a Debian package is installed.
has_deb() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Debian packages the compat tests drive. kafka-python and confluent-kafka
# python load only under Debian's /usr/bin/python3; python3-snappy, -lz4 and
# -zstandard are kafka-python's codecs.
missing=()
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
# Debian's chromium: the web console's browser test (compat/console_browser_test.go)
# drives it headless through playwright-core.
[ -x /usr/bin/chromium ] || missing+=(chromium)
# Java (compat/java): a JDK 17+ and Maven; see the Java block below.
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
# python3-requests, -jsonschema and -protobuf: confluent-kafka's
# SchemaRegistryClient and serializers (compat/py/confluent_kafka_schema_registry.py).
# iproute2 and iptables: integration's fault tests build network namespaces
# and cut links inside them (integration/netns.go).
for pkg in iproute2 iptables kcat python3 python3-pip python3-kafka python3-confluent-kafka python3-snappy python3-lz4 python3-zstandard python3-requests python3-jsonschema python3-protobuf; do
	has_deb "$pkg" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
	step "installing ${missing[*]}"
	apt_install "${missing[@]}"
fi
# --- ZooKeeper for integration/ (cluster mode) -----------------------------
# The integration tests start their own ZooKeeper from Debian's package with
# java and a config of their own (loopback port, own data dir), so only the
# package is needed; its service is not used. CI=true makes its absence a
# test failure rather than a skip.
if ! has_deb zookeeper; then
	step "installing zookeeper"
	apt_install zookeeper
fi
step "zookeeper: $(dpkg-query -W -f='${Version}' zookeeper); $(java -version 2>&1 | head -n1)"
# ---------------------------------------------------------------------------

step "kcat: $(command -v kcat); node $(node --version); npm $(npm --version)"
/usr/bin/python3 -c 'import kafka, confluent_kafka; print("python: kafka-python", kafka.__version__, "/ confluent-kafka", confluent_kafka.version()[0])'

# kafkajs and its codecs, exactly as compat/js/package-lock.json pins them
# (npm keeps its download cache in ~/.npm).
step "npm ci (compat/js)"
(cd compat/js && npm ci --no-audit --no-fund)

# confluent-kafka from PyPI (the newest served; Debian's 1.7.0 predates the
# serializers' current API) with its schema-registry, Avro (fastavro),
# JSON Schema and Protobuf extras, into compat/py/.deps, which only
# compat/schema_registry_python_test.go puts on PYTHONPATH.
step "pip install confluent-kafka 2.16.2 with its serializers (compat/py/.deps)"
if [ ! -d compat/py/.deps/confluent_kafka-2.16.2.dist-info ]; then
	rm -rf compat/py/.deps
	/usr/bin/python3 -m pip install -q --disable-pip-version-check --target compat/py/.deps \
		'confluent-kafka[schemaregistry,avro,json,protobuf]==2.16.2' fastavro==1.13.1
fi

# playwright-core (no browser download: it drives /usr/bin/chromium), as
# compat/browser/package-lock.json pins it.
step "npm ci (compat/browser); $(/usr/bin/chromium --version 2>/dev/null)"
(cd compat/browser && npm ci --no-audit --no-fund)

# ---------------------------------------------------------------- Java
# compat/java is a Maven project (kafka-clients 4.4.0 and 3.9.2, Kafka
# Streams, Apache Kafka 4.4.0 and its tools, all pinned in its poms). This
# resolves them into ~/.m2 and builds it; the compat tests then rebuild it
# with `mvn -q -o` and run its JVMs (compat/java_*_test.go), and
# compat/java/bin/*.sh run Kafka's console tools.
step "mvn package (compat/java; dependencies cached in ~/.m2)"
java -version 2>&1 | head -1
(cd compat/java && mvn -q -B package -DskipTests)
# ------------------------------------------------------------ end of Java

step "go build ./..."
go build ./...

step "go vet ./... (and the faultfs-tagged test build)"
go vet ./...
go vet -tags faultfs ./cmd/... ./broker/

# Both test steps run even if the first fails, so one run reports every
# failure; the script fails if either did. Their output is also kept in logs
# so that the last lines of the run name the failed tests and their messages
# (a failed cluster test dumps ZooKeeper's and the brokers' logs, which would
# otherwise bury them).
failed=()
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# failures prints the failed tests of a go test log with their own messages
# (file.go:line: lines at a test's indent, not the logs they dump), at most
# 40 lines of 300 characters.
failures() {
	grep -E -e '^ *--- FAIL' -e '^ +[A-Za-z0-9_]+\.go:[0-9]+: ' -e '^(panic:|FAIL\s|panic: test timed out)' "$1" |
		cut -c1-300 | tail -n 40 || true
}

# The race detector needs cgo; compat tests drive a separate broker process,
# so they gain nothing from it and run without.
mapfile -t unit_pkgs < <(go list ./... | grep -v '/compat$' || true)
if [ "${#unit_pkgs[@]}" -gt 0 ]; then
	step "go test -race (${#unit_pkgs[@]} packages)"
	CGO_ENABLED=1 go test -race -count=1 -timeout 45m "${unit_pkgs[@]}" 2>&1 | tee "$logs/unit.log" || failed+=("unit tests")
fi

# compat writes its per-client results to compat/results.json (TestMain);
# compatreport turns them into COMPATIBILITY.md, also after failures, so the
# file shows what failed.
results="$PWD/compat/results.json"
rm -f "$results"
step "go test ./compat/ (real clients against real kbroker processes, franz-go's own suite)"
KBROKER_COMPAT_RESULTS="$results" CGO_ENABLED=1 go test -count=1 -timeout 45m ./compat/ 2>&1 | tee "$logs/compat.log" || failed+=("compat tests")

step "COMPATIBILITY.md"
if [ -f "$results" ]; then
	KBROKER_COMPAT_RESULTS="$results" go run ./compat/cmd/compatreport -out COMPATIBILITY.md || failed+=("compat report")
else
	echo "no $results: compat tests did not run to the end"
	failed+=("compat report")
fi

if [ "${#failed[@]}" -gt 0 ]; then
	for log in "$logs"/*.log; do
		if grep -q -E -e '^ *--- FAIL' -e '^(panic:|FAIL\s)' "$log"; then
			step "failures in $(basename "$log" .log) tests"
			failures "$log"
		fi
	done
	step "FAILED: ${failed[*]}"
	exit 1
fi
step "all tests passed"
