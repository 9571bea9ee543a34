package tbf

import (
	"fmt"
	"strings"
)

// Words writes c in tc-tbf's words exactly, as Parse reads them back to
// the same Config: rates in bytes a second ("bps", tc's bytes/s), sizes in
// bytes, the latency in microseconds (tc's resolution). String is `tc
// qdisc show`'s line instead, which rounds and prints a limit as its
// latency. The lanes, slack, child and packet bucket are not tc-tbf's
// words and are left out.
func (c Config) Words() string {
	var w []string
	add := func(format string, a ...any) { w = append(w, fmt.Sprintf(format, a...)) }
	if c.Rate != 0 {
		add("rate %dbps", c.Rate)
	}
	if c.Burst != 0 {
		add("burst %db", c.Burst)
	}
	if c.PeakRate != 0 {
		add("peakrate %dbps", c.PeakRate)
	}
	if c.MTU != 0 {
		add("mtu %db", c.MTU)
	}
	if c.Limit != 0 {
		add("limit %db", c.Limit)
	}
	if c.Latency != 0 {
		add("latency %dus", c.Latency.Microseconds())
	}
	if c.MPU != 0 {
		add("mpu %db", c.MPU)
	}
	if c.Overhead != 0 {
		add("overhead %d", c.Overhead)
	}
	if c.ATM {
		add("linklayer atm")
	}
	return strings.Join(w, " ")
}

// Options are a Config as the registry holds it (Kind): its String is
// Words, which Kind.Parse reads back to the same Options.
type Options Config

// String writes o in tc-tbf's words (Config.Words).
func (o Options) String() string { return Config(o).Words() }
