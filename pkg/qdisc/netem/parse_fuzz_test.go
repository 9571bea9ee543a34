package netem_test

import (
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
)

// FuzzParseNetem: any words are read or refused with an error, never a
// panic; what is read writes back as words (Config.Words) that read to
// the same words again.
func FuzzParseNetem(f *testing.F) {
	for _, s := range []string{
		"delay 100ms 10ms 25% distribution normal loss 1%",
		"loss state 1% 2% 3% 4% 5% ecn",
		"loss gemodel 1% 10% 70% 0.1% duplicate 5% 1",
		"delay 10ms reorder 25% 50% gap 5 rate 1mbit -4 48 5",
		"slot 1ms 2ms packets 3 bytes 64k seed 42",
		"slot distribution pareto 10ms 2ms limit 5",
		"delay 1e3ns 0x10 lo 5",
		"corrupt 0.5% 25% duplicate 1%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, words string) {
		c, err := netem.ParseWith(words, nil)
		if err != nil {
			return
		}
		w := c.Words()
		c2, err := netem.ParseWith(w, nil)
		if err != nil {
			t.Fatalf("%q read, but its words %q are refused: %v", words, w, err)
		}
		if w2 := c2.Words(); w2 != w {
			t.Fatalf("%q: words %q read back as %q", words, w, w2)
		}
	})
}
