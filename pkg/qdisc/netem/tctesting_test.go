package netem_test

import (
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
	"github.com/netqdisc/netqdisc/pkg/qdisc/netem/netemtest"
)

// TestTCTesting runs Linux's tc-testing cases for netem on the words:
// each case's words (after its setup's, for a change or a replace, as
// netem_change puts them in force) are read by Parse, put in force, and
// the qdisc's line, as `tc qdisc show dev X` prints a netem of handle 1:
// ("qdisc netem 1: root refcnt 2 limit 1000 ..."), holds the case's
// pattern as many times as Linux's does. A case netqdisc cannot do says
// why (Refused): a tree of netems, deleting the root qdisc; the words of
// each netem of a tree are read all the same. Cases of what `tc class
// show` prints are runsc-flags' (TestNetemTCTesting).
func TestTCTesting(t *testing.T) {
	cases, err := netemtest.TCCases()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.ID, func(t *testing.T) {
			if tc.Refused != "" {
				for _, w := range append([]string{tc.Words}, tc.Tree...) {
					if _, err := netem.Parse(w); err != nil {
						t.Errorf("%s: netem %q refused: %v", tc.Name, w, err)
					}
				}
				if !strings.Contains(tc.Refused, "netqdisc") && !strings.Contains(tc.Refused, "runsc") {
					t.Errorf("%s: refused %q does not say what netqdisc lacks", tc.Name, tc.Refused)
				}
				return
			}
			if tc.Verify != "qdisc" {
				t.Skipf("%s: tc %s show is runsc-flags' (TestNetemTCTesting)", tc.Name, tc.Verify)
			}
			first := tc.Words
			if tc.HasSetup {
				first = tc.Setup
			}
			c, err := netem.Parse(first)
			if err != nil {
				t.Fatalf("%s: netem %q: %v", tc.Name, first, err)
			}
			q, err := netem.NewQueue(c)
			if err != nil {
				t.Fatal(err)
			}
			if tc.HasSetup {
				c, err := netem.Parse(tc.Words)
				if err != nil {
					t.Fatalf("%s: tc qdisc %s ... netem %q: %v", tc.Name, tc.Command, tc.Words, err)
				}
				if err := q.Change(c, 0); err != nil {
					t.Fatalf("%s: tc qdisc %s ... netem %q: %v", tc.Name, tc.Command, tc.Words, err)
				}
			}
			line := "qdisc netem 1: root refcnt 2 " + strings.TrimPrefix(q.String(), "netem ")
			if n := tc.Matches(line, ""); n != tc.Count {
				t.Errorf("%s: %q matches %q %d times, Linux's %d", tc.Name, line, tc.Match, n, tc.Count)
			}
		})
	}
}
