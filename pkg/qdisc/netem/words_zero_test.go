package netem_test

import (
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
)

// TestWordsKeepZeroChances: "corrupt 0%" and "reorder 0%" are given, not
// absent: their words say so, so that a runtime that holds a change as
// words (runsc qdisc change) ends the corruption or reordering in force,
// as tc sends TCA_NETEM_CORRUPT and TCA_NETEM_REORDER when named.
func TestWordsKeepZeroChances(t *testing.T) {
	for _, words := range []string{"corrupt 0%", "delay 10ms reorder 0%"} {
		c, err := netem.Parse(words)
		if err != nil {
			t.Fatal(err)
		}
		again, err := netem.Parse(c.Words())
		if err != nil {
			t.Fatalf("%q read back from %q: %v", c.Words(), words, err)
		}
		if again.Corrupt == nil && again.Reorder == nil {
			t.Errorf("%q: words %q lose the zero chance given", words, c.Words())
		}
	}
	cur, err := netem.Parse("corrupt 1%")
	if err != nil {
		t.Fatal(err)
	}
	q, err := netem.NewQueue(cur)
	if err != nil {
		t.Fatal(err)
	}
	off, _ := netem.Parse("corrupt 0%")
	again, _ := netem.Parse(off.Words())
	if err := q.Change(again, 0); err != nil {
		t.Fatal(err)
	}
	if got := q.String(); strings.Contains(got, "corrupt") {
		t.Errorf("after a change to corrupt 0%%, the queue shows %q; want no corruption", got)
	}
}
