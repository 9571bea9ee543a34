package measure

import (
	"math"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		v    []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]time.Duration{7 * ms}, 0.99, 7 * ms},
		{[]time.Duration{3 * ms, 1 * ms, 2 * ms}, 0.5, 2 * ms},
		// Even count: the mean of the two middle samples.
		{[]time.Duration{4 * ms, 1 * ms, 2 * ms, 3 * ms}, 0.5, 2500 * time.Microsecond},
		{[]time.Duration{4 * ms, 1 * ms, 2 * ms, 3 * ms}, 0, 1 * ms},
		{[]time.Duration{4 * ms, 1 * ms, 2 * ms, 3 * ms}, 1, 4 * ms},
		// p = 0.95 * 10 = 9.5: halfway between the 10th and 11th samples
		// (a Duration truncates the half nanosecond).
		{[]time.Duration{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.95, 9},
		{[]time.Duration{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100}, 0.95, 95},
		// Out of range q is clamped.
		{[]time.Duration{1, 2}, 2, 2},
		{[]time.Duration{1, 2}, -1, 1},
	} {
		in := append([]time.Duration(nil), tc.v...)
		if got := Quantile(tc.v, tc.q); got != tc.want {
			t.Errorf("Quantile(%v, %v) = %v, want %v", tc.v, tc.q, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.v[i] {
				t.Fatalf("Quantile reordered its input: %v, was %v", tc.v, in)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		v           []float64
		med, lo, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{5}, 5, 5, 5},
		{[]float64{9, 1, 5}, 5, 1, 9},
		{[]float64{9, 1}, 5, 1, 9},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
	} {
		med, lo, hi := Median(tc.v)
		if math.Abs(med-tc.med) > 1e-12 || lo != tc.lo || hi != tc.hi {
			t.Errorf("Median(%v) = %v, %v, %v; want %v, %v, %v", tc.v, med, lo, hi, tc.med, tc.lo, tc.hi)
		}
		if q := Quantile(tc.v, 0.5); math.Abs(q-med) > 1e-12 {
			t.Errorf("Median(%v) = %v but Quantile(0.5) = %v", tc.v, med, q)
		}
	}
}

func TestResultFigures(t *testing.T) {
	r := Result{Rate: 1000, WireBps: 990, WireBytes: 2e9, Elapsed: 2 * time.Second, CPU: time.Second,
		RTTs: []time.Duration{3, 1, 2}, PingsSent: 5}
	if r.Ratio() != 0.99 || r.CPUPerGB() != 0.5 || r.CPUPercent() != 50 || r.PingsLost() != 2 || r.RTT(0.5) != 2 || r.RTT(1) != 3 {
		t.Errorf("figures of %+v: ratio %v, CPU %v s/GB, %v%%, %d pings lost, RTT p50 %v max %v", r, r.Ratio(), r.CPUPerGB(), r.CPUPercent(), r.PingsLost(), r.RTT(0.5), r.RTT(1))
	}
	if (Result{}).CPUPerGB() != 0 || (Result{}).Ratio() != 0 || (Result{}).RTT(0.5) != 0 {
		t.Error("an empty Result's figures are not 0")
	}
}
