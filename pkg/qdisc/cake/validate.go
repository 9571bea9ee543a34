package cake

// The bounds on a Config, and Validate, which holds a Config to them
// with a ConfigError that says what to change.

import (
	"fmt"
	"math"
	"time"
)

// Bounds on a Config beyond its fields' types. Each check in Validate
// says where its bound is set: Linux's sch_cake.c, tc's q_cake.c, or
// ours.
const (
	// MinBandwidth is the least Bandwidth other than 0 (unlimited):
	// cake_set_rate times bytes at max(64, rate), MIN_RATE, so a lower
	// rate would run at 64 bytes/s. Ours: refused (Linux is silent).
	MinBandwidth = 64
	// MaxBandwidth is the largest Bandwidth: cake_set_rate's ns per
	// byte, (1e9 << 34) / rate, is 0 above it, and cake would not shape
	// at all. Ours: refused.
	MaxBandwidth = 1_000_000_000 << 34
	// MaxTime is the longest RTT or Target: the kernel holds them as
	// u32 microseconds (TCA_CAKE_RTT, TCA_CAKE_TARGET).
	MaxTime = time.Duration(math.MaxUint32) * time.Microsecond
	// MinOverhead and MaxOverhead bound Overhead: tc's q_cake.c ("valid
	// range is -64 to 256").
	MinOverhead = -64
	MaxOverhead = 256
	// MaxMPU bounds MPU: tc's q_cake.c ("valid range is 0 to 256").
	MaxMPU = 256
	// MinMemlimit is the least Memlimit other than 0 (cake's own): Linux
	// takes any u32, but cake drops from the fattest flow whenever the
	// memory queued is above the limit, so a limit below one packet
	// drops every packet. Ours: one 64 KiB packet, the largest a
	// netstack link hands a qdisc (GSO included), fits.
	MinMemlimit = 64 << 10
)

// ConfigError says which setting of a Config is wrong and what to change.
// Field is tc-cake's word for the setting: "bandwidth", "rtt", "target",
// "isolation" (flowblind ... triple-isolate), "nat", "diffserv",
// "ack-filter", "overhead", "mpu", "atm", "memlimit" or "fwmark"; and,
// from Tighten, "autorate-ingress", "raw" or "ingress".
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "cake " + e.Field + ": " + e.Msg }

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate reports whether c is a configuration cake can run: nil, or a
// *ConfigError naming the setting, its value and the range to give.
//
// Some of Linux's bounds are the fields' types: Bandwidth is
// TCA_CAKE_BASE_RATE64's u64, Memlimit and FwMark u32. The kernel takes
// any u32 for the modes and falls back (an unknown diffserv is
// diffserv3, an unknown atm none, an isolation is masked to 6 bits);
// here a mode is one tc has a word for.
func (c Config) Validate() error {
	switch {
	case c.Bandwidth != 0 && c.Bandwidth < MinBandwidth:
		return configErr("bandwidth", "bandwidth %s is below cake's least rate, %d bytes/s (512bit), at which Linux would run it; give %d bytes/s or more, or unlimited", rateWord(c.Bandwidth), MinBandwidth, MinBandwidth)
	case c.Bandwidth > MaxBandwidth:
		return configErr("bandwidth", "bandwidth %d bytes/s is above %d bytes/s, past which cake's time per byte is 0 and it would not shape; give a lower bandwidth, or unlimited", c.Bandwidth, uint64(MaxBandwidth))
	}
	// cake_change raises an rtt or target of 0 to 1us; tc sends none for
	// rtt 0. Ours: refused, and a time the kernel cannot hold (not whole
	// microseconds, or past u32) too.
	for _, t := range []struct {
		word string
		d    time.Duration
	}{{"rtt", c.RTT}, {"target", c.Target}} {
		switch {
		case t.d < time.Microsecond || t.d > MaxTime:
			return configErr(t.word, "%s %v is out of range; give 1us to %v (the kernel holds it in u32 microseconds)", t.word, t.d, MaxTime)
		case t.d%time.Microsecond != 0:
			return configErr(t.word, "%s %v is not whole microseconds, which cake holds it in; give %v or %v", t.word, t.d, t.d.Truncate(time.Microsecond), t.d.Truncate(time.Microsecond)+time.Microsecond)
		}
	}
	switch {
	// Ours: cake takes a target above the rtt, which CoDel's design puts
	// at 5-10% of it; tc never sends one (rtt/20).
	case c.Target > c.RTT:
		return configErr("target", "target %s is above rtt %s; a target is a fraction of the rtt (tc sets rtt/20, %s)", timeWord(c.Target), timeWord(c.RTT), timeWord(tcTarget(c.RTT)))
	case c.Isolation >= numIsolation:
		return configErr("isolation", "isolation mode %d is none of cake's; give one of %s", c.Isolation, wordList(isolationWords[:]))
	// cake_change: nat without conntrack is -EOPNOTSUPP ("No conntrack
	// support in kernel").
	case c.NAT:
		return configErr("nat", "nat looks a packet's addresses up in connection tracking, and gVisor's netstack has none for cake to read (Linux refuses nat too on a kernel without conntrack); say nonat")
	case c.Diffserv >= numDiffserv:
		return configErr("diffserv", "diffserv mode %d is none of cake's; give one of %s", c.Diffserv, wordList(diffservWords[:]))
	case c.AckFilter >= numAckFilter:
		return configErr("ack-filter", "ack filter mode %d is none of cake's; give one of %s", c.AckFilter, wordList(ackFilterWords[:]))
	// tc's q_cake.c bounds overhead and mpu; the kernel takes any s32
	// and u32.
	case c.Overhead < MinOverhead || c.Overhead > MaxOverhead:
		return configErr("overhead", "overhead %d is out of range; give %d to %d bytes (tc-cake's range, framing keywords such as ethernet or ether-vlan included)", c.Overhead, MinOverhead, MaxOverhead)
	case c.MPU > MaxMPU:
		return configErr("mpu", "mpu %d is out of range; give 0 to %d bytes (tc-cake's range)", c.MPU, MaxMPU)
	case c.ATM >= numATM:
		return configErr("atm", "atm mode %d is none of cake's; give one of %s", c.ATM, wordList(atmWords[:]))
	case c.Memlimit != 0 && c.Memlimit < MinMemlimit:
		return configErr("memlimit", "memlimit %d bytes is below %d (64Kb), the largest packet the netstack hands a qdisc: cake would drop every packet it cannot hold; give %d bytes or more, or leave it out for cake's own", c.Memlimit, MinMemlimit, MinMemlimit)
	// Ours: the netstack's packets carry no mark.
	case c.FwMark != 0:
		return configErr("fwmark", "fwmark 0x%x picks a packet's tin from its firewall mark, and packets in gVisor's netstack carry none; leave fwmark out (or give 0)", c.FwMark)
	}
	return nil
}
