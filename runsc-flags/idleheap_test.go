package runscflags_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// idleBudget is the most heap an idle shaped NIC may hold per direction,
// whatever its qdisc: what lets a node run hundreds of sandboxes.
const idleBudget = 64 << 10

// idleShapings are the shapings TestIdleHeap builds, as runsc's flags
// give them, for each direction.
var idleShapings = []struct {
	name            string
	egress, ingress []string
}{
	{"fifo", []string{"--qdisc=fifo"}, []string{"--qdisc-ingress=fifo"}},
	{"tbf", []string{"--qdisc=tbf", "--qdisc-tbf=rate 100mbit burst 32k latency 25ms"}, []string{"--qdisc-ingress=tbf", "--qdisc-ingress-tbf=rate 100mbit burst 32k latency 25ms"}},
	{"tbf with fq_codel", []string{"--qdisc=tbf", "--qdisc-tbf=rate 100mbit burst 32k", "--qdisc-tbf-child=fq_codel"}, nil},
	{"fq_codel", []string{"--qdisc=fq_codel"}, []string{"--qdisc-ingress=fq_codel", "--qdisc-ingress-fq-codel=target 5ms"}},
	{"htb 3 classes", []string{"--qdisc=htb", "--qdisc-htb=" + idleHTB}, []string{"--qdisc-ingress-htb=" + idleHTB}},
	{"htb fq_codel leaves", []string{"--qdisc=htb", "--qdisc-htb=" + idleHTB + idleLeaves}, []string{"--qdisc-ingress-htb=" + idleHTB + idleLeaves}},
	{"cake", []string{"--qdisc=cake", "--qdisc-cake=bandwidth 100mbit diffserv8"}, []string{"--qdisc-ingress-cake=bandwidth 100mbit diffserv8"}},
}

const (
	idleHTB    = "qdisc default 20; class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:10 rate 60mbit ceil 100mbit; class parent 1:1 classid 1:20 rate 40mbit ceil 100mbit"
	idleLeaves = "; qdisc parent 1:10 fq_codel; qdisc parent 1:20 fq_codel"
)

// TestIdleHeap: an idle shaped NIC, as runsc builds it, holds at most
// idleBudget of heap in each direction for every qdisc (fq_codel's and
// cake's flows come at the first packet). It builds n of each and
// counts the live heap they add.
func TestIdleHeap(t *testing.T) {
	const n = 40
	for _, tc := range idleShapings {
		for _, d := range []struct {
			name  string
			args  []string
			build func(*testing.T, []string) func()
		}{{"egress", tc.egress, buildEgress}, {"ingress", tc.ingress, buildIngress}} {
			if d.args == nil {
				continue
			}
			per := heapPer(n, func() func() { return d.build(t, d.args) })
			t.Logf("%-20s %-7s %6.1f KiB", tc.name, d.name, float64(per)/1024)
			if per > idleBudget {
				t.Errorf("%s %s (%q): an idle NIC holds %.1f KiB of heap, over %d KiB", tc.name, d.name, d.args, float64(per)/1024, idleBudget>>10)
			}
		}
	}
}

// buildEgress builds the send path's qdisc args give, on its own link,
// and returns its Close.
func buildEgress(t *testing.T, args []string) func() {
	cfg, err := parseArgs(args...)
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	q, err := cfg.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	return q.Close
}

// buildIngress builds the receive path args give, on its own link, and
// returns its Close.
func buildIngress(t *testing.T, args []string) func() {
	cfg, err := parseArgs(args...)
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	in, err := cfg.NewIngress(qdisctest.NewLink(clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	return in.Close
}

// heapPer returns the live heap, in bytes, that each of n values build
// makes adds, after garbage collection; then it closes them.
func heapPer(n int, build func() func()) uint64 {
	var before, after runtime.MemStats
	closes := make([]func(), n)
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range closes {
		closes[i] = build()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	for _, c := range closes {
		c()
	}
	if after.HeapAlloc < before.HeapAlloc {
		return 0
	}
	return (after.HeapAlloc - before.HeapAlloc) / uint64(n)
}

// TestIdleHeapNode: a NIC whose sandbox is a class of its node (runsc's
// fifo under the class, each direction) holds at most idleBudget of heap
// while idle too; the seat is a memfd page, mapped, not heap.
func TestIdleHeapNode(t *testing.T) {
	const n = 40
	tree := filepath.Join(t.TempDir(), "node.htb")
	if err := os.WriteFile(tree, []byte("class root classid 1:1 rate 10gbit"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		name string
		args []string
	}{
		{"egress", []string{"--qdisc-node=" + tree, "--qdisc-node-rate=10mbit", "--qdisc-node-ceil=1gbit"}},
		{"ingress", []string{"--qdisc-ingress-node=" + tree, "--qdisc-ingress-node-rate=10mbit", "--qdisc-ingress-node-ceil=1gbit"}},
	} {
		per := heapPer(n, func() func() {
			cfg, err := parseArgs(d.args...)
			if err != nil {
				t.Fatal(err)
			}
			seats, files, err := cfg.JoinNode(os.Getpid())
			if err != nil || len(seats) != 1 {
				t.Fatalf("JoinNode: %v (%d seats)", err, len(seats))
			}
			nc, err := runscflags.AttachNode(seats[0], files[0])
			if err != nil {
				t.Fatal(err)
			}
			clock := faketime.NewManualClock()
			closeNIC := func() {}
			if d.name == "egress" {
				q, err := cfg.NewQueueingDisciplineIn(qdisctest.NewLink(clock), clock, nc)
				if err != nil {
					t.Fatal(err)
				}
				closeNIC = q.Close
			} else {
				in, err := cfg.NewIngressIn(qdisctest.NewLink(clock), clock, nc)
				if err != nil {
					t.Fatal(err)
				}
				closeNIC = in.Close
			}
			return func() { closeNIC(); nc.Close() }
		})
		t.Logf("fifo in a node        %-7s %6.1f KiB", d.name, float64(per)/1024)
		if per > idleBudget {
			t.Errorf("a node's class, %s: an idle NIC holds %.1f KiB of heap, over %d KiB", d.name, float64(per)/1024, idleBudget>>10)
		}
	}
}
