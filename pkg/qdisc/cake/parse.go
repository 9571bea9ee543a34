package cake

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Preset is one of tc-cake's named round trip times, with the target tc
// sends with it.
type Preset struct {
	Name   string
	RTT    time.Duration
	Target time.Duration
}

// Presets returns tc-cake's named round trip times, as q_cake.c sends
// them (each target is its rtt/20). interplanetary is 1000s in q_cake.c,
// though tc-cake(8) says 3600s: 1000s is what the kernel gets.
func Presets() []Preset { return slices.Clone(presets) }

var presets = []Preset{
	{"datacentre", 100 * time.Microsecond, 5 * time.Microsecond},
	{"lan", time.Millisecond, 50 * time.Microsecond},
	{"metro", 10 * time.Millisecond, 500 * time.Microsecond},
	{"regional", 30 * time.Millisecond, 1500 * time.Microsecond},
	{"internet", 100 * time.Millisecond, 5 * time.Millisecond},
	{"oceanic", 300 * time.Millisecond, 15 * time.Millisecond},
	{"satellite", time.Second, 50 * time.Millisecond},
	{"interplanetary", 1000 * time.Second, 50 * time.Second},
}

// framing is one of tc-cake's overhead keywords: what it does to the
// overhead tc is adding up, the atm mode and the mpu.
type framing struct {
	add    int32 // added to the overhead so far
	set    bool  // the overhead is set to add, not added to
	atm    ATM   // the atm mode it sets, if setATM
	setATM bool
	mpu    uint32 // the mpu it sets, if not 0
}

// framings are q_cake.c's overhead keywords, as its cake_parse_opt sets
// them (ethernet sets no atm mode, though tc-cake(8) says noatm).
var framings = map[string]framing{
	"conservative":    {add: 48, set: true, atm: ATMCells, setATM: true},
	"ipoa-vcmux":      {add: 8, atm: ATMCells, setATM: true},
	"ipoa-llcsnap":    {add: 16, atm: ATMCells, setATM: true},
	"bridged-vcmux":   {add: 24, atm: ATMCells, setATM: true},
	"bridged-llcsnap": {add: 32, atm: ATMCells, setATM: true},
	"pppoa-vcmux":     {add: 10, atm: ATMCells, setATM: true},
	"pppoa-llc":       {add: 14, atm: ATMCells, setATM: true},
	"pppoe-vcmux":     {add: 32, atm: ATMCells, setATM: true},
	"pppoe-llcsnap":   {add: 40, atm: ATMCells, setATM: true},
	"pppoe-ptm":       {add: 30, atm: PTM, setATM: true},
	"bridged-ptm":     {add: 22, atm: PTM, setATM: true},
	"ethernet":        {add: 38, mpu: 84},
	"ether-vlan":      {add: 4},
	"docsis":          {add: 18, atm: NoATM, setATM: true, mpu: 64},
}

const keywords = "bandwidth RATE, unlimited, autorate-ingress, rtt TIME, target TIME, " +
	"datacentre, lan, metro, regional, internet, oceanic, satellite, interplanetary, " +
	"besteffort, precedence, diffserv8, diffserv4, diffserv3, " +
	"flowblind, srchost, dsthost, hosts, flows, dual-srchost, dual-dsthost, triple-isolate, " +
	"nonat, wash, nowash, split-gso, no-split-gso, ack-filter, ack-filter-aggressive, no-ack-filter, " +
	"memlimit SIZE, ptm, atm, noatm, overhead N, mpu N, raw, conservative, " +
	"ipoa-vcmux, ipoa-llcsnap, bridged-vcmux, bridged-llcsnap, pppoa-vcmux, pppoa-llc, pppoe-vcmux, pppoe-llcsnap, " +
	"pppoe-ptm, bridged-ptm, via-ethernet, ethernet, ether-vlan, docsis, ingress, egress"

// ParseQdisc parses cake's options in tc-cake's words, the text after
// `tc qdisc add dev eth0 root cake` (a leading "cake" is taken too):
//
//	bandwidth 100mbit diffserv4 dual-dsthost nat ingress wash ethernet ether-vlan rtt 50ms
//
// Words are applied in order from DefaultConfig, as tc's cake_parse_opt
// and the kernel's cake_change apply them, and a later word overrides an
// earlier one (besteffort diffserv4 is diffserv4):
//
//   - bandwidth RATE: the shaper's rate in tc's units (100mbit, 1gbit,
//     125kbps; a bare number is bits per second, as in tc), and
//     autorate-ingress off; bandwidth 0, unlimited and "bandwidth
//     unlimited" (as tc shows it) do not shape. autorate-ingress after
//     them turns it on.
//   - rtt TIME (100ms, 1.5ms, 300us, 1s; a bare number is microseconds,
//     as tc's get_time) sets the rtt and the target to rtt/20 (at least
//     1us); so do the presets datacentre, lan, metro, regional, internet,
//     oceanic, satellite and interplanetary (see Presets; at most one).
//     target TIME (not tc's: the kernel's TCA_CAKE_TARGET) sets the
//     target, whatever rtt comes before or after it.
//   - besteffort, precedence, diffserv8, diffserv4 (or diffserv),
//     diffserv3: the tins. flowblind, srchost, dsthost, hosts, flows,
//     dual-srchost, dual-dsthost, triple-isolate: the isolation. wash,
//     nowash; split-gso, no-split-gso; ack-filter,
//     ack-filter-aggressive, no-ack-filter; ingress, egress.
//   - nonat is taken; nat is refused (the netstack has no conntrack).
//   - memlimit SIZE: bytes in tc's units (32mb, 4096kb; a bare number is
//     bytes), at most 2^32-1; 0 lets cake choose.
//   - fwmark MASK: 0 (in C's bases: 0x0) is taken and does nothing, as in
//     tc; any other mask is refused (the netstack has no marks).
//   - Overhead, as q_cake.c keeps it: overhead N (-64..256) sets it;
//     conservative sets 48 and atm; the framing keywords add to it:
//     ipoa-vcmux 8, ipoa-llcsnap 16, bridged-vcmux 24, bridged-llcsnap
//     32, pppoa-vcmux 10, pppoa-llc 14, pppoe-vcmux 32, pppoe-llcsnap 40
//     (each with atm), pppoe-ptm 30, bridged-ptm 22 (each with ptm),
//     ethernet 38 (and mpu 84), ether-vlan 4 (as often as given), docsis
//     18 (and mpu 64, noatm). Any of them turns overhead compensation on
//     (Config.Raw false); raw anywhere turns it off, and sets overhead 0
//     and noatm when it comes. via-ethernet does nothing, as in tc. mpu N
//     (0..256) sets the mpu; atm, ptm and noatm the framing.
//
// The result is checked by Validate, so the overhead's and mpu's ranges
// hold for the sum as well as for a number given. An error names the
// word to fix.
func ParseQdisc(words string) (Config, error) {
	c := DefaultConfig()
	fields := strings.Fields(words)
	if len(fields) > 0 && fields[0] == "cake" {
		fields = fields[1:]
	}
	var (
		overhead                  int32 // q_cake.c's, which starts at 0
		overheadSet, raw          bool
		preset                    string
		target                    time.Duration
		targetSet, bandwidthSeen  bool
		bandwidthWord, targetWord string
	)
	for i := 0; i < len(fields); i++ {
		w := fields[i]
		if f, ok := framings[w]; ok {
			if f.set {
				overhead = f.add
			} else {
				overhead += f.add
			}
			overheadSet = true
			if f.setATM {
				c.ATM = f.atm
			}
			if f.mpu != 0 {
				c.MPU = f.mpu
			}
			continue
		}
		if p, ok := findPreset(w); ok {
			if preset != "" {
				return Config{}, fmt.Errorf("cake: %s and %s are both round trip time presets; give one", preset, w)
			}
			preset = w
			c.RTT, c.Target = p.RTT, p.Target
			continue
		}
		done := true
		switch w {
		case "unlimited":
			c.Bandwidth, c.Autorate = 0, false
		case "autorate-ingress":
			c.Autorate = true
		case "besteffort":
			c.Diffserv = BestEffort
		case "precedence":
			c.Diffserv = Precedence
		case "diffserv8":
			c.Diffserv = Diffserv8
		case "diffserv4", "diffserv":
			c.Diffserv = Diffserv4
		case "diffserv3":
			c.Diffserv = Diffserv3
		case "nowash":
			c.Wash = false
		case "wash":
			c.Wash = true
		case "split-gso":
			c.SplitGSO = true
		case "no-split-gso":
			c.SplitGSO = false
		case "nonat":
			c.NAT = false
		case "nat":
			return Config{}, errors.New("cake: nat: nat looks a packet's addresses up in connection tracking, and gVisor's netstack has none for cake to read (Linux refuses nat too on a kernel without conntrack); say nonat, or leave it out")
		case "ptm":
			c.ATM = PTM
		case "atm":
			c.ATM = ATMCells
		case "noatm":
			c.ATM = NoATM
		case "raw":
			c.ATM, overhead, overheadSet, raw = NoATM, 0, true, true
		case "via-ethernet":
		case "ingress":
			c.Ingress = true
		case "egress":
			c.Ingress = false
		case "no-ack-filter":
			c.AckFilter = NoAckFilter
		case "ack-filter":
			c.AckFilter = AckFilterOn
		case "ack-filter-aggressive":
			c.AckFilter = AckFilterAggressive
		case "help":
			return Config{}, fmt.Errorf("cake: help: tc-cake takes %s", keywords)
		default:
			if i, ok := isolationOf(w); ok {
				c.Isolation = i
			} else {
				done = false
			}
		}
		if done {
			continue
		}
		switch w {
		case "bandwidth", "rtt", "target", "overhead", "mpu", "memlimit", "fwmark":
		default:
			return Config{}, fmt.Errorf("cake: unknown word %q: tc-cake takes %s", w, keywords)
		}
		if i+1 == len(fields) {
			return Config{}, fmt.Errorf("cake: %q needs a value", w)
		}
		i++
		v := fields[i]
		var err error
		switch w {
		case "bandwidth":
			c.Autorate = false
			bandwidthSeen, bandwidthWord = true, v
			if v == "unlimited" {
				c.Bandwidth = 0
			} else {
				c.Bandwidth, err = parseTCRate(v)
			}
		case "rtt":
			c.RTT, err = parseTime(v)
			if err == nil && c.RTT == 0 {
				err = errors.New("an rtt of 0 is none (tc would leave the rtt as it was and set the target to 1us); give 1us or more")
			}
			c.Target = tcTarget(c.RTT)
		case "target":
			target, err = parseTime(v)
			if err == nil && target == 0 {
				err = errors.New("a target of 0 is none (Linux would take 1us); give 1us or more")
			}
			targetSet, targetWord = true, v
		case "overhead":
			var n int32
			n, err = parseOverhead(v)
			overhead, overheadSet = n, true
		case "mpu":
			c.MPU, err = parseMPU(v)
		case "memlimit":
			c.Memlimit, err = parseMemlimit(v)
		case "fwmark":
			var n uint64
			n, err = strconv.ParseUint(v, 0, 32)
			switch {
			case err != nil:
				err = errors.New("want a mask of 32 bits, in decimal, 0x hex or 0 octal, as tc reads it")
			case n != 0:
				err = errors.New("fwmark picks a packet's tin from its firewall mark, and packets in gVisor's netstack carry none; leave fwmark out")
			}
		}
		if err != nil {
			return Config{}, fmt.Errorf("cake: %s %q: %w", w, v, err)
		}
	}
	if overheadSet {
		c.Overhead = overhead
	}
	// cake_change: TCA_CAKE_OVERHEAD turns compensation on, and
	// TCA_CAKE_RAW, which tc sends once raw was said, off again.
	c.Raw = raw || !overheadSet
	if targetSet {
		c.Target = target
	}
	if err := c.Validate(); err != nil {
		// Name the word the user gave where it is not the field's.
		var ce *ConfigError
		if errors.As(err, &ce) {
			switch {
			case ce.Field == "bandwidth" && bandwidthSeen:
				return Config{}, fmt.Errorf("cake: bandwidth %q: %s", bandwidthWord, ce.Msg)
			case ce.Field == "target" && targetSet:
				return Config{}, fmt.Errorf("cake: target %q: %s", targetWord, ce.Msg)
			}
		}
		return Config{}, err
	}
	return c, nil
}

// findPreset returns the Preset called name.
func findPreset(name string) (Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// isolationOf returns the Isolation whose word is w.
func isolationOf(w string) (Isolation, bool) {
	for i, s := range isolationWords {
		if s == w {
			return Isolation(i), true
		}
	}
	return 0, false
}

// parseTCRate reads a rate as tc's get_rate64 does: a bare number is bits
// per second.
func parseTCRate(v string) (uint64, error) {
	if strings.Trim(v, "0123456789.") != "" {
		return rate.ParseRate(v)
	}
	bps, err := rate.ParseRate(v + "bit")
	if err != nil {
		return 0, fmt.Errorf("a bare number is bits per second in tc's words (say 10mbit, or 1250000bps for bytes): %w", err)
	}
	return bps, nil
}

// timeUnits are tc's get_time suffixes, matched without regard to case,
// in microseconds.
var timeUnits = map[string]int64{
	"s": 1e6, "sec": 1e6, "secs": 1e6,
	"ms": 1e3, "msec": 1e3, "msecs": 1e3,
	"us": 1, "usec": 1, "usecs": 1,
}

// parseTime reads a time as tc's get_time does (a decimal number and an
// optional unit: s, sec, secs, ms, msec, msecs, us, usec, usecs; a bare
// number is microseconds), exactly: a time that is not whole
// microseconds, which tc would truncate, is refused, as is one past the
// kernel's u32 microseconds.
func parseTime(v string) (time.Duration, error) {
	end := 0
	for end < len(v) && (v[end] >= '0' && v[end] <= '9' || v[end] == '.') {
		end++
	}
	num, unit := v[:end], strings.ToLower(v[end:])
	if num == "" {
		return 0, errors.New("want a time such as 100ms, 1.5ms, 300us or 1s (a bare number is microseconds), not negative")
	}
	per := int64(1)
	if unit != "" {
		var ok bool
		if per, ok = timeUnits[unit]; !ok {
			return 0, fmt.Errorf("unknown unit %q; give a time such as 100ms, 1.5ms, 300us or 1s (a bare number is microseconds)", v[end:])
		}
	}
	r, ok := new(big.Rat).SetString(num)
	if len(num) > 40 || !ok {
		return 0, errors.New("want a time such as 100ms, 1.5ms, 300us or 1s (a bare number is microseconds)")
	}
	r.Mul(r, new(big.Rat).SetInt64(per))
	switch {
	case !r.IsInt():
		return 0, errors.New("cake holds times in whole microseconds; give one (1500us, not 1.5005ms)")
	case !r.Num().IsUint64() || r.Num().Uint64() > math.MaxUint32:
		return 0, fmt.Errorf("above %v, the longest the kernel holds (u32 microseconds)", MaxTime)
	}
	return time.Duration(r.Num().Uint64()) * time.Microsecond, nil
}

// ParseBandwidth reads a flag's bandwidth, such as
// --qdisc-cake-bandwidth=100mbit, as runsc reads its rates: tc's units
// (100mbit, 1gbit, 125kbps) or a bare number of bytes per second (unlike
// ParseQdisc's tc words, where a bare number is bits); "unlimited" (or 0)
// is 0, no shaping. It returns bytes per second, within
// MinBandwidth..MaxBandwidth or 0.
func ParseBandwidth(s string) (uint64, error) {
	if s == "unlimited" {
		return 0, nil
	}
	r, err := rate.ParseRate(s)
	if err != nil {
		return 0, fmt.Errorf("cake bandwidth: %w; or say unlimited", err)
	}
	c := DefaultConfig()
	c.Bandwidth = r
	if err := c.Validate(); err != nil {
		return 0, err
	}
	return r, nil
}

// parseWord returns the index of s in words, or an error that lists them.
func parseWord(what, s string, words []string) (int, error) {
	for i, w := range words {
		if w == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("cake %s: %q is not one of cake's; give %s", what, s, wordList(words))
}

// ParseIsolation reads a flow isolation word (flowblind, srchost,
// dsthost, hosts, flows, dual-srchost, dual-dsthost, triple-isolate).
func ParseIsolation(s string) (Isolation, error) {
	i, err := parseWord("isolation", s, isolationWords[:])
	return Isolation(i), err
}

// ParseDiffserv reads a tin mode word (diffserv3, diffserv4, diffserv8,
// besteffort, precedence; tc's diffserv, which is diffserv4, too).
func ParseDiffserv(s string) (Diffserv, error) {
	if s == "diffserv" {
		return Diffserv4, nil
	}
	d, err := parseWord("diffserv", s, diffservWords[:])
	return Diffserv(d), err
}

// ParseAckFilter reads an ACK filter word (no-ack-filter, ack-filter,
// ack-filter-aggressive).
func ParseAckFilter(s string) (AckFilter, error) {
	a, err := parseWord("ack-filter", s, ackFilterWords[:])
	return AckFilter(a), err
}

// ParseATM reads a cell framing word (noatm, atm, ptm).
func ParseATM(s string) (ATM, error) {
	a, err := parseWord("atm", s, atmWords[:])
	return ATM(a), err
}

// ParseRTT reads a round trip time: a preset's name (see Presets) or a
// time in tc's words (100ms, 1.5ms, 300us, 1s; a bare number is
// microseconds), 1us or more. It returns the rtt and the target tc would
// send with it, rtt/20 (at least 1us).
func ParseRTT(s string) (rtt, target time.Duration, err error) {
	if p, ok := findPreset(s); ok {
		return p.RTT, p.Target, nil
	}
	d, err := parseTime(s)
	if err == nil && d == 0 {
		err = errors.New("an rtt of 0 is none; give 1us or more")
	}
	if err != nil {
		names := make([]string, len(presets))
		for i, p := range presets {
			names[i] = p.Name
		}
		return 0, 0, fmt.Errorf("cake rtt: %q: %w, or one of %s", s, err, wordList(names))
	}
	return d, tcTarget(d), nil
}

// ParseOverhead reads an overhead in bytes, a decimal number from
// MinOverhead to MaxOverhead (-64 to 256), as tc-cake's overhead.
func ParseOverhead(s string) (int32, error) {
	n, err := parseOverhead(s)
	if err != nil {
		return 0, fmt.Errorf("cake overhead %q: %w", s, err)
	}
	return n, nil
}

func parseOverhead(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < MinOverhead || n > MaxOverhead {
		return 0, fmt.Errorf("want bytes %d to %d in decimal", MinOverhead, MaxOverhead)
	}
	return int32(n), nil
}

// ParseMPU reads a minimum packet unit in bytes, a decimal number from 0
// to MaxMPU (256), as tc-cake's mpu.
func ParseMPU(s string) (uint32, error) {
	n, err := parseMPU(s)
	if err != nil {
		return 0, fmt.Errorf("cake mpu %q: %w", s, err)
	}
	return n, nil
}

func parseMPU(s string) (uint32, error) {
	// tc's strtol: a sign is taken.
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || n > MaxMPU {
		return 0, fmt.Errorf("want bytes 0 to %d in decimal", MaxMPU)
	}
	return uint32(n), nil
}

// ParseMemlimit reads a memory limit in tc's size units (32mb, 4096kb,
// 1gb; a bare number is bytes, in tc and runsc alike): 0 (cake chooses)
// or MinMemlimit to 2^32-1 bytes.
func ParseMemlimit(s string) (uint32, error) {
	n, err := parseMemlimit(s)
	if err != nil {
		return 0, fmt.Errorf("cake memlimit %q: %w", s, err)
	}
	return n, nil
}

func parseMemlimit(s string) (uint32, error) {
	n, err := rate.ParseSize(s)
	switch {
	case err != nil:
		return 0, err
	case n > math.MaxUint32:
		return 0, fmt.Errorf("%d bytes is above 2^32-1 (4Gb less a byte), the most the kernel holds", n)
	case n != 0 && n < MinMemlimit:
		return 0, fmt.Errorf("%d bytes is below %d (64Kb), the largest packet the netstack hands a qdisc: cake would drop every packet it cannot hold; give more, or 0 for cake's own", n, MinMemlimit)
	}
	return uint32(n), nil
}
