package cake

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

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
