#!/usr/bin/env bash
# Per-packet cost of htb's classes beside tbf (issue 28's bound: htb with 2
# classes and a filter, never limiting, <= 1.3x tbf with one lane, least
# of 8): the htb and tbf test binaries run alternately, ROUNDS times (8),
# at 1 and 4 producers, so that drift on a shared machine falls on both
# alike; then the least of the rounds of each and htb/tbf. The load
# average before the first round and after the last is printed too.
# With --callgrind it counts instructions a packet instead (one producer,
# valgrind's callgrind: repeatable whatever else the machine runs).
#   tools/htbcost.sh [ROUNDS] [BENCHTIME]
#   tools/htbcost.sh --callgrind
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
if [ "${1:-}" = --callgrind ]; then
  # The difference of a 600,000- and a 200,000-packet run over 400,000,
  # so that start-up and the benchmark's first run cancel. cpu.rdtscp=off:
  # valgrind does not know RDTSCP, which the runtime's lock timing uses.
  count() { # test binary, benchmark -> instructions a packet
    local n r=()
    for n in 200000 600000; do
      GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --callgrind-out-file="$dir/cg.out" \
        "$1" -test.run XXX -test.bench "$2" -test.benchtime ${n}x -test.cpu 1 >/dev/null 2>"$dir/cg.err"
      r+=("$(awk '/Collected/ { print $4 }' "$dir/cg.err")")
    done
    echo $(((r[1] - r[0]) / 400000))
  }
  CGO_ENABLED=0 go test -c -o "$dir/htb.test" ./pkg/qdisc/htb/
  CGO_ENABLED=0 go test -c -o "$dir/tbf.test" ./pkg/qdisc/tbf/
  h=$(count "$dir/htb.test" '^BenchmarkWritePacket$')
  t=$(count "$dir/tbf.test" '^BenchmarkWritePacket/1queue$')
  awk -v h="$h" -v t="$t" 'BEGIN { printf "instructions a packet: htb %d, tbf %d, htb/tbf %.2f\n", h, t, h / t }'
  exit 0
fi
rounds=${1:-8}
benchtime=${2:-2000000x}
go test -c -o "$dir/htb.test" ./pkg/qdisc/htb/
go test -c -o "$dir/tbf.test" ./pkg/qdisc/tbf/
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$rounds"); do
  echo "round $i/$rounds" >&2
  "$dir/htb.test" -test.run XXX -test.bench '^BenchmarkWritePacket$' -test.benchtime "$benchtime" -test.cpu 1,4 >> "$dir/htb.txt"
  "$dir/tbf.test" -test.run XXX -test.bench '^BenchmarkWritePacket/(1queue|2queues)$' -test.benchtime "$benchtime" -test.cpu 1,4 >> "$dir/tbf.txt"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
least() { awk '$1 ~ /^Benchmark/ { if (!($1 in m) || $3 < m[$1]) m[$1] = $3 } END { for (k in m) print k, m[k] }' "$1" | sort; }
echo "least of $rounds rounds, ns a packet:"
least "$dir/htb.txt" | sed 's/^BenchmarkWritePacket/htb 2 classes/'
least "$dir/tbf.txt" | sed 's/^BenchmarkWritePacket\//tbf /'
h1=$(least "$dir/htb.txt" | awk '$1 == "BenchmarkWritePacket" { print $2 }')
h4=$(least "$dir/htb.txt" | awk '$1 == "BenchmarkWritePacket-4" { print $2 }')
t1=$(least "$dir/tbf.txt" | awk '$1 == "BenchmarkWritePacket/1queue" { print $2 }')
t4=$(least "$dir/tbf.txt" | awk '$1 == "BenchmarkWritePacket/1queue-4" { print $2 }')
awk -v h1="$h1" -v h4="$h4" -v t1="$t1" -v t4="$t4" 'BEGIN { printf "htb/tbf (one lane): %.2f at 1 producer, %.2f at 4\n", h1 / t1, h4 / t4 }'
