package netem

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// TestParseShow: tc-netem's words, as tc-netem(8) and the kernel's
// tc-testing cases write them, read into what tc would send and shown
// back as `tc qdisc show` prints the qdisc (iproute2's netem_print_opt).
func TestParseShow(t *testing.T) {
	for _, tc := range []struct{ words, show string }{
		{"", "limit 1000 seed 7"},
		{"limit 100", "limit 100 seed 7"},
		{"delay 100ms", "limit 1000 delay 100ms seed 7"},
		{"delay 100ms 10ms", "limit 1000 delay 100ms  10ms seed 7"},
		{"delay 100ms 10ms 25%", "limit 1000 delay 100ms  10ms 25% seed 7"},
		{"delay 100ms 10ms distribution normal", "limit 1000 delay 100ms  10ms seed 7"},
		{"delay 1.5s", "limit 1000 delay 1.5s seed 7"},
		{"delay 250us", "limit 1000 delay 250us seed 7"},
		{"delay 100", "limit 1000 delay 100ns seed 7"},
		{"loss 1%", "limit 1000 loss 1% seed 7"},
		{"loss random 0.1 25", "limit 1000 loss 0.1% 25% seed 7"},
		{"drop 50%", "limit 1000 loss 50% seed 7"},
		{"loss state 1%", "limit 1000 loss state p13 1% p31 99% p32 0% p23 100% p14 0% seed 7"},
		{"loss state 1% 10% 20% 30% 40%", "limit 1000 loss state p13 1% p31 10% p32 20% p23 30% p14 40% seed 7"},
		{"loss gemodel 1%", "limit 1000 loss gemodel p 1% r 99% 1-h 100% 1-k 0% seed 7"},
		{"loss gemodel 1% 10% 70% 0.1%", "limit 1000 loss gemodel p 1% r 10% 1-h 70% 1-k 0.1% seed 7"},
		{"loss 1% ecn", "limit 1000 loss 1% seed 7 ecn "},
		{"duplicate 1%", "limit 1000 duplicate 1% seed 7"},
		{"duplicate 1% 5%", "limit 1000 duplicate 1% 5% seed 7"},
		{"delay 10ms reorder 25% 50%", "limit 1000 delay 10ms reorder 25% 50% seed 7 gap 1"},
		{"delay 10ms reorder 25% gap 5", "limit 1000 delay 10ms reorder 25% seed 7 gap 5"},
		{"corrupt 0%", "limit 1000 seed 7"},
		{"corrupt 1%", "limit 1000 corrupt 1% seed 7"},
		{"corrupt 0.1% 25%", "limit 1000 corrupt 0.1% 25% seed 7"},
		{"delay 100ms 10ms distribution normal corrupt 1%", "limit 1000 delay 100ms  10ms corrupt 1% seed 7"},
		{"delay 10ms reorder 5% corrupt 2% 10% loss 1%", "limit 1000 delay 10ms loss 1% reorder 5% corrupt 2% 10% seed 7 gap 1"},
		{"rate 512kbit", "limit 1000 rate 512Kbit seed 7"},
		{"rate 1mbit 20 100 5", "limit 1000 rate 1Mbit packetoverhead 20 cellsize 100 celloverhead 5 seed 7"},
		{"rate 100kbit -4", "limit 1000 rate 100Kbit packetoverhead -4 seed 7"},
		{"rate 1000000", "limit 1000 rate 1Mbit seed 7"},
		{"slot 10ms", "limit 1000 slot 10ms 10ms seed 7"},
		{"slot 10ms 20ms packets 5 bytes 64k", "limit 1000 slot 10ms 20ms packets 5 bytes 65536 seed 7"},
		{"slot distribution pareto 20ms 5ms packets 10", "limit 1000 slot distribution 20ms 5ms packets 10 seed 7"},
		{"seed 42", "limit 1000 seed 7"},
		{"lim 5 del 1ms", "limit 5 delay 1ms seed 7"},
		{"loss average 1% burst 4", "limit 1000 loss gemodel p 0.252525% r 25% 1-h 100% 1-k 0% seed 7"},
	} {
		c, err := Parse(tc.words)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.words, err)
			continue
		}
		if got := c.show(7); got != tc.show {
			t.Errorf("Parse(%q) shows %q, want %q", tc.words, got, tc.show)
		}
	}
}

// TestParseValues: what the words set, in the kernel's units.
func TestParseValues(t *testing.T) {
	c, err := Parse("delay 100ms 20ms 25% distribution pareto loss gemodel 1% 10% 70% 2% seed 42 rate 1mbit")
	if err != nil {
		t.Fatal(err)
	}
	if c.Latency != 100*time.Millisecond || c.Jitter != 20*time.Millisecond || c.Corr == nil || c.Corr.Delay != percentOf(.25) {
		t.Errorf("delay: %v %v %+v", c.Latency, c.Jitter, c.Corr)
	}
	if len(c.Dist) != tableSize || c.Dist[0] != Pareto()[0] || c.DistName != "pareto" {
		t.Errorf("distribution: %d entries named %q", len(c.Dist), c.DistName)
	}
	if m := c.LossModel; m == nil || !m.GE || m.P != percentOf(.01) || m.R != percentOf(.1) || m.H != math.MaxUint32-percentOf(.7) || m.K1 != percentOf(.02) {
		t.Errorf("gemodel: %+v", c.LossModel)
	}
	if c.Seed == nil || *c.Seed != 42 || c.Rate == nil || c.Rate.Rate != 125_000 {
		t.Errorf("seed %v rate %+v", c.Seed, c.Rate)
	}
	if p, _ := ParsePercent("100%"); p != math.MaxUint32 {
		t.Errorf("100%% is %d, want %d", p, uint32(math.MaxUint32))
	}
}

// TestParseTables: a distribution other than the four built in is read
// from a table in iproute2's format, where tc reads it (TC_LIB_DIR).
func TestParseTables(t *testing.T) {
	open := func(name string) (io.ReadCloser, error) {
		if name == "experimental" {
			return io.NopCloser(strings.NewReader("# measured\n-100 0 100 200\n")), nil
		}
		return nil, errors.New("no such file")
	}
	c, err := ParseWith("delay 50ms 10ms distribution experimental", open)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Dist) != 4 || c.Dist[3] != 200 {
		t.Errorf("table %v, want the file's 4 entries", c.Dist)
	}
	if _, err := ParseWith("delay 50ms 10ms distribution missing", open); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing table: %v", err)
	}
	if c, err := ParseWith("delay 50ms 10ms distribution uniform", open); err != nil || c.Dist != nil {
		t.Errorf("uniform: %v, table %v; want no table", err, c.Dist)
	}
}

// TestParseErrors: what tc refuses is refused, saying what to give.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ words, says string }{
		{"delay", `"delay" needs a value`},
		{"delay 10parsecs", "give a time such as 100ms"},
		{"delay -5ms", "give a time"},
		{"loss 150%", "percentage from 0 to 100"},
		{"loss 1% loss 2%", "given twice"},
		{"loss maybe", "loss [random] PERCENT"},
		{"reorder 10%", "reorder needs a delay"},
		{"delay 10ms gap 5", "without reorder"},
		{"ecn", "ecn without a loss model"},
		{"distribution normal", "without a delay and a jitter"},
		{"delay 1ms 1ms distribution nosuch", "nosuch"},
		{"rate 10%", "percentage of the link's speed"},
		{"rate fast", `rate "fast"`},
		{"slot 20ms 10ms", "below the least"},
		{"slot distribution normal 10ms 0", "jitter above 0"},
		{"slot bursty", "slot MIN_DELAY"},
		{"seed -1", "give a whole number"},
		{"limit many", "count of packets"},
		{"gap x", `gap "x"`},
		{"pacing 10ms", `"pacing" is not a word of tc-netem's`},
		{"loss average 1%", "give loss average PERCENT burst PACKETS"},
		{"loss average 1% burst x", "a mean number of packets"},
		{"corrupt", `"corrupt" needs a value`},
		{"corrupt 101%", "percentage from 0 to 100"},
		{"corrupt 1% x", `"x" is not a word of tc-netem's`},
		{"loss average 90% burst 1", "bursts of at least 9"},
	} {
		_, err := ParseWith(tc.words, nil)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Parse(%q): %v, want an error saying %q", tc.words, err, tc.says)
		}
	}
}
