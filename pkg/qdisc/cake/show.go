package cake

// A Config in `tc qdisc show`'s words: String, exact, which ParseQdisc
// reads back, and TCLine, rounded as tc prints it; and the writers of
// single words they and the error messages use.

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

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

// TCLine writes c as `tc qdisc show` prints cake (iproute2's
// cake_print_opt, from what cake_dump reports), field for field:
//
//	bandwidth 100Mbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0
//
// Unlike String, whose words ParseQdisc reads back exactly, it rounds as
// tc does: the rate with sprint_rate (1234567bit is 1234Kbit), rtt with
// sprint_time (three digits), memlimit with sprint_size; and it leaves
// out a Target other than rtt/20, which cake_dump does not report.
func (c Config) TCLine() string {
	var b strings.Builder
	if c.Bandwidth == 0 {
		b.WriteString("bandwidth unlimited ")
	} else {
		fmt.Fprintf(&b, "bandwidth %s ", rate.FormatRate(c.Bandwidth))
	}
	if c.Autorate {
		b.WriteString("autorate-ingress ")
	}
	fmt.Fprintf(&b, "%s %s ", c.Diffserv, c.Isolation)
	b.WriteString(pick(c.NAT, "nat ", "nonat "))
	b.WriteString(pick(c.Wash, "wash ", "nowash "))
	if c.Ingress {
		b.WriteString("ingress ")
	}
	fmt.Fprintf(&b, "%s ", c.AckFilter)
	b.WriteString(pick(c.SplitGSO, "split-gso ", "no-split-gso "))
	if us := c.RTT.Microseconds(); us != 0 {
		fmt.Fprintf(&b, "rtt %s ", rate.FormatTCTime(float64(us)))
	}
	if c.Raw {
		b.WriteString("raw ")
	}
	if c.ATM != NoATM || !c.Raw {
		fmt.Fprintf(&b, "%s ", c.ATM)
	}
	fmt.Fprintf(&b, "overhead %d", c.Overhead)
	if c.MPU != 0 {
		fmt.Fprintf(&b, " mpu %d", c.MPU)
	}
	if c.Memlimit != 0 {
		fmt.Fprintf(&b, " memlimit %s", rate.FormatSize(uint64(c.Memlimit)))
	}
	if c.FwMark != 0 {
		fmt.Fprintf(&b, " fwmark 0x%x", c.FwMark)
	}
	return b.String()
}

// pick is yes if on, else no.
func pick(on bool, yes, no string) string {
	if on {
		return yes
	}
	return no
}
