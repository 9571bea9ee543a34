package runscflags_test

import (
	"strings"
	"testing"
)

// TestShowHTBLeaves: `runsc qdisc show` of htb with fq_codel grafted on
// a leaf in each direction lays them out as tc does: the htb at the root
// with its handle, the leaf's fq_codel on its own line under its class
// with the next handle and fq_codel's own counters, the class naming it
// ("leaf 8001:"), pfifo leaves unnamed; the receive htb grafted under the
// ingress qdisc at ffff:, its leaf's fq_codel numbered after the send
// path's.
func TestShowHTBLeaves(t *testing.T) {
	const htbSample = "qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 990mbit ceil 1gbit; " +
		"class parent 1:1 classid 1:20 rate 10mbit; filter dst 10.0.0.0/8 classid 1:10"
	n := liveNIC(t, "eth0", 1500, map[string]string{
		"qdisc":             "htb",
		"qdisc-htb":         htbSample + "; qdisc parent 1:20 fq_codel",
		"qdisc-ingress-htb": htbSample + "; qdisc parent 1:10 fq_codel",
	})
	show := n.Show()
	for _, want := range []string{
		"qdisc htb 1: dev eth0 root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000\n Sent 0 bytes",
		"qdisc fq_codel 8001: dev eth0 parent 1:20 limit 10240p flows 1024",
		"  maxpacket 0 drop_overlimit 0",
		"class htb 1:20 parent 1:1 leaf 8001: prio 0 rate 10Mbit",
		"class htb 1:10 parent 1:1 prio 0 rate 990Mbit",
		"qdisc ingress ffff: dev eth0 parent ffff:fff1 ----------------\n Sent 0 bytes",
		"qdisc htb 1: dev eth0 parent ffff: r2q 10",
		"qdisc fq_codel 8002: dev eth0 parent 1:10 limit 10240p",
		"class htb 1:10 parent 1:1 leaf 8002: prio 0 rate 990Mbit",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("runsc qdisc show:\n%s\nwant %q", show, want)
		}
	}
	if in := show[strings.Index(show, "qdisc ingress"):]; strings.Contains(in, "leaf 8001:") || strings.Contains(show[:strings.Index(show, "qdisc ingress")], "leaf 8002:") {
		t.Errorf("a leaf named by the other direction's handle:\n%s", show)
	}
}
