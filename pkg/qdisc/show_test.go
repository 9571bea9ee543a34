package qdisc_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// TestWriteTCLayout: WriteTC lays qdiscs out as this machine's tc did
// for the same tree (`tc -s qdisc show`, then `tc class show dev veth0`,
// captured as root in a network namespace, on a veth made with
// numtxqueues 1, so refcnt 2): a child grafted under a tbf's class 1 on
// its own line with the next handle, the ingress qdisc's line, and an
// htb leaf's grafted qdisc, named in its class's line as "leaf 8001:".
// Each tree's classes follow its own qdiscs (tc lists a device's classes
// after all its qdiscs; here the receive shaper's classes, which Linux
// keeps on an ifb device, must not mix with the send path's). tc's
// trailing blanks are left out.
func TestWriteTCLayout(t *testing.T) {
	zero := qdisc.Stats{}
	tbf := qdisc.Showing{Kind: "tbf", Options: "rate 10Mbit burst 32Kb lat 25ms", Stats: zero,
		Children: []qdisc.Grafted{{Class: 1, Showing: qdisc.Showing{Kind: "bfifo", Options: "limit 10000b"}}}}
	ingress := qdisc.Showing{Kind: "ingress", Handle: 0xffff << 16, Options: "----------------"}
	htb := qdisc.Showing{Kind: "htb", Handle: 1 << 16, Options: "r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000",
		Children: []qdisc.Grafted{{Class: 0x10, Showing: qdisc.Showing{Kind: "pfifo", Options: "limit 50p"}}},
		Classes: func(leaf func(uint32) uint32) string {
			var b strings.Builder
			b.WriteString("class htb 1:10 parent 1:1 ")
			if h := leaf(1<<16 | 0x10); h != 0 {
				b.WriteString("leaf " + qdisc.Handle(h) + " ")
			}
			b.WriteString("prio 0 rate 40Mbit ceil 40Mbit burst 1600b cburst 1600b")
			return b.String()
		}}
	for _, tc := range []struct {
		name string
		root qdisc.Showing
		want string
	}{
		// tc qdisc add dev veth0 root tbf rate 10mbit burst 32k latency 25ms
		// tc qdisc add dev veth0 parent 8001:1 bfifo limit 10000
		// tc qdisc add dev veth0 ingress
		{"tbf with a child, and ingress", tbf, `qdisc tbf 8001: dev veth0 root refcnt 2 rate 10Mbit burst 32Kb lat 25ms
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
qdisc bfifo 8002: dev veth0 parent 8001:1 limit 10000b
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
qdisc ingress ffff: dev veth0 parent ffff:fff1 ----------------
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
`},
		// tc qdisc add dev veth0 root handle 1: htb default 20, its classes,
		// tc qdisc add dev veth0 parent 1:10 pfifo limit 50, then
		// tc class show dev veth0 after tc -s qdisc show.
		{"htb with a grafted leaf, and ingress", htb, `qdisc htb 1: dev veth0 root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
qdisc pfifo 8001: dev veth0 parent 1:10 limit 50p
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:10 parent 1:1 leaf 8001: prio 0 rate 40Mbit ceil 40Mbit burst 1600b cburst 1600b
qdisc ingress ffff: dev veth0 parent ffff:fff1 ----------------
 Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			var h qdisc.Handles
			qdisc.WriteTC(&b, "veth0", "root refcnt 2", tc.root, &h)
			qdisc.WriteTC(&b, "veth0", "parent ffff:fff1", ingress, &h)
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteTC (-tc +got):\n%s", diff)
			}
		})
	}
}

// TestGated: a ceiling set on a queue in place shows as tc shows a tbf
// put over it, the queue under its class 1 with the same Sent and no
// overlimits (they are the ceiling's); no ceiling leaves the queue alone.
func TestGated(t *testing.T) {
	fifo := qdisc.Showing{Kind: "fifo", Options: "queues 1 limit 1000p", Stats: qdisc.Stats{Bytes: 3000, Packets: 2, Overlimits: 5}}
	if got := qdisc.Gated(nil, fifo); !cmp.Equal(got.Kind, "fifo") || len(got.Children) != 0 {
		t.Errorf("Gated(nil, fifo) = %+v, want the fifo alone", got)
	}
	got := qdisc.Gated(stringer("tbf rate 10Mbit burst 12500b"), fifo)
	want := qdisc.Showing{Kind: "tbf", Options: "rate 10Mbit burst 12500b", Stats: fifo.Stats,
		Children: []qdisc.Grafted{{Class: 1, Showing: qdisc.Showing{Kind: "fifo", Options: "queues 1 limit 1000p", Stats: qdisc.Stats{Bytes: 3000, Packets: 2}}}}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b func(func(uint32) uint32) string) bool { return a == nil && b == nil })); diff != "" {
		t.Errorf("Gated (-want +got):\n%s", diff)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }
