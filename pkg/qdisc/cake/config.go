package cake

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Isolation is how cake tells flows apart for fairness (tc-cake's flow
// isolation words; the kernel's CAKE_FLOW_* values).
type Isolation uint8

// The isolation modes, numbered as CAKE_FLOW_* in
// include/uapi/linux/pkt_sched.h.
const (
	// FlowBlind: one queue per tin, no isolation ("flowblind").
	FlowBlind Isolation = iota
	// SrcHost: flows are source addresses ("srchost").
	SrcHost
	// DstHost: flows are destination addresses ("dsthost").
	DstHost
	// Hosts: flows are source-destination address pairs ("hosts").
	Hosts
	// Flows: flows are 5-tuples, as in fq_codel ("flows").
	Flows
	// DualSrcHost: 5-tuples, fair first between source addresses
	// ("dual-srchost").
	DualSrcHost
	// DualDstHost: 5-tuples, fair first between destination addresses
	// ("dual-dsthost").
	DualDstHost
	// TripleIsolate: 5-tuples, fair between source and destination
	// addresses both ("triple-isolate"), the default.
	TripleIsolate
	numIsolation
)

var isolationWords = [numIsolation]string{"flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost", "triple-isolate"}

// String returns tc-cake's word for i.
func (i Isolation) String() string {
	if i < numIsolation {
		return isolationWords[i]
	}
	return fmt.Sprintf("isolation(%d)", uint8(i))
}

// Diffserv is how cake sorts packets into tins by their DSCP (the
// kernel's CAKE_DIFFSERV_* values).
type Diffserv uint8

// The tin modes, numbered as CAKE_DIFFSERV_*.
const (
	// Diffserv3: bulk, best effort, voice ("diffserv3"), the default.
	Diffserv3 Diffserv = iota
	// Diffserv4: bulk, best effort, video, voice ("diffserv4").
	Diffserv4
	// Diffserv8: eight tins ("diffserv8").
	Diffserv8
	// BestEffort: one tin ("besteffort").
	BestEffort
	// Precedence: eight tins by the old TOS precedence ("precedence").
	Precedence
	numDiffserv
)

var diffservWords = [numDiffserv]string{"diffserv3", "diffserv4", "diffserv8", "besteffort", "precedence"}

// String returns tc-cake's word for d.
func (d Diffserv) String() string {
	if d < numDiffserv {
		return diffservWords[d]
	}
	return fmt.Sprintf("diffserv(%d)", uint8(d))
}

// AckFilter is what cake does with pure TCP ACKs a later one makes
// redundant (the kernel's CAKE_ACK_* values).
type AckFilter uint8

// The ACK filter modes, numbered as CAKE_ACK_*.
const (
	// NoAckFilter keeps every ACK ("no-ack-filter"), the default.
	NoAckFilter AckFilter = iota
	// AckFilterOn drops an ACK a later one in the queue covers
	// ("ack-filter").
	AckFilterOn
	// AckFilterAggressive drops more of them ("ack-filter-aggressive").
	AckFilterAggressive
	numAckFilter
)

var ackFilterWords = [numAckFilter]string{"no-ack-filter", "ack-filter", "ack-filter-aggressive"}

// String returns tc-cake's word for a.
func (a AckFilter) String() string {
	if a < numAckFilter {
		return ackFilterWords[a]
	}
	return fmt.Sprintf("ack-filter(%d)", uint8(a))
}

// ATM is the cell framing cake adds to each packet's length (the kernel's
// CAKE_ATM_* values).
type ATM uint8

// The framings, numbered as CAKE_ATM_*.
const (
	// NoATM: no framing ("noatm"), the default.
	NoATM ATM = iota
	// ATMCells: 53-byte cells carrying 48 bytes each, as on ADSL ("atm").
	ATMCells
	// PTM: one byte in 65 of 64b/65b coding, as on VDSL2 ("ptm").
	PTM
	numATM
)

var atmWords = [numATM]string{"noatm", "atm", "ptm"}

// String returns tc-cake's word for a.
func (a ATM) String() string {
	if a < numATM {
		return atmWords[a]
	}
	return fmt.Sprintf("atm(%d)", uint8(a))
}

// Config is cake's configuration as the kernel holds it after cake_init
// and cake_change: every setting `tc qdisc add dev eth0 root cake ...`
// can give, with tc's names. Unlike this project's other Configs, a zero
// field is a value, not "the default": start from DefaultConfig.
type Config struct {
	// Bandwidth is the shaper's rate in bytes per second (tc's
	// "bandwidth"); 0 is "unlimited", no shaping.
	Bandwidth uint64
	// Autorate sets the shaper's rate from the rate packets arrive at,
	// with Bandwidth the first estimate ("autorate-ingress").
	Autorate bool
	// RTT is the round trip time COBALT is tuned for ("rtt" or a
	// preset: internet, 100ms, is the default), in whole microseconds.
	RTT time.Duration
	// Target is the queue delay COBALT aims for, in whole microseconds;
	// tc sets it to RTT/20 (at least 1us) with every rtt it is given.
	Target time.Duration
	// Isolation is how flows are told apart (TripleIsolate by default).
	Isolation Isolation
	// NAT would look a packet's addresses up in conntrack before
	// hashing it ("nat"). The netstack has no conntrack: Validate
	// refuses it.
	NAT bool
	// Diffserv is how packets are sorted into tins (Diffserv3 by
	// default).
	Diffserv Diffserv
	// Wash clears the DSCP of packets once they are in their tin
	// ("wash"; "nowash" by default).
	Wash bool
	// AckFilter drops redundant TCP ACKs (NoAckFilter by default).
	AckFilter AckFilter
	// SplitGSO cuts GSO packets into their segments before queueing
	// them ("split-gso", the default; "no-split-gso").
	SplitGSO bool
	// Ingress counts packets cake drops as sent, as on a link's
	// receiving end ("ingress"; "egress" by default).
	Ingress bool
	// Raw counts each packet as the length the qdisc is handed, link
	// header included, plus Overhead: cake's default, and what tc's
	// "raw" asks for. Without Raw, the link header is taken off first
	// (cake's overhead compensation, set by "overhead" and the framing
	// keywords): the length is the network packet's plus Overhead.
	Raw bool
	// Overhead is added to each packet's length (tc's "overhead",
	// -64..256), before MPU and ATM.
	Overhead int32
	// MPU is the least length a packet counts as, overhead included
	// (tc's "mpu", 0..256).
	MPU uint32
	// ATM is the cell framing added after Overhead and MPU.
	ATM ATM
	// Memlimit bounds the memory queued packets take, in bytes
	// ("memlimit"); 0 lets cake size it (see MemoryLimit).
	Memlimit uint32
	// FwMark would take a packet's tin from its firewall mark
	// ("fwmark"). Packets in the netstack have no mark: Validate
	// refuses any but 0.
	FwMark uint32
}

// cake_init's defaults.
const (
	// DefaultRTT is the internet preset, cake_init's interval.
	DefaultRTT = 100 * time.Millisecond
	// DefaultTarget is cake_init's target, DefaultRTT/20.
	DefaultTarget = 5 * time.Millisecond
)

// DefaultConfig returns cake's configuration when tc gives no words: the
// kernel's after cake_init (unlimited, internet's rtt, diffserv3,
// triple-isolate, nonat, nowash, no-ack-filter, split-gso, egress, raw,
// overhead 0, noatm, memlimit chosen by cake).
func DefaultConfig() Config {
	return Config{
		RTT:       DefaultRTT,
		Target:    DefaultTarget,
		Isolation: TripleIsolate,
		Diffserv:  Diffserv3,
		AckFilter: NoAckFilter,
		SplitGSO:  true,
		Raw:       true,
		ATM:       NoATM,
	}
}

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

// tcTarget is the target tc sets with an rtt: rtt/20, at least 1us.
func tcTarget(rtt time.Duration) time.Duration {
	return max(rtt/time.Microsecond/20, 1) * time.Microsecond
}

// WireLen is the length cake charges the shaper for a packet of length
// bytes, netOffset of which are its link header (cake_calc_overhead):
// without Raw the link header is taken off first (a length shorter than
// it counts as 0; Linux's would wrap, but its packets always hold their
// header); then Overhead is added, the sum raised to MPU (and to 0), and
// ATM framing added: whole 48-byte cells of 53 bytes, or PTM's one byte
// per 64 or part of 64. The core charges each segment of a GSO packet
// this way, as cake_overhead does.
func WireLen(c Config, length, netOffset uint32) uint64 {
	n := int64(length)
	if !c.Raw {
		n = max(n-int64(netOffset), 0)
	}
	l := max(n+int64(c.Overhead), int64(c.MPU), 0)
	switch c.ATM {
	case ATMCells:
		l = (l + 47) / 48 * 53
	case PTM:
		l += (l + 63) / 64
	}
	return uint64(l)
}

// cake_init's sch->limit, in packets: the memory limit cake chooses is at
// most this many packets of the link's MTU.
const limitPackets = 10240

// autoBase is the memory limit cake_reconfigure chooses before capping it
// at limitPackets of the link's MTU: Bandwidth bytes/s for 4 RTTs, at
// least 4 MiB; unlimited with no bandwidth. Linux truncates the product
// to 32 bits; here it saturates.
func (c Config) autoBase() uint64 {
	if c.Bandwidth == 0 {
		return math.MaxUint32
	}
	us := uint64(c.RTT / time.Microsecond)
	hi, lo := bits.Mul64(c.Bandwidth, us)
	var t uint64
	if hi >= 250_000 {
		t = math.MaxUint64
	} else {
		t, _ = bits.Div64(hi, lo, 250_000)
	}
	return min(max(t, 4<<20), math.MaxUint32)
}

// MemoryLimit is the most memory, in bytes, cake lets its queued packets
// take on a link whose MTU plus link header is mtu (Linux's psched_mtu):
// cake_reconfigure's buffer_limit. It is Memlimit if set; otherwise
// Bandwidth bytes/s for 4 RTTs, at least 4 MiB (no bound when unlimited),
// capped at 10240 packets of mtu bytes. Where Linux's 32-bit arithmetic
// would wrap, it saturates at 2^32-1.
func (c Config) MemoryLimit(mtu uint32) uint32 {
	if c.Memlimit != 0 {
		return c.Memlimit
	}
	return uint32(min(c.autoBase(), limitPackets*uint64(mtu), math.MaxUint32))
}

// String writes c in `tc qdisc show`'s words, in cake_print_opt's order:
//
//	bandwidth 100Mbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0
//
// and ParseQdisc reads them back to c. Values are exact where tc rounds
// them to three digits: rates in the largest of tc's units that divides
// them, times in s, ms or us with every digit, sizes in b, Kb, Mb or Gb
// only when exact. A Target other than tc's rtt/20 is written as "target"
// after rtt (cake_print_opt shows none).
func (c Config) String() string {
	b := make([]byte, 0, 160)
	if c.Bandwidth == 0 {
		b = append(b, "bandwidth unlimited "...)
	} else {
		b = fmt.Appendf(b, "bandwidth %s ", rateWord(c.Bandwidth))
	}
	if c.Autorate {
		b = append(b, "autorate-ingress "...)
	}
	b = fmt.Appendf(b, "%s %s ", c.Diffserv, c.Isolation)
	if c.NAT {
		b = append(b, "nat "...)
	} else {
		b = append(b, "nonat "...)
	}
	if c.Wash {
		b = append(b, "wash "...)
	} else {
		b = append(b, "nowash "...)
	}
	if c.Ingress {
		b = append(b, "ingress "...)
	}
	b = fmt.Appendf(b, "%s ", c.AckFilter)
	if c.SplitGSO {
		b = append(b, "split-gso "...)
	} else {
		b = append(b, "no-split-gso "...)
	}
	b = fmt.Appendf(b, "rtt %s ", timeWord(c.RTT))
	if c.Target != tcTarget(c.RTT) {
		b = fmt.Appendf(b, "target %s ", timeWord(c.Target))
	}
	if c.Raw {
		b = append(b, "raw "...)
	}
	if c.ATM != NoATM || !c.Raw {
		b = fmt.Appendf(b, "%s ", c.ATM)
	}
	b = fmt.Appendf(b, "overhead %d", c.Overhead)
	if c.MPU != 0 {
		b = fmt.Appendf(b, " mpu %d", c.MPU)
	}
	if c.Memlimit != 0 {
		b = fmt.Appendf(b, " memlimit %s", sizeWord(c.Memlimit))
	}
	if c.FwMark != 0 {
		b = fmt.Appendf(b, " fwmark 0x%x", c.FwMark)
	}
	return string(b)
}

// rateWord writes a rate exactly, in the largest of tc's units that
// divides it ("100Mbit", "1500Kbit", "12bit"), or in bytes per second
// ("Bps") past what bits per second hold in 64 bits.
func rateWord(bytesPerSec uint64) string {
	if bytesPerSec > math.MaxUint64/8 {
		return fmt.Sprintf("%dBps", bytesPerSec)
	}
	b := bytesPerSec * 8
	for _, u := range []struct {
		div  uint64
		unit string
	}{{1e12, "Tbit"}, {1e9, "Gbit"}, {1e6, "Mbit"}, {1e3, "Kbit"}} {
		if b >= u.div && b%u.div == 0 {
			return fmt.Sprintf("%d%s", b/u.div, u.unit)
		}
	}
	return fmt.Sprintf("%dbit", b)
}

// timeWord writes a time as tc's sprint_time does, in s from 1s, ms from
// 1ms, us below, but with every digit ("1.5ms", not tc's "1.50ms"; "100ms").
func timeWord(d time.Duration) string {
	us := int64(d / time.Microsecond)
	frac := func(whole, digits int64, unit string) string {
		s := fmt.Sprintf("%d.%0*d", us/whole, digits, us%whole)
		for s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		if s[len(s)-1] == '.' {
			s = s[:len(s)-1]
		}
		return s + unit
	}
	switch {
	case d%time.Microsecond != 0:
		return d.String() // not a time cake holds; Validate says so
	case us >= 1e6:
		return frac(1e6, 6, "s")
	case us >= 1e3:
		return frac(1e3, 3, "ms")
	}
	return fmt.Sprintf("%dus", us)
}

// sizeWord writes a size exactly in tc's units: "4Mb", "64Kb", "70000b".
func sizeWord(n uint32) string {
	for _, u := range []struct {
		shift uint
		unit  string
	}{{30, "Gb"}, {20, "Mb"}, {10, "Kb"}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.unit)
		}
	}
	return fmt.Sprintf("%db", n)
}

// wordList joins words as "a, b or c".
func wordList(words []string) string {
	s := ""
	for i, w := range words {
		switch {
		case i == 0:
		case i == len(words)-1:
			s += " or "
		default:
			s += ", "
		}
		s += w
	}
	return s
}
