package netem

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// moments returns the mean and standard deviation of t's entries over
// DistScale: what tabledist's draws have in units of sigma.
func moments(t Table) (mean, sd float64) {
	for _, v := range t {
		mean += float64(v)
	}
	mean /= float64(len(t))
	for _, v := range t {
		d := float64(v) - mean
		sd += d * d
	}
	return mean / DistScale, math.Sqrt(sd/float64(len(t))) / DistScale
}

// TestTables: the generated tables are iproute2's, by their shape: 4096
// entries each, in order (an inverse CDF), the normal's the inverse CDF
// at each quantile with mean 0 and a standard deviation of 1 (its tails
// clamped at 16 bits, 4 sigma), Pareto's rising from -1.5*4/3*8192 (its least value) and
// clamped at 32767, and paretonormal a quarter of one and three of the
// other.
func TestTables(t *testing.T) {
	n, p, pn := Normal(), Pareto(), ParetoNormal()
	for name, tab := range map[string]Table{"normal": n, "pareto": p, "paretonormal": pn} {
		if len(tab) != tableSize {
			t.Errorf("%s: %d entries, want %d", name, len(tab), tableSize)
		}
		if !slices.IsSorted(tab) {
			t.Errorf("%s: entries out of order: not an inverse CDF", name)
		}
	}
	if mean, sd := moments(n); math.Abs(mean) > 0.001 || math.Abs(sd-1) > 0.01 {
		t.Errorf("normal: mean %.4f sd %.4f sigmas, want 0 and 1", mean, sd)
	}
	// normal.c keeps the last x of its walk that rounds to each quantile:
	// entry i is the inverse CDF at the top of its bin, (4i+0.5)/16384.
	for i, v := range n {
		want := DistScale * math.Sqrt2 * math.Erfinv(2*(float64(4*i)+0.5)/(4*tableSize)-1)
		if math.Abs(want) < math.MaxInt16 && math.Abs(float64(v)-want) > 1 {
			t.Fatalf("normal: entry %d is %d, want the inverse CDF at (4i+0.5)/16384, %.1f", i, v, want)
		}
	}
	// iproute2's normal.dist begins -32768 -28307.
	if n[1] != -28307 {
		t.Errorf("normal: entry 1 is %d, want iproute2's -28307", n[1])
	}
	if n[0] != math.MinInt16 {
		t.Errorf("normal: first entry %d, want the 16-bit clamp %d (below -4 sigma)", n[0], math.MinInt16)
	}
	if want := int16(math.Round((1/math.Pow(1, 1.0/3) - 1.5) * 4 / 3 * DistScale)); p[0] != want {
		t.Errorf("pareto: first entry %d, want %d", p[0], want)
	}
	if p[len(p)-1] != math.MaxInt16 {
		t.Errorf("pareto: last entry %d, want the clamp 32767", p[len(p)-1])
	}
	for _, i := range []int{1, 2, 1000, 2048, 4000, 4095} {
		// paretonormal.c pairs normal's entry i with the Pareto value at
		// 65536-16i of the way, where pareto.c's entry i is at 65536-16i
		// too: so each is (normal[i] + 3*pareto[i])/4, C's division
		// (but at entry 0, where it takes the normal's value before the
		// 16-bit clamp).
		if want := clamp16((int(n[i]) + 3*int(p[i])) / 4); pn[i] != want {
			t.Errorf("paretonormal entry %d: %d, want (normal %d + 3 pareto %d)/4 = %d", i, pn[i], n[i], p[i], want)
		}
	}
}

// TestParseTable: iproute2's .dist format reads back what was written
// (comments and blank lines skipped); what tc would truncate or cannot
// read is refused, saying where and what to change.
func TestParseTable(t *testing.T) {
	got, err := ParseTable(strings.NewReader("# a table\n\n 1 -2  3\n0x10 -32768 32767\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Table{1, -2, 3, 16, -32768, 32767}); !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	for _, tc := range []struct{ in, says string }{
		{"1 2 x\n", `line 1: "x" is not an integer`},
		{"# c\n40000\n", "line 2: 40000 is outside a table's 16 bits"},
		{"# nothing\n", "no entries"},
		{strings.Repeat("1 ", MaxDistEntries+1), "more than 16384 entries"},
	} {
		if _, err := ParseTable(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("ParseTable(%.20q): %v, want an error saying %q", tc.in, err, tc.says)
		}
	}
}

// TestTabledist: a delay of mu with jitter sigma is mu with no jitter;
// uniform over [mu-sigma, mu+sigma) with no table; and with a table, mu
// plus sigma times the table's spread: over many draws the mean is mu
// and the standard deviation sigma (normal), within sampling error.
func TestTabledist(t *testing.T) {
	var p prng
	p.seed(1)
	const mu, sigma = int64(100_000_000), int32(10_000_000) // 100ms 10ms
	if got := tabledist(mu, 0, nil, &p, Normal()); got != mu {
		t.Errorf("no jitter: %d, want %d", got, mu)
	}
	const draws = 200_000
	for _, tc := range []struct {
		name   string
		table  Table
		wantSD float64 // in sigmas
	}{
		{"uniform", nil, 1 / math.Sqrt(3)},
		{"normal", Normal(), 1},
		{"pareto", Pareto(), 0},
		{"paretonormal", ParetoNormal(), 0},
	} {
		var sum, sq float64
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for range draws {
			d := tabledist(mu, sigma, nil, &p, tc.table)
			lo, hi = min(lo, d), max(hi, d)
			x := float64(d - mu)
			sum += x
			sq += x * x
		}
		mean := sum / draws
		sd := math.Sqrt(sq/draws - mean*mean)
		tabMean, tabSD := 0.0, tc.wantSD
		if tc.table != nil {
			tabMean, tabSD = moments(tc.table)
			if tc.wantSD == 0 {
				tc.wantSD = tabSD
			}
		}
		// The sample mean's error is sd/sqrt(draws); 5 of them.
		if tol := 5 * float64(sigma) * tabSD / math.Sqrt(draws); math.Abs(mean-tabMean*float64(sigma)) > tol {
			t.Errorf("%s: mean offset %.0f ns, want %.0f within %.0f", tc.name, mean, tabMean*float64(sigma), tol)
		}
		if math.Abs(sd/float64(sigma)-tc.wantSD) > 0.02 {
			t.Errorf("%s: sd %.4f sigmas, want %.4f", tc.name, sd/float64(sigma), tc.wantSD)
		}
		if tc.table == nil && (lo < mu-int64(sigma) || hi >= mu+int64(sigma)) {
			t.Errorf("uniform: drew from %d to %d, want within [%d, %d)", lo, hi, mu-int64(sigma), mu+int64(sigma))
		}
	}
}
