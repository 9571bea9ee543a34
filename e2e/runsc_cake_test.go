package e2e

import (
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/lab"
)

// TestRunscCake: a sandbox started with --qdisc=cake and cake's words
// shows cake in `runsc qdisc show`, and `runsc qdisc change
// --qdisc-cake="bandwidth 10mbit"` changes its bandwidth in place (as tc
// qdisc change ... cake does), keeping the rest of cake; the sandbox then
// sends at 10 Mbit/s on the wire (cake charges each frame's length, what
// the peer's veth counts).
func TestRunscCake(t *testing.T) {
	if raceDetector {
		t.Skip("the sandbox is the same runsc either way: measured once, in the run without -race")
	}
	r := newRunscRig(t)
	s := r.start(t, lab.SandboxOptions{Flags: []string{"--qdisc=cake", "--qdisc-cake=bandwidth 20mbit dual-dsthost", "--gso=false"}})
	out, err := s.QDisc("show")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "qdisc cake bandwidth 20Mbit diffserv3 dual-dsthost") || !strings.Contains(out, "thresh") {
		t.Fatalf("runsc qdisc show:\n%s\nwant cake bandwidth 20Mbit with dual-dsthost, and its statistics per tin", out)
	}
	change(t, s, []string{"--qdisc-cake=bandwidth 10mbit"}, "qdisc cake bandwidth 10Mbit diffserv3 dual-dsthost")
	measureAt(t, r, s, "cake changed from 20 to 10 Mbit/s", 10*mbit)
}
