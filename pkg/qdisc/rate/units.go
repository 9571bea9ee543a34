package rate

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
)

// rateUnits maps tc's rate suffixes (matched without regard to case, as tc
// does) to bits per second. "bps" is bytes per second, as in tc.
var rateUnits = map[string]uint64{
	"bit":   1,
	"kbit":  1e3,
	"mbit":  1e6,
	"gbit":  1e9,
	"tbit":  1e12,
	"kibit": 1 << 10,
	"mibit": 1 << 20,
	"gibit": 1 << 30,
	"tibit": 1 << 40,
	"bps":   8,
	"kbps":  8e3,
	"mbps":  8e6,
	"gbps":  8e9,
	"tbps":  8e12,
	"kibps": 8 << 10,
	"mibps": 8 << 20,
	"gibps": 8 << 30,
	"tibps": 8 << 40,
}

// sizeUnits maps tc's size suffixes to bits: tc's "k", "kb", "m", "mb",
// "g", "gb" are binary multiples of bytes, and "kbit", "mbit", "gbit" are
// binary multiples of bits (iproute2's get_size).
var sizeUnits = map[string]uint64{
	"b":    8,
	"k":    8 << 10,
	"kb":   8 << 10,
	"kib":  8 << 10,
	"m":    8 << 20,
	"mb":   8 << 20,
	"mib":  8 << 20,
	"g":    8 << 30,
	"gb":   8 << 30,
	"gib":  8 << 30,
	"kbit": 1 << 10,
	"mbit": 1 << 20,
	"gbit": 1 << 30,
}

const (
	rateUnitList = "bit, kbit, mbit, gbit, tbit, kibit, mibit, gibit, tibit, bps, kbps, mbps, gbps, tbps, kibps, mibps, gibps, tibps"
	sizeUnitList = "b, k, kb, kib, m, mb, mib, g, gb, gib, kbit, mbit, gbit"
)

// ParseRate reads a rate as tc does ("100mbit", "1.5gbit", "125kbps") or as
// runsc does (a bare whole number is bytes per second) and returns bytes
// per second, rounded down. Units are matched without regard to case: "bit"
// is bits and "bps" is bytes per second; k, m, g, t are powers of 1000 and
// ki, mi, gi, ti powers of 1024.
func ParseRate(text string) (uint64, error) {
	return parse("rate", text, rateUnits, rateUnitList, "bytes per second")
}

// ParseTCRate reads a rate in a qdisc's tc words, as tc's get_rate64
// does: tc's units, and a bare number in bits per second (where
// ParseRate, for runsc's flags, reads bytes). A percentage of the
// device's speed is refused: a netstack's link has no speed to read.
func ParseTCRate(v string) (uint64, error) {
	if strings.HasSuffix(v, "%") {
		return 0, errors.New("a percentage of the link's speed is not taken (a netstack's link has no speed to read); give a rate such as 10mbit")
	}
	if v == "" || strings.Trim(v, "0123456789.") != "" {
		return ParseRate(v)
	}
	bps, err := ParseRate(v + "bit")
	if err != nil {
		return 0, fmt.Errorf("a bare number is bits per second in tc's words (say 10mbit, or 1250000bps for bytes): %w", err)
	}
	return bps, nil
}

// ParseSize reads a size as tc does ("10kb" is 10240 bytes, "1mbit" is
// 131072 bytes) or as runsc does (a bare whole number is bytes) and returns
// bytes, rounded down.
func ParseSize(text string) (uint64, error) {
	return parse("size", text, sizeUnits, sizeUnitList, "bytes")
}

// parse reads a non-negative decimal number followed by an optional unit
// from units (bits per unit) and returns the value in whole bytes. It is
// exact: the number is read as a fraction, never as a float.
func parse(what, text string, units map[string]uint64, list, bare string) (uint64, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, fmt.Errorf("invalid %s %q: empty; give a number with a unit (%s) or a bare number of %s", what, text, list, bare)
	}
	end := 0
	dots := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		if s[end] == '.' {
			dots++
		}
		end++
	}
	num, unit := s[:end], strings.ToLower(strings.TrimSpace(s[end:]))
	switch {
	case strings.HasPrefix(s, "-"):
		return 0, fmt.Errorf("invalid %s %q: negative", what, text)
	case num == "" || num == "." || dots > 1:
		return 0, fmt.Errorf("invalid %s %q: no number; give a number with a unit (%s) or a bare number of %s", what, text, list, bare)
	case len(num) > 40:
		return 0, fmt.Errorf("invalid %s %q: too many digits", what, text)
	}
	bitsPer := uint64(8)
	if unit != "" {
		var ok bool
		if bitsPer, ok = units[unit]; !ok {
			return 0, fmt.Errorf("invalid %s %q: unknown unit %q; use one of %s, or a bare number of %s", what, text, s[end:], list, bare)
		}
	} else if dots > 0 {
		return 0, fmt.Errorf("invalid %s %q: a bare number is whole %s; write the fraction with a unit (for example %q)", what, text, bare, num+exampleUnit(what))
	}
	v, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("invalid %s %q: %q is not a number", what, text, num)
	}
	v.Mul(v, new(big.Rat).SetFrac64(int64(bitsPer), 8))
	whole := new(big.Int).Quo(v.Num(), v.Denom())
	if !whole.IsUint64() {
		return 0, fmt.Errorf("invalid %s %q: out of range (at most %d %s)", what, text, uint64(math.MaxUint64), bare)
	}
	if whole.Sign() == 0 && v.Sign() != 0 {
		return 0, fmt.Errorf("invalid %s %q: less than one byte; give at least 1 byte", what, text)
	}
	return whole.Uint64(), nil
}

func exampleUnit(what string) string {
	if what == "rate" {
		return "mbit"
	}
	return "kb"
}

// FormatRate prints bytesPerSec in bits per second the way tc prints rates:
// "100Mbit", "1Gbit", "1500Kbit", "800bit".
func FormatRate(bytesPerSec uint64) string {
	units := [...]string{"", "K", "M", "G", "T"}
	if bytesPerSec > math.MaxUint64/8 {
		return fmt.Sprintf("%dBps", bytesPerSec)
	}
	r := bytesPerSec * 8
	i := 0
	for ; i < len(units)-1; i++ {
		if r < 1000 || (r%1000 != 0 && r < 1000*1000) {
			break
		}
		r /= 1000
	}
	return fmt.Sprintf("%d%sbit", r, units[i])
}

// FormatSize prints a byte count the way tc prints sizes (sprint_size):
// "1514b", "10Kb" (a multiple of 1024 within 16 bytes), "2Mb" (a multiple
// of 1 MiB within 1 KiB), "4Gb" (a multiple of 1 GiB within 1 KiB).
func FormatSize(n uint64) string {
	f := float64(n)
	switch {
	case n >= 1<<30 && math.Abs(float64(1<<30)*math.Round(f/(1<<30))-f) < 1024:
		return fmt.Sprintf("%gGb", math.Round(f/(1<<30)))
	case n >= 1<<20 && math.Abs(float64(1<<20)*math.Round(f/(1<<20))-f) < 1024:
		return fmt.Sprintf("%gMb", math.Round(f/(1<<20)))
	case n >= 1<<10 && math.Abs(float64(1<<10)*math.Round(f/(1<<10))-f) < 16:
		return fmt.Sprintf("%gKb", math.Round(f/(1<<10)))
	default:
		return fmt.Sprintf("%db", n)
	}
}
