package e2e

import (
	"fmt"
	"testing"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// TestHTBPrioInRunscHostGSO: in a runsc sandbox with host GSO on (runsc's
// default), two classes of 20 Mbit/s at prio 0 and 1 under a 100 Mbit/s
// root, both busy, share as the kernel's htb shares them, 80/20, in every
// one of three runs (issue 36 saw 61.6/38.4 in three of six, the prio-0
// class's pfifo overflowing).
func TestHTBPrioInRunscHostGSO(t *testing.T) {
	r := newRunscRig(t)
	set := lab.HTBSettings[1] // 20/20 ceil 100 prio 0/1
	for run := range 3 {
		t.Run(fmt.Sprintf("run %d", run), func(t *testing.T) {
			checkHTBBothBusy(t, r, set)
		})
	}
}

// TestHTBGuaranteeInRunscHostGSO: a class guaranteed 5 Mbit/s (ceil 5,
// burst 1600 bytes) at prio 1 beside a busy prio-0 class of 90 ceil 100,
// both busy in a runsc sandbox with host GSO on, gets its 5 and the other
// the rest, within [0.97, 1.03], as the kernel's htb with TSO gives them
// (5.05 and 95.1). Issue 48 saw it starve at 0.00-0.01 Mbit/s. Measured
// once.
func TestHTBGuaranteeInRunscHostGSO(t *testing.T) {
	r := newRunscRig(t)
	set := lab.HTBSetting{
		Label: "90 ceil 100 / 5 ceil 5 burst 1600", Cluster: "rate 90mbit ceil 100mbit prio 0", Internet: "rate 5mbit ceil 5mbit burst 1600 prio 1",
		ClusterAlone: 100 * mbit, InternetAlone: 5 * mbit, Both: [2]uint64{95 * mbit, 5 * mbit},
	}
	checkHTBBothBusy(t, r, set)
}

// checkHTBBothBusy runs set's classes in a runsc sandbox (host GSO on),
// both busy, measured once, and checks each class's rate within [0.97,
// 1.03] of set.Both, the kernel's htb's shares.
func checkHTBBothBusy(t *testing.T, r *runscRig, set lab.HTBSetting) {
	t.Helper()
	s, err := r.StartHTBSandbox(lab.SandboxOptions{Runsc: r.runsc, Flags: set.Flags("")})
	if err != nil {
		t.Fatal(err)
	}
	r.sandboxes = append(r.sandboxes, s)
	r.pids = append(r.pids, s.Pids()...)
	defer s.Close()
	res, err := r.MeasureSandboxHTB(s, lab.Loads(true, true, htbOptions.Streams), htbOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range res.Classes {
		share := c.Bps / float64(set.Both[i])
		t.Logf("class %s: %.2f Mbit/s = %.4f of the kernel's %.2f", classify.ClassID(c.Class), c.Bps*8/1e6, share, float64(set.Both[i])*8/1e6)
		checkRate(t, fmt.Sprintf("class %s's share of the kernel's", classify.ClassID(c.Class)), share, 0.97, 1.03)
	}
	if t.Failed() {
		t.Logf("runsc qdisc show:\n%s", res.TC)
	}
}
