package runscflags

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestNodeKinds: a sandbox's own qdisc, each kind as runsc builds it
// (NewQueueingDisciplineIn), sits under its class of a node: backlogged
// alone on the node, its NIC sends the class's ceil (40 Mbit/s under a
// root of 100), or its own qdisc's rate where that is lower, within 1%
// over a second of a ManualClock. runsc's default fifo is fq there (flow
// queueing under the class's ceiling); a fifo given words stays a fifo.
func TestNodeKinds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		want  uint64 // Mbit/s
	}{
		{"fifo", []string{"--qdisc=fifo"}, 40},
		{"fifo with words", []string{"--qdisc=fifo", "--qdisc-fifo=limit 500"}, 40},
		{"tbf below the class", []string{"--qdisc=tbf", "--qdisc-tbf-rate=20mbit", "--qdisc-tbf-burst=3028"}, 20},
		{"tbf above the class", []string{"--qdisc=tbf", "--qdisc-tbf-rate=1gbit", "--qdisc-tbf-burst=64kb"}, 40},
		{"fq_codel", []string{"--qdisc=fq_codel"}, 40},
		{"htb by destination", []string{"--qdisc=htb", "--qdisc-htb=qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 900mbit ceil 1gbit; class parent 1:1 classid 1:20 rate 30mbit; filter dst 10.0.0.0/8 classid 1:10"}, 30},
		{"cake unlimited", []string{"--qdisc=cake", "--qdisc-cake=unlimited"}, 40},
		{"cake below the class", []string{"--qdisc=cake", "--qdisc-cake=bandwidth 25mbit"}, 25},
		{"netem", []string{"--qdisc=netem", "--qdisc-netem=delay 1ms"}, 40},
		{"netem's rate below the class", []string{"--qdisc=netem", "--qdisc-netem=rate 15mbit"}, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := filepath.Join(t.TempDir(), "node.htb")
			if err := os.WriteFile(tree, []byte("class root classid 1:1 rate 100mbit"), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := parse(t, append([]string{"--qdisc-node=" + tree, "--qdisc-node-rate=10mbit", "--qdisc-node-ceil=40mbit"}, tc.flags...)...)
			if err != nil {
				t.Fatal(err)
			}
			seats, files, err := c.JoinNode(os.Getpid())
			if err != nil {
				t.Fatal(err)
			}
			nc, err := AttachNode(seats[0], files[0])
			files[0].Close()
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			clock := faketime.NewManualClock()
			link := qdisctest.NewLink(clock)
			sq, err := c.NewQueueingDisciplineIn(link, clock, nc)
			if err != nil {
				t.Fatal(err)
			}
			defer sq.Close()
			q := sq.(qdisc.Discipline)
			if kind, _ := qdisc.SplitKind(q.String()); (kind == "fq") != (tc.name == "fifo") {
				t.Errorf("%s under a node's class is %q; want fq for runsc's default fifo only", tc.name, q.String())
			}
			var seq uint64
			// step keeps the qdisc backlogged for d, 1 ms at a time, and
			// returns the bytes the link took. The node's allocator
			// steps on the real clock, as on a host: the sandbox's
			// clock keeps pace with it.
			step := func(d time.Duration) uint64 {
				_, before := link.Count()
				start := time.Now()
				for ms := range int(d / time.Millisecond) {
					if ms%10 == 0 {
						time.Sleep(time.Until(start.Add(time.Duration(ms) * time.Millisecond)))
					}
					for q.Stats().BacklogPackets < 20 {
						pkt := qdisctest.MakePacket(1500, uint32(seq%8), seq)
						seq++
						q.WritePacket(pkt)
						pkt.DecRef()
					}
					qdisctest.WaitQuiescent(t, q)
					clock.Advance(time.Millisecond)
				}
				_, after := link.Count()
				return after - before
			}
			step(200 * time.Millisecond) // the class's first steps
			got := float64(step(time.Second)) / float64(tc.want*mbitps)
			if got < 0.99 || got > 1.01 {
				t.Errorf("%s under a class of ceil 40mbit: %.4f of %d Mbit/s", tc.name, got, tc.want)
			}
			if err := nc.Err(); err != nil {
				t.Errorf("the class's step: %v", err)
			}
		})
	}
}
