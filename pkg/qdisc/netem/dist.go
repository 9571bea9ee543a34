package netem

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
)

// DistScale is what a distribution table's entries are scaled by: an
// entry t stands for t/DistScale standard deviations (Linux's
// NETEM_DIST_SCALE).
const DistScale = 8192

// MaxDistEntries bounds a table (Linux's NETEM_DIST_MAX, 16384).
const MaxDistEntries = 16384

// Table is a delay distribution: a scaled inverse of its cumulative
// distribution function, sampled at evenly spaced probabilities, which a
// uniform draw indexes (Linux's disttable). nil is the uniform one.
type Table []int16

// tableSize is how many entries iproute2's generators write.
const tableSize = 4096

// Tables iproute2 generates (its netem/normal.c, pareto.c and
// paretonormal.c), made here from the same formulas, each once.
var (
	normalOnce, paretoOnce, paretoNormalOnce sync.Once
	normalTable, paretoTable, paretoNormal   Table
)

// Normal returns the normal distribution's table, as iproute2's
// normal.c makes it: the inverse of the standard normal's CDF at 4096
// evenly spaced probabilities, found by walking x from -10 to 10 in
// steps of 0.00005 and keeping, for each of 16384 quantiles, the last x
// that rounds to it.
func Normal() Table {
	normalOnce.Do(func() { normalTable = quantized(normalInverse()) })
	return normalTable
}

// Pareto returns the Pareto distribution's table (shape 3, shifted and
// scaled to a mean of 0 and a standard deviation of about 1), as
// iproute2's pareto.c makes it.
func Pareto() Table {
	paretoOnce.Do(func() {
		t := make(Table, 0, tableSize)
		for i := 65536; i > 0; i -= 16 {
			t = append(t, int16(paretoValue(i)))
		}
		paretoTable = t
	})
	return paretoTable
}

// ParetoNormal returns a quarter normal and three quarters Pareto, entry
// by entry, as iproute2's paretonormal.c makes it.
func ParetoNormal() Table {
	paretoNormalOnce.Do(func() {
		inv := normalInverse()
		t := make(Table, 0, tableSize)
		for i := 0; i < 4*tableSize; i += 4 {
			norm := int(math.RoundToEven(inv[i] * DistScale))
			v := (norm + 3*paretoValue(65536-4*i)) / 4 // C's division: toward 0
			t = append(t, clamp16(v))
		}
		paretoNormal = t
	})
	return paretoNormal
}

// normalInverse is normal.c's table of 16385 quantiles of the standard
// normal: entry i is the last x in normal.c's walk whose CDF rounds to
// i/16384.
func normalInverse() []float64 {
	const n = 4 * tableSize
	table := make([]float64, n+1)
	for x := -10.0; x < 10.05; x += .00005 {
		i := int(math.RoundToEven(n * (.5 + .5*math.Erf(x/math.Sqrt2))))
		table[i] = x
	}
	return table
}

// quantized returns every fourth entry of inv, scaled by DistScale and
// rounded (normal.c's output), clamped to 16 bits.
func quantized(inv []float64) Table {
	t := make(Table, 0, tableSize)
	for i := 0; i < 4*tableSize; i += 4 {
		t = append(t, clamp16(int(math.RoundToEven(inv[i]*DistScale))))
	}
	return t
}

// paretoValue is pareto.c's entry for i/65536 of the way: the inverse
// of a shape-3 Pareto's survival function, less 1.5, times 4/3 of
// DistScale, at most 32767.
func paretoValue(i int) int {
	v := 1 / math.Pow(float64(i)/65536, 1.0/3)
	v = (v - 1.5) * (4.0 / 3.0) * DistScale
	v = min(v, 32767)
	return int(math.RoundToEven(v))
}

// clamp16 holds v to int16's range, as the generators do.
func clamp16(v int) int16 {
	return int16(max(math.MinInt16, min(math.MaxInt16, v)))
}

// ParseTable reads a distribution table in iproute2's format (what tc
// reads from /usr/lib/tc/NAME.dist): whitespace-separated integers,
// lines starting with # ignored. tc stores each as 16 bits whatever its
// size; a value outside [-32768, 32767] is refused here, saying where.
func ParseTable(r io.Reader) (Table, error) {
	var t Table
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		for _, f := range strings.Fields(text) {
			v, err := strconv.ParseInt(f, 0, 64)
			if err != nil {
				return nil, fmt.Errorf("distribution table, line %d: %q is not an integer", line, f)
			}
			if v < math.MinInt16 || v > math.MaxInt16 {
				return nil, fmt.Errorf("distribution table, line %d: %d is outside a table's 16 bits [-32768, 32767]", line, v)
			}
			if len(t) == MaxDistEntries {
				return nil, fmt.Errorf("distribution table, line %d: more than %d entries (Linux's NETEM_DIST_MAX)", line, MaxDistEntries)
			}
			t = append(t, int16(v))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("distribution table: %v", err)
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("distribution table: no entries (a table is whitespace-separated integers)")
	}
	return t, nil
}

// tabledist returns a value of mean mu and spread sigma, ns, drawn
// through c from p as Linux's tabledist does: mu itself for sigma 0;
// uniform over [mu-sigma, mu+sigma) with no table; else mu plus sigma
// times a table entry over DistScale, the product rounded to the
// nearest in two parts (sigma's remainder and quotient by DistScale) so
// that it cannot overflow. sigma is at least 0: netem holds a jitter to
// [0, 2^31-1] ns.
func tabledist(mu int64, sigma int32, c *correlated, p *prng, t Table) int64 {
	if sigma == 0 {
		return mu
	}
	rnd := c.draw(p)
	if t == nil {
		return int64(rnd%(2*uint32(sigma))) + mu - int64(sigma)
	}
	e := int64(t[rnd%uint32(len(t))])
	x := int64(sigma%DistScale) * e
	if x >= 0 {
		x += DistScale / 2
	} else {
		x -= DistScale / 2
	}
	return x/DistScale + int64(sigma/DistScale)*e + mu
}
