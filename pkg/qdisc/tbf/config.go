package tbf

import (
	"fmt"
	"math"
	"strings"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Bounds on a Config beyond its fields' types. Each check in validate
// names the Linux function (or tc's parser, q_tbf.c) that sets its bound,
// or says it is ours.
const (
	// MaxOverhead is the largest Overhead. Linux keeps a rate's overhead
	// unsigned, in 16 bits (tc_ratespec.overhead in pkt_sched.h,
	// psched_ratecfg.overhead in sch_generic.h), and tc's tbf_parse_opt
	// reads it with get_u16: a negative overhead never reaches tbf (only
	// a size table, tc-stab, has one). A negative one here made packets
	// free.
	MaxOverhead = math.MaxUint16
	// MaxMPU is the largest MPU: tc_ratespec.mpu and psched_ratecfg.mpu
	// are u16 too (tc truncates a larger mpu silently; we refuse it).
	MaxMPU = math.MaxUint16
	// MaxSlack is the longest Slack.
	MaxSlack = time.Second
	// maxBacklogNS bounds the time a full backlog is booked ahead (about
	// 146 years): departures are int64 nanoseconds, booked as packets
	// queue (see rateBucket), so a full backlog's total must not overflow.
	maxBacklogNS = 1 << 62
)

// ConfigError says which setting of a Config is wrong and what to change.
// Field is one of "rate", "burst", "peakrate", "mtu", "limit", "latency",
// "lanes", "slack", "overhead", "mpu", "pkt_rate", "pkt_burst", "child":
// the names of tc's tbf options (of tc police's for the packet bucket, and
// of this package's own, lanes, slack and, from Change, the child), so
// that a caller can map it to its own flag. Msg names the bound.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "tbf " + e.Field + ": " + e.Msg }

// Setting implements qdisc.SettingError: the setting is Field, of tbf.
func (e *ConfigError) Setting() (kind, name, msg string) { return "tbf", e.Field, e.Msg }

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Check reports whether c is valid on some link: nil, or a *ConfigError
// naming the setting to change. It is New's check less what depends on
// the link: that Burst (and MTU) hold the link's largest packet, and the
// default Limit. (A Child was checked when it was made.)
func (c Config) Check() error {
	_, _, err := c.validate(nil)
	return err
}

// linkBounds is what New checks a Config against on its link.
type linkBounds struct {
	// max is the largest packet the link hands the qdisc (MTU plus
	// header, or the host-GSO maximum), and what is how to say so.
	max  uint64
	what string
	// mtu is the MTU plus header (Linux's psched_mtu), for the default
	// limit; sent is the largest packet a sender hands down (the
	// host-GSO maximum where the link takes host GSO, else mtu), for a
	// ByteLimiter child's default limit.
	mtu, sent uint64
}

// defaultLimit is the limit in bytes where none is given:
// DefaultLimitPackets of what the queue holds. A child (a ByteLimiter)
// holds packets as the sender handed them down (fq cuts a host-GSO packet
// only at its flow's head); the byte FIFO, pieces of at most the MTU.
func (b *linkBounds) defaultLimit(child bool) uint64 {
	if child {
		return DefaultLimitPackets * b.sent
	}
	return DefaultLimitPackets * b.mtu
}

// linkMaxOf is the link's MTU plus header: Linux's psched_mtu.
func linkMaxOf(l stack.LinkEndpoint) uint64 { return uint64(l.MTU()) + uint64(l.MaxHeaderLength()) }

// boundsOf returns lower's linkBounds: with splitsGSO, host-GSO packets
// are cut to fit the bucket, so only the MTU bounds it.
func boundsOf(lower stack.LinkEndpoint, splitsGSO bool) *linkBounds {
	mtu := linkMaxOf(lower)
	b := &linkBounds{max: mtu, mtu: mtu, sent: mtu, what: fmt.Sprintf("the lower link's largest packet (MTU %d + %d header bytes)", lower.MTU(), lower.MaxHeaderLength())}
	if gso, ok := lower.(stack.GSOEndpoint); ok && gso.SupportedGSO() == stack.HostGSOSupported {
		b.sent = max(mtu, uint64(gso.GSOMaxSize())+uint64(lower.MaxHeaderLength()))
		if b.sent > b.max && !splitsGSO {
			b.max = b.sent
			b.what = fmt.Sprintf("the lower link's largest host-GSO packet (%d + %d header bytes; or disable host GSO)", gso.GSOMaxSize(), lower.MaxHeaderLength())
		}
	}
	return b
}

// MaxPacketRate is the largest PacketRate: one packet a nanosecond.
const MaxPacketRate = 1_000_000_000

// check validates cfg against lower and fills in its Limit. It returns the
// largest packet the buckets can pass.
func check(lower stack.LinkEndpoint, cfg Config, splitsGSO bool) (Config, uint32, error) {
	return cfg.validate(boundsOf(lower, splitsGSO))
}

// validate checks c, against link when it is not nil, and fills in its
// Limit (the default one only with a link). It returns the largest packet
// the buckets can pass, min(Burst, MTU).
//
// Some bounds are the fields' types, as in Linux: Rate and PeakRate are
// u64 (TCA_TBF_RATE64, TCA_TBF_PRATE64), Burst, MTU and Limit u32
// (TCA_TBF_BURST, TCA_TBF_PBURST, tc_tbf_qopt.limit). At the extremes
// the buckets still fit the int64 clock: 2^32-1 bytes and a 65535-byte
// overhead at 1 byte/s are 4.3e18 ns.
func (c Config) validate(link *linkBounds) (Config, uint32, error) {
	atLeast := "at least the link's MTU plus header"
	if link != nil {
		atLeast = fmt.Sprintf("at least %d bytes, %s", link.max, link.what)
	}
	if c.Rate == 0 && c.PacketRate != 0 {
		return c.validatePacketOnly(link)
	}
	switch {
	// tc's tbf_parse_opt: rate is mandatory. Ours: unless a packet rate
	// is the ceiling.
	case c.Rate == 0:
		return c, 0, configErr("rate", "the rate is 0; set a rate in bytes per second (for example 1250000, or 10mbit), or a pkt_rate")
	// tc's tbf_parse_opt: burst is mandatory (and tbf_change refuses a
	// max_size of 0 with -EINVAL).
	case c.Burst == 0:
		return c, 0, configErr("burst", "the burst is 0; set a bucket depth of %s", atLeast)
	// Ours: tbf_change only warns that the burst is below the device's
	// MTU, and tbf_enqueue then drops every larger packet.
	case link != nil && uint64(c.Burst) < link.max:
		return c, 0, configErr("burst", "burst %d bytes is smaller than %s: such packets could never be sent; raise burst to at least %d bytes", c.Burst, link.what, link.max)
	// tbf_change: a peak rate not above the rate is -EINVAL.
	case c.PeakRate != 0 && c.PeakRate <= c.Rate:
		return c, 0, configErr("peakrate", "peakrate %s must be above rate %s; raise peakrate or leave it unset", rate.FormatRate(c.PeakRate), rate.FormatRate(c.Rate))
	// tc's tbf_parse_opt: peakrate needs mtu (and tbf_change refuses the
	// max_size of 0 a zero mtu gives).
	case c.PeakRate != 0 && c.MTU == 0:
		return c, 0, configErr("mtu", "peakrate needs mtu, the peak bucket's depth; set mtu to %s", atLeast)
	// tc's tbf_parse_opt takes mtu without peakrate and sends no peak
	// bucket (only the rate table's cell size, unused since Linux 3.8,
	// comes of it): it shapes nothing, as here.
	// Ours, as for burst.
	case link != nil && c.PeakRate != 0 && uint64(c.MTU) < link.max:
		return c, 0, configErr("mtu", "mtu %d bytes is smaller than %s: such packets could never be sent; raise mtu to at least %d bytes", c.MTU, link.what, link.max)
	// Ours, as tc police's pkt_rate and pkt_burst: each needs the other,
	// and a packet must cost at least 1 ns.
	case c.PacketRate != 0 && c.PacketBurst == 0:
		return c, 0, configErr("pkt_burst", "pkt_rate needs pkt_burst, the packet bucket's depth in packets; set pkt_burst to at least 1")
	case c.PacketRate == 0 && c.PacketBurst != 0:
		return c, 0, configErr("pkt_burst", "pkt_burst %d is the packet bucket's depth and needs pkt_rate; set pkt_rate or leave pkt_burst unset", c.PacketBurst)
	case c.PacketRate > MaxPacketRate:
		return c, 0, configErr("pkt_rate", "pkt_rate %d packets/s is above %d; lower it (a packet must cost at least 1 ns)", c.PacketRate, MaxPacketRate)
	// tc's tbf_parse_opt: limit and latency exclude each other.
	case c.Limit != 0 && c.Latency != 0:
		return c, 0, configErr("latency", "limit and latency both bound the queue; give one of them, not both")
	// tc's get_time reads latency unsigned.
	case c.Latency < 0:
		return c, 0, configErr("latency", "latency %v is negative; give a positive duration such as 50ms", c.Latency)
	// Ours: the child's own limits bound the queue, and it is one queue.
	case c.Child != nil && !isByteLimiter(c.Child) && (c.Limit != 0 || c.Latency != 0):
		return c, 0, configErr("limit", "with a child qdisc (%s), the child's limits bound the queue; leave limit and latency unset", childName(c.Child))
	case c.Child != nil && c.Lanes > 1:
		return c, 0, configErr("lanes", "a tbf with a child qdisc (%s) has one lane (the child spreads flows itself); leave lanes unset", childName(c.Child))
	// Ours: Linux's tbf has one queue and its watchdog no slack.
	case c.Lanes < 0 || c.Lanes > MaxLanes:
		return c, 0, configErr("lanes", "lanes %d is out of range; give 1 to %d (0 means 1)", c.Lanes, MaxLanes)
	case c.Slack < NoSlack || c.Slack > MaxSlack:
		return c, 0, configErr("slack", "slack %v is out of range; give 0 (the default, %v), NoSlack, or up to %v", c.Slack, DefaultSlack, MaxSlack)
	// tc_ratespec.overhead and psched_ratecfg.overhead are u16, read by
	// tc's tbf_parse_opt with get_u16.
	case c.Overhead < 0 || c.Overhead > MaxOverhead:
		return c, 0, configErr("overhead", "overhead %d is out of range; give 0 to %d bytes (Linux's tbf overhead is unsigned 16 bits)", c.Overhead, MaxOverhead)
	// tc_ratespec.mpu and psched_ratecfg.mpu are u16.
	case c.MPU > MaxMPU:
		return c, 0, configErr("mpu", "mpu %d bytes is out of range; give 0 to %d bytes (Linux's tbf mpu is unsigned 16 bits)", c.MPU, MaxMPU)
	// tbf_change, given the bucket as a time (TCA_TBF_PARMS alone, as
	// older tc sends it): max_size = psched_ns_t2l(buffer) - overhead is
	// 0, and it returns -EINVAL. (Given TCA_TBF_BURST it charges the
	// bucket's depth the overhead too and accepts; either way no framing
	// overhead is the size of the bucket.) An overhead that only takes a
	// full-size packet's charge past burst bytes is accepted: the
	// bucket's depth, TimeNS(Burst), is charged the overhead too, as with
	// TCA_TBF_BURST, so such a packet costs at most the bucket.
	case uint64(c.Overhead) >= uint64(c.Burst):
		return c, 0, configErr("overhead", "overhead %d bytes is not below burst %d bytes: no packet fits the bucket with it (Linux's tbf_change refuses a max_size of 0); lower overhead or raise burst", c.Overhead, c.Burst)
	case c.PeakRate != 0 && uint64(c.Overhead) >= uint64(c.MTU):
		return c, 0, configErr("overhead", "overhead %d bytes is not below mtu %d bytes: no packet fits the peak bucket with it (Linux's tbf_change refuses a max_size of 0); lower overhead or raise mtu", c.Overhead, c.MTU)
	// Ours: Linux accepts an mpu above the bucket. Given the bucket as a
	// time, tbf_change computes max_size with psched_ns_t2l, which ignores
	// mpu, and every packet then costs more than the bucket holds: the
	// queue stalls for good. (Given TCA_TBF_BURST, as here, the bucket
	// silently grows to mpu.) We refuse instead.
	case c.MPU > c.Burst:
		return c, 0, configErr("mpu", "mpu %d bytes is above burst %d bytes: every packet would be charged more than the bucket holds; lower mpu to at most burst", c.MPU, c.Burst)
	case c.PeakRate != 0 && c.MPU > c.MTU:
		return c, 0, configErr("mpu", "mpu %d bytes is above mtu %d bytes: every packet would be charged more than the peak bucket holds; lower mpu to at most mtu", c.MPU, c.MTU)
	}
	r, p := c.rates()
	// Ours: a bucket of 0 ns holds nothing.
	if r.TimeNS(c.Burst) == 0 {
		return c, 0, configErr("burst", "burst %d bytes lasts less than 1 ns at rate %s; raise burst or lower rate", c.Burst, rate.FormatRate(c.Rate))
	}
	maxSize := c.Burst
	if c.PeakRate != 0 {
		maxSize = min(c.Burst, c.MTU)
		if p.TimeNS(c.MTU) == 0 {
			return c, 0, configErr("mtu", "mtu %d bytes lasts less than 1 ns at peakrate %s; raise mtu or lower peakrate", c.MTU, rate.FormatRate(c.PeakRate))
		}
	}
	limitField := "limit"
	switch {
	case c.Latency != 0:
		// tc's tbf_parse_opt computes limit = rate*latency + burst (with
		// a peak rate, at most peakrate*latency + mtu) as a double and
		// stores it in the u32 tc_tbf_qopt.limit unchecked: past 2^32-1
		// C leaves the conversion undefined (it wraps, in practice), and
		// tbf_change takes whatever u32 arrives. We refuse.
		limitField = "latency"
		limit := addSat(r.BytesIn(uint64(c.Latency)), uint64(c.Burst))
		if c.PeakRate != 0 {
			limit = min(limit, addSat(rate.New(c.PeakRate).BytesIn(uint64(c.Latency)), uint64(c.MTU)))
		}
		if limit > math.MaxUint32 {
			return c, 0, configErr("latency", "latency %v at rate %s allows a backlog of %d bytes, more than the %d a limit can hold (Linux's tc_tbf_qopt.limit is u32); lower latency", c.Latency, rate.FormatRate(c.Rate), limit, uint32(math.MaxUint32))
		}
		c.Limit = uint32(limit)
	case c.Child != nil && c.Limit == 0 && !isByteLimiter(c.Child):
		return c, maxSize, nil // the child bounds the queue
	case c.Limit == 0:
		if link == nil {
			return c, maxSize, nil // the default depends on the link
		}
		c.Limit = uint32(min(max(link.defaultLimit(c.Child != nil), uint64(maxSize)), math.MaxUint32))
	}
	// tbf_change takes any limit, below the burst too: bfifo_enqueue then
	// drops (and counts) each packet larger than the limit, as the lane's
	// byte bound does here, and passes the smaller ones.
	// Ours: Linux charges a packet as it leaves; here departures are
	// booked as packets queue, so the whole backlog's time must fit the
	// int64 clock. A queue's ring holds at most Limit/minPacketBytes+1
	// packets (however small, even empty), each charged overhead and mpu
	// on top of its bytes.
	packets := float64(max(c.Lanes, 1)) * float64(uint64(c.Limit)/minPacketBytes+1)
	wait := (float64(c.Limit) + packets*float64(uint64(c.Overhead)+uint64(c.MPU))) * rate.NanosPerSecond / float64(c.Rate)
	if c.PacketRate != 0 {
		wait += packets * rate.NanosPerSecond / float64(c.PacketRate)
	}
	if wait > maxBacklogNS {
		const year = 365.25 * 24 * float64(time.Hour)
		return c, 0, configErr(limitField, "a full backlog of %d bytes (up to %.0f packets, each charged overhead %d and at least mpu %d bytes) takes %.3g years at rate %s, more than the %.0f years (2^62 ns) departures can be booked ahead; lower %s, overhead or mpu, or raise rate", c.Limit, packets, c.Overhead, c.MPU, wait/year, rate.FormatRate(c.Rate), maxBacklogNS/year, limitField)
	}
	return c, maxSize, nil
}

// addSat returns a + b, or the largest uint64 if that overflows.
func addSat(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint64
}

// validatePacketOnly is validate for a ceiling of packets alone (Rate 0,
// PacketRate set): the byte buckets' settings must be unset, the limit
// is in bytes as ever, and the largest packet is the link's.
func (c Config) validatePacketOnly(link *linkBounds) (Config, uint32, error) {
	switch {
	case c.Burst != 0 || c.PeakRate != 0 || c.MTU != 0:
		return c, 0, configErr("burst", "burst, peakrate and mtu shape a byte rate, and the rate is unset (a pkt_rate alone is the ceiling); set a rate or leave them unset")
	case c.Overhead != 0 || c.MPU != 0 || c.ATM:
		return c, 0, configErr("overhead", "overhead, mpu and linklayer atm are charged against a byte rate, and the rate is unset; set a rate or leave them unset")
	case c.Latency != 0:
		return c, 0, configErr("latency", "latency is converted to a limit at the byte rate, and the rate is unset; give a limit in bytes instead")
	}
	// The other checks do not involve the byte buckets: run them with a
	// byte rate that never binds, and keep the packet bucket as given.
	wide := c
	wide.Burst = math.MaxUint32
	if link != nil {
		wide.Burst = uint32(min(link.max, math.MaxUint32))
	}
	wide.Rate = uint64(wide.Burst) // the bucket lasts 1 s: valid, and far above any packet rate's bytes
	v, maxSize, err := wide.validate(link)
	if err != nil {
		return c, 0, err
	}
	c.Limit = v.Limit
	if link == nil {
		maxSize = 0 // any packet: the limit bounds it
	}
	packets := float64(max(c.Lanes, 1)) * float64(uint64(c.Limit)/minPacketBytes+1)
	if packets*rate.NanosPerSecond/float64(c.PacketRate) > maxBacklogNS {
		return c, 0, configErr("limit", "a full backlog of %.0f packets takes more than 2^62 ns at pkt_rate %d; lower limit or raise pkt_rate", packets, c.PacketRate)
	}
	return c, maxSize, nil
}

// childName names a child qdisc in an error: its first word as `tc qdisc
// show` would print it ("fq_codel"), or its type.
func childName(q qdisc.Queue) string {
	if s, ok := q.(fmt.Stringer); ok {
		if name, _, _ := strings.Cut(s.String(), " "); name != "" {
			return name
		}
	}
	return fmt.Sprintf("%T", q)
}

// rates returns the rate and peak rate as c's buckets charge packets:
// overhead, mpu and ATM framing included.
func (c Config) rates() (r, peak rate.Rate) {
	r = rate.New(c.Rate).WithOverhead(c.Overhead).WithMPU(c.MPU).WithATM(c.ATM)
	if c.PeakRate != 0 {
		peak = rate.New(c.PeakRate).WithOverhead(c.Overhead).WithMPU(c.MPU).WithATM(c.ATM)
	}
	return r, peak
}
