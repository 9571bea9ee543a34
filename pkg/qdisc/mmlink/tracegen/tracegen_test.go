package tracegen

import (
	"math"
	"slices"
	"testing"
)

// TestMeanKbps: the process's stationary mean, as its integer thresholds
// give it, is the mean of its states' rates, as the models' docs say.
func TestMeanKbps(t *testing.T) {
	for _, tc := range []struct {
		m    Model
		kbps float64
	}{
		{LTE, 13583.33},
		{ThreeG, 1000},
	} {
		if got := tc.m.MeanKbps(); math.Abs(got-tc.kbps) > 0.01 {
			t.Errorf("%s: %.4f kbit/s, want %.2f", tc.m.Name, got, tc.kbps)
		}
	}
}

// TestLongRunMean: over an hour (a model of its own seed and length),
// the traces average their process's mean rate, within 5%: the chain
// visits its states as often as each other.
func TestLongRunMean(t *testing.T) {
	for _, m := range Models {
		m.DurationMS = 3_600_000
		times, err := m.Generate()
		if err != nil {
			t.Fatal(err)
		}
		kbps := float64(len(times)) * OpportunityBits / float64(m.DurationMS)
		if want := m.MeanKbps(); math.Abs(kbps-want) > 0.05*want {
			t.Errorf("%s over an hour: %.0f kbit/s, want %.0f within 5%%", m.Name, kbps, want)
		}
	}
}

// TestGenerate: a trace is non-decreasing, ends at its duration, and is
// the same for the same seed and another for another; a model that
// cannot be generated says what to change.
func TestGenerate(t *testing.T) {
	a, err := ThreeG.Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ThreeG.Generate()
	other := ThreeG
	other.Seed++
	c, _ := other.Generate()
	switch {
	case !slices.IsSorted(a):
		t.Error("times decrease")
	case a[len(a)-1] != ThreeG.DurationMS:
		t.Errorf("ends at %d ms, want %d", a[len(a)-1], ThreeG.DurationMS)
	case !slices.Equal(a, b):
		t.Error("one seed gave two traces")
	case slices.Equal(a, c):
		t.Error("two seeds gave one trace")
	}
	for _, bad := range []Model{
		{Name: "no TTI", DurationMS: 10, Trials: 1, StatesKbps: []uint32{1}, MoveMS: 10},
		{Name: "no states", DurationMS: 10, TTIMS: 1, Trials: 1, MoveMS: 10},
		{Name: "too fast", DurationMS: 10, TTIMS: 1, Trials: 1, StatesKbps: []uint32{24_000}, MoveMS: 10, Scheduled: 1 << 32},
		{Name: "moves too often", DurationMS: 10, TTIMS: 5, Trials: 1, StatesKbps: []uint32{1}, MoveMS: 1},
	} {
		if _, err := bad.Generate(); err == nil {
			t.Errorf("%s: generated", bad.Name)
		}
	}
}
