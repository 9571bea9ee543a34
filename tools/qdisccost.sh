#!/usr/bin/env bash
# Per-packet cost of a qdisc beside the one its issue bounds it by, least
# of ROUNDS (8) rounds, never limiting, on the shared harness (1500-byte
# packets but for htb-mixed, the lower link discarding):
#   htb   htb with 2 classes and a filter against tbf with one lane
#         (issue 28: <= 1.3x)
#   htb-mixed  the same two with packets of 1500 and 600 bytes in turn
#         (qdisctest.MixedLengths; issue 37: <= 1.3x)
#   cake  cake (unlimited, and shaping at 10 Tbit/s) against fq_codel
#         (issue 29: <= 1.5x), both paced (BenchWritePacketPaced): the two
#         take every packet and drop at their own limits, which unpaced
#         producers reach (drops/op) and would measure instead
# The two test binaries run alternately, at 1 and 4 producers, so that
# drift on a shared machine falls on both alike; then the least of the
# rounds of each and the ratios. The load average before the first round
# and after the last is printed too. With --callgrind it counts
# instructions a packet instead (one producer, valgrind's callgrind:
# repeatable whatever else the machine runs; valgrind runs one thread at
# a time, so cake's paced producer outruns its dispatcher again there,
# and its count includes overflow drops).
#   node  runsc's fifo as a sandbox's class of a node of 100 busy
#         sandboxes against a sandbox-local tbf (issue 38: <= 1.3x)
#   netem netem with no delay against fifo, each the NIC's qdisc
#         (issue 49: <= 1.3x)
#   tools/qdisccost.sh htb|htb-mixed|cake|node|netem [ROUNDS] [BENCHTIME]
#   tools/qdisccost.sh htb|htb-mixed|cake|node|netem --callgrind
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
htb)
  pkgA=./pkg/qdisc/htb/ benchA='^BenchmarkWritePacket$' nameA='htb 2 classes'
  pkgB=./pkg/qdisc/tbf/ benchB='^BenchmarkWritePacket$/^1queue$' nameB='tbf 1 lane'
  ;;
htb-mixed)
  pkgA=./pkg/qdisc/htb/ benchA='^BenchmarkWritePacketMixed$' nameA='htb 2 classes, mixed lengths'
  pkgB=./pkg/qdisc/tbf/ benchB='^BenchmarkWritePacketMixed$/^1queue$' nameB='tbf 1 lane, mixed lengths'
  ;;
cake)
  pkgA=./pkg/qdisc/cake/ benchA='^BenchmarkWritePacketPaced/(unlimited|10Tbit)$' nameA='cake'
  pkgB=./pkg/qdisc/cake/ benchB='^BenchmarkFQCoDelWritePacketPaced$' nameB='fq_codel'
  ;;
node)
  pkgA=./pkg/qdisc/node/ benchA='^BenchmarkNodeClass$/^node-100$' nameA='fifo as a class of a node of 100'
  pkgB=./pkg/qdisc/node/ benchB='^BenchmarkNodeClass$/^local-tbf$' nameB='tbf'
  ;;
netem)
  pkgA=./pkg/qdisc/netem/ benchA='^BenchmarkPerPacket$/^netem$' nameA='netem, no delay'
  pkgB=./pkg/qdisc/netem/ benchB='^BenchmarkPerPacket$/^fifo$' nameB='fifo'
  ;;
*)
  echo "usage: $0 htb|htb-mixed|cake|node|netem [ROUNDS [BENCHTIME] | --callgrind]" >&2
  exit 2
  ;;
esac
shift
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
  CGO_ENABLED=0 go test -c -o "$dir/a.test" "$pkgA"
  CGO_ENABLED=0 go test -c -o "$dir/b.test" "$pkgB"
  benchA=${benchA/(unlimited|10Tbit)/unlimited}
  a=$(count "$dir/a.test" "$benchA")
  b=$(count "$dir/b.test" "$benchB")
  awk -v a="$a" -v b="$b" -v na="$nameA" -v nb="$nameB" 'BEGIN { printf "instructions a packet: %s %d, %s %d, ratio %.2f\n", na, a, nb, b, a / b }'
  exit 0
fi
rounds=${1:-8}
benchtime=${2:-2000000x}
go test -c -o "$dir/a.test" "$pkgA"
go test -c -o "$dir/b.test" "$pkgB"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$rounds"); do
  echo "round $i/$rounds" >&2
  "$dir/a.test" -test.run XXX -test.bench "$benchA" -test.benchtime "$benchtime" -test.cpu 1,4 >> "$dir/a.txt"
  "$dir/b.test" -test.run XXX -test.bench "$benchB" -test.benchtime "$benchtime" -test.cpu 1,4 >> "$dir/b.txt"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# least prints "benchmark ns" for each benchmark of a file, least of the rounds.
least() { awk '$1 ~ /^Benchmark/ { if (!($1 in m) || $3 < m[$1]) m[$1] = $3 } END { for (k in m) print k, m[k] }' "$1" | sort; }
echo "least of $rounds rounds, ns a packet:"
least "$dir/a.txt" | sed "s/^/$nameA: /"
least "$dir/b.txt" | sed "s/^/$nameB: /"
b1=$(least "$dir/b.txt" | awk 'NR == 1 { print $2 }')
b4=$(least "$dir/b.txt" | awk '$1 ~ /-4$/ { print $2 }')
least "$dir/a.txt" | awk -v b1="$b1" -v b4="$b4" -v na="$nameA" -v nb="$nameB" '
  { r = ($1 ~ /-4$/) ? $2 / b4 : $2 / b1; printf "%s / %s: %.2f  (%s)\n", na, nb, r, $1 }'
