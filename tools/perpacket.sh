#!/usr/bin/env bash
# Per-packet cost of the qdiscs alone (lower link discards, 1500-byte
# packets), netqdisc against gVisor's upstream qdiscs, as benchstat tables:
# the fifo and tbf test binaries run alternately, ROUNDS times (10), so
# that drift on a shared machine falls on both alike. Last, the least of
# the rounds for each benchmark and tbf/fifo from them (the least is the
# run the machine disturbed least). The load average before the first
# round and after the last is printed too: on a shared machine, say how
# busy it was with the figures.
#   tools/perpacket.sh [ROUNDS] [BENCHTIME]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
benchtime=${2:-1000000x}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/fifo.test" ./pkg/qdisc/fifo/
go test -c -o "$dir/tbf.test" ./pkg/qdisc/tbf/
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$rounds"); do
  echo "round $i/$rounds" >&2
  "$dir/fifo.test" -test.run XXX -test.bench 'WritePacket' -test.benchtime "$benchtime" -test.cpu 1,4 >> "$dir/fifo.txt"
  "$dir/tbf.test" -test.run XXX -test.bench 'WritePacket' -test.benchtime "$benchtime" -test.cpu 1,4 >> "$dir/tbf.txt"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
# The same benchmark names in every file, for benchstat's columns.
grep -v Upstream "$dir/fifo.txt" > "$dir/netqdisc-fifo.txt"
grep -v 'BenchmarkWritePacket/' "$dir/fifo.txt" | sed 's/BenchmarkUpstreamWritePacket/BenchmarkWritePacket/' > "$dir/upstream-fifo.txt"
sed 's|pkg/qdisc/tbf|pkg/qdisc/fifo|' "$dir/tbf.txt" | grep -v Upstream > "$dir/netqdisc-tbf.txt"
benchstat=(go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da)
echo "== netqdisc fifo against upstream fifo"
"${benchstat[@]}" -filter '.unit:sec/op' upstream-fifo="$dir/upstream-fifo.txt" netqdisc-fifo="$dir/netqdisc-fifo.txt"
echo
echo "== netqdisc tbf (10 Tbit/s: never limiting) against netqdisc fifo, same queues"
"${benchstat[@]}" -filter '.unit:sec/op' netqdisc-fifo="$dir/netqdisc-fifo.txt" netqdisc-tbf="$dir/netqdisc-tbf.txt"
echo
echo "== upstream tbf (one queue) against netqdisc tbf with one queue"
grep 'BenchmarkUpstreamWritePacket' "$dir/tbf.txt" | sed 's/BenchmarkUpstreamWritePacket/BenchmarkWritePacket\/1queue/' | sed 's|^\(BenchmarkWritePacket/1queue\)-4|\1-4|' > "$dir/upstream-tbf.body"
{ grep -E '^(goos|goarch|pkg|cpu):' "$dir/netqdisc-tbf.txt" | sort -u; cat "$dir/upstream-tbf.body"; } > "$dir/upstream-tbf.txt"
grep -E '^(goos|goarch|pkg|cpu):|BenchmarkWritePacket/1queue' "$dir/netqdisc-tbf.txt" > "$dir/netqdisc-tbf-1q.txt"
"${benchstat[@]}" -filter '.unit:sec/op' upstream-tbf="$dir/upstream-tbf.txt" netqdisc-tbf="$dir/netqdisc-tbf-1q.txt"
echo
echo "== least of $rounds rounds: netqdisc fifo, netqdisc tbf (never limiting), tbf/fifo"
least() { awk '$1 ~ /^BenchmarkWritePacket\// { if (!($1 in m) || $3 < m[$1]) m[$1] = $3 } END { for (k in m) print k, m[k] }' "$1" | sort; }
join <(least "$dir/fifo.txt") <(least "$dir/tbf.txt") | awk '{ printf "%-32s %8.1f ns %8.1f ns %6.2fx\n", $1, $2, $3, $3 / $2 }'
