package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
)

// TestRunscHTBAnnotationPromise: in a runsc sandbox a pod's htb
// annotation runs merged into the operator's tree, as the policy checked
// it, and never lets the operator's class of the peer send more than the
// operator's tree lets it, measured at the peer. The operator: a 100 Mbit/s
// root, the peer's class 1:10 by a destination filter (20 Mbit/s), the
// rest in the default 1:20. A restatement of the root and of 1:10 lowered
// to 10 Mbit/s (which runsc once ran alone, with no filter: unshaped);
// the docs' own tightening, a class named without its parent; a split of
// 1:10 eight ways that shares its rate (one borrower, a catch-all). A
// split eight ways at the class's rate each is refused before any
// sandbox runs.
func TestRunscHTBAnnotationPromise(t *testing.T) {
	operator := "qdisc default 20; class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:10 rate 20mbit; class parent 1:1 classid 1:20 rate 80mbit ceil 100mbit; filter dst " + lab.PeerAddr + "/32 classid 1:10"
	eight := func(words func(n int) string) string {
		var parts []string
		for n := 1; n <= 8; n++ {
			parts = append(parts, fmt.Sprintf("class parent 1:10 classid 1:1%d %s", n, words(n)))
			if n < 8 {
				parts = append(parts, fmt.Sprintf("filter parent 1:10 dport %d classid 1:1%d", 6000+n, n))
			}
		}
		return strings.Join(append(parts, "filter parent 1:10 classid 1:18"), "; ")
	}
	for _, tc := range []struct {
		name, annotation string
		rate             float64 // what the peer's class may send; 0: refused
		says             string
	}{
		{"a restatement, the peer's class lowered", "class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:10 rate 10mbit", 10 * mbit, ""},
		{"the docs' tightening", "class classid 1:10 ceil 5mbit quota 5gb per 24h then block", 5 * mbit, ""},
		{"split eight ways, sharing the class", eight(func(n int) string {
			if n == 8 { // the catch-all's class, which the streams reach
				return "rate 6mbit ceil 20mbit"
			}
			return "rate 2mbit ceil 2mbit"
		}), 20 * mbit, ""},
		{"split eight ways at the class's rate", eight(func(int) string { return "rate 20mbit ceil 20mbit" }), 0, "rates add up to 160Mbit, above 1:10's 20Mbit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunscRig(t)
			o := lab.SandboxOptions{Runsc: r.runsc, Flags: []string{"--qdisc=htb", "--qdisc-htb=" + operator, "--gso=false"},
				Annotations: map[string]string{"dev.gvisor.flag.qdisc-htb": tc.annotation}}
			if tc.rate == 0 {
				s, err := r.StartSandbox(o)
				if err == nil {
					s.Close()
					t.Fatal("runsc run accepted the split")
				}
				for _, want := range []string{"dev.gvisor.flag.qdisc-htb", tc.says} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("runsc's error does not say %q: %v", want, err)
					}
				}
				return
			}
			s := r.start(t, o)
			res, err := r.MeasureSandbox(s, measure.Options{Streams: 2, Warmup: warmup, Window: measureFor})
			if err != nil {
				t.Fatal(err)
			}
			ratio := res.WireBps / tc.rate
			t.Logf("on-wire %.4f of the %.0f Mbit/s the peer's class may send", ratio, tc.rate/mbit)
			checkRate(t, "on-wire of the class's rate", ratio, 0.95, 1.01)
		})
	}
}
