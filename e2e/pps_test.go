package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
)

// floodCeiling is the packet ceiling of TestPacketRateFlood, in packets a
// second, with a bucket of floodBurst packets: far below what the 2-core
// machine floods (measured with no ceiling, and logged).
const (
	floodCeiling = 10000
	floodBurst   = 32
)

// TestPacketRateFlood floods with 64-byte frames, from a runsc sandbox to
// the kernel peer (egress) and from the peer to the sandbox (ingress),
// first with no ceiling, then with a packet ceiling of 10,000 packets/s:
// what passes the ceiling is within [0.99, 1.01] of it, and the sandbox's
// CPU under each flood is logged as a table (docs/results.md: A packets-per-second
// ceiling).
func TestPacketRateFlood(t *testing.T) {
	r := newRunscRig(t)
	bin := lab.FloodSender(buildSequdp(t))
	mounts := []string{filepath.Dir(string(bin))}
	ceiling := fmt.Sprint(floodCeiling)
	burst := fmt.Sprint(floodBurst)
	var table strings.Builder
	fmt.Fprintf(&table, "\n| direction | ceiling | offered (pps) | passed (pps) | of the ceiling | sandbox CPU (cores) |\n|---|---|---|---|---|---|\n")
	for _, tc := range []struct {
		direction string
		flags     []string
		ceiling   bool
		flood     func(s *lab.Sandbox) (lab.FloodResult, error)
	}{
		{"egress", []string{"--qdisc=fifo"}, false, func(s *lab.Sandbox) (lab.FloodResult, error) {
			return r.FloodFromSandbox(s, bin, time.Second, 10*time.Second)
		}},
		{"egress", []string{"--qdisc=tbf", "--qdisc-tbf-pkt-rate=" + ceiling, "--qdisc-tbf-pkt-burst=" + burst}, true, func(s *lab.Sandbox) (lab.FloodResult, error) {
			return r.FloodFromSandbox(s, bin, time.Second, 10*time.Second)
		}},
		{"ingress", nil, false, func(s *lab.Sandbox) (lab.FloodResult, error) {
			return r.FloodToSandbox(s, bin, time.Second, 10*time.Second)
		}},
		{"ingress", []string{"--qdisc-ingress-pkt-rate=" + ceiling, "--qdisc-ingress-pkt-burst=" + burst}, true, func(s *lab.Sandbox) (lab.FloodResult, error) {
			return r.FloodToSandbox(s, bin, time.Second, 10*time.Second)
		}},
	} {
		name := tc.direction + " no ceiling"
		if tc.ceiling {
			name = tc.direction + " " + ceiling + " pps"
		}
		t.Run(name, func(t *testing.T) {
			s := r.start(t, lab.SandboxOptions{Flags: append(tc.flags, "--gso=false"), Mounts: mounts})
			defer s.Close()
			res, err := tc.flood(s)
			if err != nil {
				t.Fatal(err)
			}
			ratio := res.Passed / floodCeiling
			shown, of := "none", "-"
			if tc.ceiling {
				shown, of = ceiling+" pps", fmt.Sprintf("%.4f", ratio)
			}
			fmt.Fprintf(&table, "| %s | %s | %.0f | %.0f | %s | %.2f |\n", tc.direction, shown, res.Offered, res.Passed, of, res.CPU)
			t.Logf("%s: offered %.0f pps, passed %.0f pps, sandbox CPU %.2f cores", name, res.Offered, res.Passed, res.CPU)
			if !tc.ceiling {
				// The unshaped flood varies with the VM's load (16,600 to
				// 57,000 pps egress): it must be above the ceiling for the
				// ceiling's run to measure the ceiling, not the flood.
				// Under -race the egress flood is slower (seen: 8,600-8,900
				// pps on this VM, against 17,600 without), and the
				// ceiling's check is only logged there: so is this one.
				if res.Passed < 1.2*floodCeiling {
					msg := fmt.Sprintf("the flood passed %.0f pps with no ceiling: not clearly above the %d pps ceiling the test holds it to", res.Passed, floodCeiling)
					if raceDetector {
						t.Log(msg + " (not asserted under -race)")
					} else {
						t.Error(msg)
					}
				}
				return
			}
			checkRate(t, "packets passed of the ceiling", ratio, 0.99, 1.01)
		})
	}
	t.Log(table.String())
}
