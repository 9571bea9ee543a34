package cake

// Single values in tc's words (rates, times, sizes), and the parsers of
// one setting each that runsc's flags use.

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// parseTCRate reads a rate as tc's get_rate64 does (rate.ParseTCRate).
func parseTCRate(v string) (uint64, error) { return rate.ParseTCRate(v) }

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
