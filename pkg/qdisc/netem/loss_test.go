package netem

import (
	"math"
	"strings"
	"testing"
)

// lossRun draws n packets' fates from l and returns the fraction lost and
// the mean length of runs of consecutive losses.
func lossRun(l *lossGen, p *prng, n int) (rate, burst float64) {
	lost, bursts, run := 0, 0, 0
	for range n {
		if l.lost(p) {
			lost++
			run++
			continue
		}
		if run > 0 {
			bursts++
			run = 0
		}
	}
	if run > 0 {
		bursts++
	}
	return float64(lost) / float64(n), float64(lost) / float64(max(bursts, 1))
}

// TestRandomLoss: `loss random P` loses P of the packets, within the
// binomial 99% interval over 200,000 (2.576 standard deviations); 0
// loses none and 100% all.
func TestRandomLoss(t *testing.T) {
	var p prng
	p.seed(3)
	const n = 200_000
	for _, pct := range []float64{0.001, 0.01, 0.1, 0.5} {
		l := lossGen{kind: lossRandom, p: prob32(pct)}
		rate, _ := lossRun(&l, &p, n)
		if half := 2.576 * math.Sqrt(pct*(1-pct)/n); math.Abs(rate-pct) > half {
			t.Errorf("loss %g%%: lost %.5f, want within %.5f of %g", 100*pct, rate, half, pct)
		}
	}
	for _, tc := range []struct {
		p    uint32
		want float64
	}{{0, 0}, {math.MaxUint32, 1}} {
		l := lossGen{kind: lossRandom, p: tc.p}
		if rate, _ := lossRun(&l, &p, 10_000); rate != tc.want {
			t.Errorf("loss probability %d: lost %v, want %v", tc.p, rate, tc.want)
		}
	}
}

// stationary returns the stationary distribution of the 4-state chain
// tc-netem(8) describes, by power iteration over its transition matrix
// (state 1 gap-sent, 2 burst-sent, 3 burst-lost, 4 isolated loss).
func stationary(p13, p31, p32, p23, p14 float64) [5]float64 {
	var m [5][5]float64
	m[1][4], m[1][3], m[1][1] = p14, p13, 1-p13-p14
	m[2][3], m[2][2] = p23, 1-p23
	m[3][2], m[3][1], m[3][3] = p32, p31, 1-p31-p32
	m[4][1] = 1
	pi := [5]float64{0, 1, 0, 0, 0}
	for range 100_000 {
		var next [5]float64
		for i := 1; i <= 4; i++ {
			for j := 1; j <= 4; j++ {
				next[j] += pi[i] * m[i][j]
			}
		}
		pi = next
	}
	return pi
}

// TestFourStateLoss: `loss state` loses a packet when the chain enters a
// loss state (3 or 4), so its loss rate is their stationary share, as
// the chain tc-netem(8) describes settles to.
func TestFourStateLoss(t *testing.T) {
	var p prng
	p.seed(5)
	for _, c := range [][5]float64{
		{0.01, 0.5, 0.3, 0.2, 0.005}, // p13 p31 p32 p23 p14
		{0.05, 0.9, 0.05, 0.5, 0},
		{0.001, 0.1, 0.5, 0.1, 0.01},
	} {
		l := lossGen{kind: loss4State, state: txInGap, a1: prob32(c[0]), a2: prob32(c[1]), a3: prob32(c[2]), a4: prob32(c[4]), a5: prob32(c[3])}
		rate, _ := lossRun(&l, &p, 2_000_000)
		pi := stationary(c[0], c[1], c[2], c[3], c[4])
		if want := pi[3] + pi[4]; math.Abs(rate-want) > 0.05*want {
			t.Errorf("state %v: lost %.5f, want the chain's %.5f within 5%%", c, rate, want)
		}
	}
}

// TestGilbertFromBurst: an average loss and a mean burst length give the
// simple Gilbert chain that has them, shown in tc's words; the chain,
// run, loses that average in bursts of that length. What cannot be met
// is refused, saying what can.
func TestGilbertFromBurst(t *testing.T) {
	var p prng
	p.seed(9)
	for _, tc := range []struct{ loss, burst float64 }{{0.01, 1}, {0.01, 4}, {0.05, 10}, {0.2, 2}} {
		g, err := GilbertFromBurst(tc.loss, tc.burst)
		if err != nil {
			t.Fatal(err)
		}
		l := g.geGen()
		rate, burst := lossRun(&l, &p, 2_000_000)
		if math.Abs(rate-tc.loss) > 0.05*tc.loss || math.Abs(burst-tc.burst) > 0.05*tc.burst {
			t.Errorf("%g%% in bursts of %g (%s): lost %.5f in bursts of %.3f", 100*tc.loss, tc.burst, g, rate, burst)
		}
	}
	g, _ := GilbertFromBurst(0.01, 4)
	if got, want := g.String(), "loss gemodel 0.252525% 25% 100% 0%"; got != want {
		t.Errorf("shown as %q, want %q", got, want)
	}
	for _, tc := range []struct {
		loss, burst float64
		says        string
	}{
		{0, 4, "more than 0%"},
		{1, 4, "less than 100%"},
		{0.5, 0.5, "1 or more"},
		{0.9, 1, "bursts of at least 9"},
		{math.NaN(), 2, "more than 0%"},
	} {
		if _, err := GilbertFromBurst(tc.loss, tc.burst); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("GilbertFromBurst(%v, %v): %v, want an error saying %q", tc.loss, tc.burst, err, tc.says)
		}
	}
}
