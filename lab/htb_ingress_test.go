package lab

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// showBoth is `runsc qdisc show` of a sandbox with htb classes on both
// paths (the same ids, other counters), as runscflags.NIC.Show prints it.
const showBoth = `qdisc htb 1: dev eth0 root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000
 Sent 5000 bytes 5 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:10 parent 1:1 prio 0 rate 980Mbit ceil 1Gbit burst 1600b cburst 1600b
 Sent 4000 bytes 4 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:20 parent 1:1 prio 0 rate 20Mbit ceil 20Mbit burst 1600b cburst 1600b
 Sent 1000 bytes 1 pkt (dropped 0, overlimits 0 requeues 0)
 backlog 0b 0p requeues 0
qdisc ingress ffff: dev eth0 parent ffff:fff1 ----------------
 Sent 271105350 bytes 179119 pkt (dropped 6386, overlimits 24864 requeues 0)
 backlog 1739586b 1149p requeues 0
qdisc htb 1: dev eth0 parent ffff: r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000
 Sent 271105350 bytes 179119 pkt (dropped 6386, overlimits 24864 requeues 0)
 backlog 1739586b 1149p requeues 0
class htb 1:1 root rate 1Gbit ceil 1Gbit burst 1600b cburst 1600b
 Sent 271318824 bytes 179260 pkt (dropped 0, overlimits 367 requeues 0)
 backlog 0b 0p requeues 0
class htb 1:10 parent 1:1 prio 0 rate 980Mbit ceil 1Gbit burst 1600b cburst 1600b
 Sent 259082764 bytes 171162 pkt (dropped 6386, overlimits 16421 requeues 0)
 backlog 1514000b 1000p requeues 0
class htb 1:20 parent 1:1 prio 0 rate 20Mbit ceil 20Mbit burst 1600b cburst 1600b
 Sent 12236060 bytes 8098 pkt (dropped 0, overlimits 8076 requeues 0)
 backlog 225586b 149p requeues 0
`

// TestIngressClassBytes: the receive path's class counters are read from
// its own section of `runsc qdisc show`, not from the egress htb's
// classes of the same ids, nor from a second NIC's; a show with no
// ingress qdisc is an error that says so.
func TestIngressClassBytes(t *testing.T) {
	second := strings.ReplaceAll(showBoth[strings.Index(showBoth, "qdisc ingress"):], "eth0", "eth1")
	second = strings.ReplaceAll(second, "Sent 12236060", "Sent 7")
	ingressOnly := "qdisc noqueue 0: dev eth0 root refcnt 2\n" + showBoth[strings.Index(showBoth, "qdisc ingress"):]
	egress := showBoth[:strings.Index(showBoth, "qdisc ingress")]
	want := map[uint32]uint64{1<<16 | 1: 271318824, ClusterClass: 259082764, InternetClass: 12236060}
	for _, tc := range []struct {
		name string
		show string
		want map[uint32]uint64
		err  string
	}{
		{"egress htb first", showBoth, want, ""},
		{"ingress only", ingressOnly, want, ""},
		{"a second NIC's ingress after", showBoth + second, want, ""},
		{"a second NIC's egress htb after", showBoth + strings.ReplaceAll(egress, "eth0", "eth1"), want, ""},
		{"no ingress", egress, nil, "no ingress qdisc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec, err := ingressSection(tc.show)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseClassBytes(sec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("class bytes (-want +got):\n%s", diff)
			}
		})
	}
}
