package runscflags_test

import (
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/netem/netemtest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestNetemTCTesting runs Linux's tc-testing cases for netem through
// runsc's flags: each case's words (its setup's first, for a change or a
// replace) as --qdisc-netem, and the same words as a live change of a
// running netem (runsc qdisc change --qdisc-netem=WORDS, netem_change);
// the NIC's `tc qdisc show` / `tc class show` then holds the case's
// pattern as many times as Linux's does (its handle runsc's, and the
// device named, as tc names it when not asked about one device). A case
// Linux runs that runsc refuses is refused saying why: deleting the root
// qdisc (--qdisc cannot change while the sandbox runs); a tree of netems
// cannot be built at all, and the words of its every netem are taken.
func TestNetemTCTesting(t *testing.T) {
	cases, err := netemtest.TCCases()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.ID, func(t *testing.T) {
			switch {
			case tc.Tree != nil:
				for _, w := range append([]string{tc.Words}, tc.Tree...) {
					if _, err := fromArgs("--qdisc=netem", "--qdisc-netem="+w); err != nil {
						t.Errorf("%s: --qdisc-netem=%q refused: %v", tc.Name, w, err)
					}
				}
				if tc.Refused == "" {
					t.Errorf("%s: a tree of netems, which runsc cannot build, with no reason given", tc.Name)
				}
			case tc.Command == "del":
				n := netemNIC(t, "--qdisc=netem", "--qdisc-netem="+tc.Setup)
				_, err := runscflags.Change([]*runscflags.NIC{n}, []string{"--qdisc=none"})
				if err == nil || !strings.Contains(err.Error(), "--qdisc cannot change") || tc.Refused == "" {
					t.Errorf("%s: --qdisc=none on a running netem: %v; want it refused saying --qdisc cannot change (the case's reason: %q)", tc.Name, err, tc.Refused)
				}
				if got := tc.Matches(n.Show(), "eth0"); got != 1 {
					t.Errorf("%s: after the refusal netem shows %d times, want it in force", tc.Name, got)
				}
			default:
				first := tc.Words
				if tc.HasSetup {
					first = tc.Setup
				}
				n := netemNIC(t, "--qdisc=netem", "--qdisc-netem="+first)
				if tc.HasSetup {
					change(t, tc, n)
				}
				if got := tc.Matches(n.Show(), "eth0"); got != tc.Count {
					t.Errorf("%s: flags: tc show holds %q %d times, Linux's %d:\n%s", tc.Name, tc.Match, got, tc.Count, n.Show())
				}
				live := netemNIC(t, "--qdisc=netem", "--qdisc-netem=")
				change(t, tc, live)
				if got := tc.Matches(live.Show(), "eth0"); got != tc.Count {
					t.Errorf("%s: live change: tc show holds %q %d times, Linux's %d:\n%s", tc.Name, tc.Match, got, tc.Count, live.Show())
				}
			}
		})
	}
}

// change puts tc's words in force on n as runsc qdisc change does.
func change(t *testing.T, tc netemtest.TCCase, n *runscflags.NIC) {
	t.Helper()
	if _, err := runscflags.Change([]*runscflags.NIC{n}, []string{"--qdisc-netem=" + tc.Words}); err != nil {
		t.Fatalf("%s: runsc qdisc change --qdisc-netem=%q: %v", tc.Name, tc.Words, err)
	}
}
