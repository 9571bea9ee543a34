package netem

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Percent is a probability in netem's 32-bit fixed point: 2^32-1 is
// 100% (tc's set_percent and the kernel's comparisons against a 32-bit
// draw).
type Percent uint32

// ParsePercent reads a percentage as tc's get_percent does: a number,
// perhaps followed by %, from 0 to 100 (so "0.5" is half a percent, not
// a half), rounded to the nearest step of 2^-32.
func ParsePercent(s string) (Percent, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
		return 0, fmt.Errorf("%q is not a percentage from 0 to 100 (as 1%% or 0.5)", s)
	}
	return percentOf(f / 100), nil
}

// percentOf is tc's set_percent: a fraction of 1 in fixed point.
func percentOf(frac float64) Percent {
	return Percent(math.RoundToEven(min(max(frac, 0), 1) * math.MaxUint32))
}

// Fraction returns p as a fraction of 1.
func (p Percent) Fraction() float64 { return float64(p) / math.MaxUint32 }

// String writes p as tc prints a percentage ("%g%%": six significant
// digits, trailing zeros dropped).
func (p Percent) String() string {
	return cFormatG(100*float64(p)/math.MaxUint32, 6) + "%"
}

// cFormatG is C's printf %.Ng.
func cFormatG(v float64, n int) string {
	return strconv.FormatFloat(v, 'g', n, 64)
}
