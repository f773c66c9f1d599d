#!/usr/bin/env bash
# One line a second of what a benchmark's tail may come from, until killed:
# free memory, page cache, dirty and writeback pages, the kernel's reclaim
# and fault counters (/proc/vmstat), pages reported free to the hypervisor
# (virtio_balloon free page reporting, when the VM has it), the machine's
# CPU ticks (user+nice, system, idle, iowait) and, per process of the
# benchmark (the test binary, kbroker, Kafka's JVM), its minor faults and
# user and system ticks (/proc/<pid>/stat fields 10, 14, 15).
#
#   scripts/benchmon.sh > /tmp/mon.log & M=$!; go test ./compat/ -bench ...; kill $M
#
# docs/PERFORMANCE.md ("The load generator's own tail", "The single node
# again") found the load generator's page faults this way.
set -u
procs=${BENCHMON_PROCS:-'compat.test|integration.test|kbroker -|kafka.Kafka'}
reported=/sys/module/page_reporting/parameters/reported_kib
while true; do
  line="$(date -u +%T.%N | cut -c1-12) "
  line+=$(awk '/^(MemFree|Cached|Dirty|Writeback):/ {printf "%s=%dM ", $1, $2/1024}' /proc/meminfo)
  line+=$(grep -E '^(pgfault|pgmajfault|pgscan_kswapd|pgscan_direct|pgsteal_kswapd|pgsteal_direct|allocstall_normal|allocstall_movable|compact_stall) ' /proc/vmstat | awk '{printf "%s=%s ", $1, $2}')
  [ -r "$reported" ] && line+="reported_kib=$(cat "$reported") "
  line+="cpu=$(head -1 /proc/stat | awk '{print $2+$3 "," $4 "," $5 "," $6}') "
  for p in $(pgrep -f "$procs"); do
    line+="$(cat /proc/"$p"/comm 2>/dev/null):$p:$(awk '{print $10 "," $14 "," $15}' /proc/"$p"/stat 2>/dev/null) "
  done
  echo "$line"
  sleep 1
done
