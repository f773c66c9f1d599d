#!/usr/bin/env bash
# Starts a local kbroker cluster: one ZooKeeper (Debian's zookeeper package,
# run with java and a config of our own, so nothing goes to /var/log) and
# three brokers on 127.0.0.1, each with its own port and data dir.
#
#   scripts/cluster.sh [up]      start (default): ZooKeeper on 2181, brokers on 9092-9094
#   scripts/cluster.sh down      stop the brokers (SIGTERM: controlled shutdown), then ZooKeeper
#   scripts/cluster.sh status    what is running
#
# Environment: KBROKER_CLUSTER_DIR (default /tmp/kbroker-cluster) holds the
# data, logs and pids; ZK_PORT (2181), BASE_PORT (9092), BROKERS (3);
# ZOOKEEPER_CLASSPATH (default Debian's /usr/share/java/zookeeper.jar plus
# slf4j-simple). Extra broker properties: KBROKER_OPTS="--override k=v ...".
# Clients bootstrap from 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${KBROKER_CLUSTER_DIR:-/tmp/kbroker-cluster}"
zk_port="${ZK_PORT:-2181}"
base_port="${BASE_PORT:-9092}"
brokers="${BROKERS:-3}"
cp="${ZOOKEEPER_CLASSPATH:-/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar}"

alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_port() { # host port seconds
	for _ in $(seq $((${3} * 10))); do
		if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	return 1
}

up() {
	command -v java >/dev/null || { echo "java not found (apt-get install zookeeper pulls it in)" >&2; exit 1; }
	[[ -f "${cp%%:*}" ]] || { echo "${cp%%:*} not found: apt-get install zookeeper, or set ZOOKEEPER_CLASSPATH" >&2; exit 1; }
	mkdir -p "$dir/zookeeper" "$dir/bin"
	(cd "$root" && go build -o "$dir/bin/kbroker" ./cmd/kbroker)
	if ! alive "$dir/zookeeper.pid"; then
		cat >"$dir/zookeeper/zoo.cfg" <<CFG
tickTime=2000
dataDir=$dir/zookeeper/data
clientPort=$zk_port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok,stat
CFG
		nohup java -Xmx256m -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain \
			"$dir/zookeeper/zoo.cfg" >"$dir/zookeeper/zookeeper.log" 2>&1 &
		echo $! >"$dir/zookeeper.pid"
		wait_port 127.0.0.1 "$zk_port" 60 || { echo "ZooKeeper did not start; see $dir/zookeeper/zookeeper.log" >&2; exit 1; }
		echo "zookeeper on 127.0.0.1:$zk_port (log $dir/zookeeper/zookeeper.log)"
	fi
	for i in $(seq 1 "$brokers"); do
		port=$((base_port + i - 1))
		pid="$dir/broker-$i.pid"
		alive "$pid" && { echo "broker $i already running"; continue; }
		mkdir -p "$dir/broker-$i"
		# shellcheck disable=SC2086
		nohup "$dir/bin/kbroker" \
			--override broker.id="$i" \
			--override listeners="PLAINTEXT://127.0.0.1:$port" \
			--override http.listeners="http://127.0.0.1:$((9644 + i - 1))" \
			--override schema.registry.listeners="http://127.0.0.1:$((8081 + i - 1))" \
			--override rest.proxy.listeners="http://127.0.0.1:$((18082 + i - 1))" \
			--override log.dirs="$dir/broker-$i/data" \
			--override zookeeper.connect="127.0.0.1:$zk_port/kbroker" \
			--override default.replication.factor="$(( brokers < 3 ? brokers : 3 ))" \
			--override min.insync.replicas="$(( brokers < 3 ? 1 : 2 ))" \
			${KBROKER_OPTS:-} >"$dir/broker-$i/kbroker.log" 2>&1 &
		echo $! >"$pid"
	done
	for i in $(seq 1 "$brokers"); do
		port=$((base_port + i - 1))
		wait_port 127.0.0.1 "$port" 30 || { echo "broker $i did not start; see $dir/broker-$i/kbroker.log" >&2; exit 1; }
		echo "broker $i on 127.0.0.1:$port, metrics http://127.0.0.1:$((9644 + i - 1))/metrics, REST proxy http://127.0.0.1:$((18082 + i - 1)) (log $dir/broker-$i/kbroker.log)"
	done
	echo "bootstrap: $(seq -s, -f "127.0.0.1:%g" "$base_port" $((base_port + brokers - 1)))"
}

down() {
	for i in $(seq 1 "$brokers"); do
		pid="$dir/broker-$i.pid"
		if alive "$pid"; then
			kill -TERM "$(cat "$pid")"
			for _ in $(seq 600); do alive "$pid" || break; sleep 0.1; done
			echo "broker $i stopped"
		fi
		rm -f "$pid"
	done
	if alive "$dir/zookeeper.pid"; then
		kill -TERM "$(cat "$dir/zookeeper.pid")"
		echo "zookeeper stopped"
	fi
	rm -f "$dir/zookeeper.pid"
}

status() {
	alive "$dir/zookeeper.pid" && echo "zookeeper: running" || echo "zookeeper: stopped"
	for i in $(seq 1 "$brokers"); do
		alive "$dir/broker-$i.pid" && echo "broker $i: running" || echo "broker $i: stopped"
	done
}

case "${1:-up}" in
up) up ;;
down) down ;;
status) status ;;
*) echo "usage: $0 [up|down|status]" >&2; exit 2 ;;
esac
