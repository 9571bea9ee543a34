package cake

// Config, its defaults, and what cake derives from it: tc's target for
// an rtt, a packet's wire length, the memory limit.

import (
	"math"
	"math/bits"
	"time"
)

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
