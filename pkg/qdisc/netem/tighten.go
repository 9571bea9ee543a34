package netem

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Tighten returns what netem runs when a container author asks for pod's
// words over operator's: only what makes the pod's own network worse,
// taking nothing from the host or its neighbours. What the pod leaves
// out is the operator's. Where it gives them: a delay no shorter (its
// least, the delay less what the jitter's distribution can take off, no
// less than the operator's least), a random loss no lower, a corruption
// no rarer (its correlation the operator's), a rate no higher (any, where
// the operator sets none; overheads no smaller, cells the operator's) and
// a limit no larger. What would send more onto the
// host's network or spare packets the operator's delay or loss
// (duplicate, reorder and its gap, slots, ecn, a loss model, a loss's
// correlation) must be the operator's. The seed is the pod's own.
func (operator Config) Tighten(pod Config) (Config, error) {
	m := pod
	if m.Limit == DefaultLimit && operator.Limit < DefaultLimit {
		m.Limit = operator.Limit // not asked for: tc's default
	}
	if m.Limit > operator.Limit {
		return Config{}, fmt.Errorf("netem limit %d is above the operator's %d; give %d or less", m.Limit, operator.Limit, operator.Limit)
	}
	if m.Latency == 0 && m.Jitter == 0 {
		m.Latency, m.Jitter, m.Dist, m.DistName = operator.Latency, operator.Jitter, operator.Dist, operator.DistName
		m.Corr = withDelayCorr(m.Corr, corrOf(operator).Delay)
	} else if leastDelay(m) < leastDelay(operator) {
		return Config{}, fmt.Errorf("netem delay %v with jitter %v can send a packet after %v, sooner than the operator's least %v; give a delay of at least the operator's %v, and no more jitter than that spares", m.Latency, m.Jitter, time.Duration(leastDelay(m)), time.Duration(leastDelay(operator)), operator.Latency)
	}
	if err := tightenLoss(&m, operator); err != nil {
		return Config{}, err
	}
	if err := tightenRate(&m, operator); err != nil {
		return Config{}, err
	}
	if err := tightenCorrupt(&m, operator); err != nil {
		return Config{}, err
	}
	for _, f := range []struct {
		what      string
		pod, op   any
		inherit   func()
		operators string
	}{
		{"duplicate", [2]Percent{m.Duplicate, corrOf(m).Duplicate}, [2]Percent{operator.Duplicate, corrOf(operator).Duplicate},
			func() { m.Duplicate, m.Corr = operator.Duplicate, withDupCorr(m.Corr, corrOf(operator).Duplicate) }, operator.Duplicate.String()},
		{"reorder and gap", [2]any{chanceOf(m.Reorder), m.Gap}, [2]any{chanceOf(operator.Reorder), operator.Gap},
			func() { m.Reorder, m.Gap = operator.Reorder, operator.Gap }, chanceOf(operator.Reorder).Probability.String()},
		{"slot", m.Slot, operator.Slot, func() { m.Slot = operator.Slot }, ""},
		{"ecn", m.ECN, operator.ECN, func() { m.ECN = operator.ECN }, fmt.Sprint(operator.ECN)},
	} {
		if reflect.DeepEqual(f.pod, f.op) {
			continue
		}
		if reflect.ValueOf(f.pod).IsZero() || isZeroPair(f.pod) {
			f.inherit()
			continue
		}
		return Config{}, fmt.Errorf("netem's %s is the operator's to set (it would send more onto the host's network, or spare packets the operator's delay or loss); leave it out or give the operator's%s", f.what, operatorsValue(f.operators))
	}
	return m, nil
}

// tightenLoss holds m's loss to operator's: left out, the operator's; a
// random loss no lower than the operator's random loss; a loss model,
// or a loss's correlation, only the operator's.
func tightenLoss(m *Config, operator Config) error {
	if m.Loss == 0 && m.LossModel == nil && corrOf(*m).Loss == 0 {
		m.Loss, m.LossModel = operator.Loss, operator.LossModel
		m.Corr = withLossCorr(m.Corr, corrOf(operator).Loss)
		return nil
	}
	if !reflect.DeepEqual(m.LossModel, operator.LossModel) || corrOf(*m).Loss != corrOf(operator).Loss {
		return fmt.Errorf("netem's loss model and a loss's correlation are the operator's to set (they decide which packets are spared); leave loss out, or give loss PERCENT of at least the operator's %s", operator.Loss)
	}
	if m.Loss < operator.Loss {
		return fmt.Errorf("netem loss %s is below the operator's %s; give %s or more", m.Loss, operator.Loss, operator.Loss)
	}
	return nil
}

// tightenCorrupt holds m's corruption to operator's: left out, the
// operator's; given, no rarer, and its correlation the operator's (it
// decides which packets are spared).
func tightenCorrupt(m *Config, operator Config) error {
	pod, op := chanceOf(m.Corrupt), chanceOf(operator.Corrupt)
	switch {
	case pod == Chance{}:
		m.Corrupt = operator.Corrupt
	case pod.Correlation != op.Correlation:
		return fmt.Errorf("netem corrupt's correlation is the operator's to set (it decides which packets are spared); give corrupt PERCENT %s, or no correlation where the operator gives none", op.Correlation)
	case pod.Probability < op.Probability:
		return fmt.Errorf("netem corrupt %s is below the operator's %s; give %s or more", pod.Probability, op.Probability, op.Probability)
	}
	return nil
}

// tightenRate holds m's rate to operator's: left out, the operator's;
// given, no higher, its overheads no smaller and its cells the
// operator's.
func tightenRate(m *Config, operator Config) error {
	op := operator.Rate
	if op == nil || op.Rate == 0 {
		return nil
	}
	if m.Rate == nil || m.Rate.Rate == 0 {
		m.Rate = op
		return nil
	}
	r := m.Rate
	if r.Rate > op.Rate || r.PacketOverhead < op.PacketOverhead || r.CellSize != op.CellSize || r.CellOverhead < op.CellOverhead {
		return fmt.Errorf("netem's rate must be at most the operator's (%s), its overheads no smaller and its cells the operator's", rateWords(op))
	}
	return nil
}

// isZeroPair reports whether v is a pair whose first half is zero: a
// duplicate or reorder left out whatever its correlation.
func isZeroPair(v any) bool {
	switch p := v.(type) {
	case [2]Percent:
		return p[0] == 0 && p[1] == 0
	case [2]any:
		return reflect.ValueOf(p[0]).IsZero() && reflect.ValueOf(p[1]).IsZero()
	}
	return false
}

// operatorsValue is ": V" for a value to show.
func operatorsValue(v string) string {
	if v == "" {
		return ""
	}
	return ": " + v
}

// leastDelay is the least delay c's jitter and distribution can give, ns.
func leastDelay(c Config) int64 {
	least := -1.0 // uniform: down to delay - jitter
	if c.Dist != nil {
		least = float64(slices.Min(c.Dist)) / DistScale
	}
	return int64(math.Floor(float64(c.Latency) + least*float64(min(c.Jitter, math.MaxInt32))))
}

func corrOf(c Config) Correlations {
	if c.Corr == nil {
		return Correlations{}
	}
	return *c.Corr
}

// withDelayCorr, withLossCorr and withDupCorr return c with one
// correlation set (nil stays nil for 0).
func withDelayCorr(c *Correlations, v Percent) *Correlations {
	return withCorr(c, v, func(k *Correlations) { k.Delay = v })
}

func withLossCorr(c *Correlations, v Percent) *Correlations {
	return withCorr(c, v, func(k *Correlations) { k.Loss = v })
}

func withDupCorr(c *Correlations, v Percent) *Correlations {
	return withCorr(c, v, func(k *Correlations) { k.Duplicate = v })
}

func withCorr(c *Correlations, v Percent, set func(*Correlations)) *Correlations {
	if c == nil && v == 0 {
		return nil
	}
	k := Correlations{}
	if c != nil {
		k = *c
	}
	set(&k)
	return &k
}

func chanceOf(c *Chance) Chance {
	if c == nil {
		return Chance{}
	}
	return *c
}

// rateWords writes r as tc shows it.
func rateWords(r *RateConfig) string {
	s := "rate " + rate.FormatRate(r.Rate)
	if r.PacketOverhead != 0 || r.CellSize != 0 || r.CellOverhead != 0 {
		s += fmt.Sprintf(" %d %d %d", r.PacketOverhead, r.CellSize, r.CellOverhead)
	}
	return s
}
