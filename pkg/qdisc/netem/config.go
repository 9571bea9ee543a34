package netem

import (
	"fmt"
	"math"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Config is what tc-netem's words ask for, as tc's netem_parse_opt puts
// them in its message to the kernel: the fields tc always sends, and
// the optional parts (a nil pointer: not sent, so that a change leaves
// what is in force, as netem_change does).
type Config struct {
	// Limit is the most packets held (tc "limit"; 1000 where not given).
	Limit uint32
	// Latency and Jitter are "delay TIME [JITTER]": each packet waits
	// Latency, plus or minus Jitter drawn from Dist.
	Latency, Jitter time.Duration
	// Dist is the jitter's distribution ("distribution NAME"; nil:
	// uniform), DistName its name as given.
	Dist     Table
	DistName string
	// Loss is "loss [random] PERCENT"; Duplicate "duplicate PERCENT".
	Loss, Duplicate Percent
	// Gap is "gap DISTANCE": with Reorder, every Gap-th packet may be
	// sent at once, ahead of the delayed ones (1 where Reorder is given
	// without it).
	Gap uint32
	// Corr holds the correlations given after "delay", "loss" and
	// "duplicate" (tc sends them together, if any is given).
	Corr *Correlations
	// Reorder is "reorder PERCENT [CORRELATION]".
	Reorder *Chance
	// Corrupt is "corrupt PERCENT [CORRELATION]".
	Corrupt *Chance
	// LossModel is "loss state ..." or "loss gemodel ...".
	LossModel *LossModel
	// ECN marks, in place of dropping, the packets a loss model picks
	// that are ECN-capable ("ecn").
	ECN bool
	// Rate is "rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]".
	Rate *RateConfig
	// Slot is "slot ...": packets leave in bursts at intervals.
	Slot *Slot
	// Seed is "seed SEED": the generator's seed (random where never
	// given).
	Seed *uint64
}

// Correlations are the correlations of the delay's jitter, the random
// loss and duplication (Linux's tc_netem_corr).
type Correlations struct {
	Delay, Loss, Duplicate Percent
}

// Chance is a probability and its correlation (reorder, corrupt).
type Chance struct {
	Probability, Correlation Percent
}

// LossModel is one of the two Markov loss models.
type LossModel struct {
	// GE selects the Gilbert-Elliott model; otherwise the 4-state one.
	GE bool
	// The 4-state model's transition probabilities ("loss state p13
	// [p31 [p32 [p23 [p14]]]]").
	P13, P31, P32, P23, P14 Percent
	// The Gilbert-Elliott model's ("loss gemodel p [r [1-h [1-k]]]"): H
	// is the kernel's h, tc's word is 1-h.
	P, R, H, K1 Percent
}

// RateConfig is netem's own rate: each packet's time on the link, its
// length plus PacketOverhead, rounded up to whole cells of CellSize each
// carrying CellOverhead more, at Rate bytes a second.
type RateConfig struct {
	Rate           uint64
	PacketOverhead int32
	CellSize       uint32
	CellOverhead   int32
}

// Slot releases packets in slots: the next slot opens a random time
// between MinDelay and MaxDelay after the last (or DistDelay plus or
// minus DistJitter drawn from Dist), and carries up to MaxPackets and
// MaxBytes (0: no bound).
type Slot struct {
	MinDelay, MaxDelay    time.Duration
	DistDelay, DistJitter time.Duration
	Dist                  Table
	DistName              string
	MaxPackets, MaxBytes  int32
}

// DefaultLimit is tc's limit where none is given.
const DefaultLimit = 1000

// show writes the configuration as `tc qdisc show` prints a netem whose
// seed is seed (q_netem.c's netem_print_opt, text form).
func (c Config) show(seed uint64) string {
	s := fmt.Sprintf("limit %d", c.Limit)
	corr := c.Corr
	if corr == nil {
		corr = &Correlations{}
	}
	if c.Latency != 0 {
		s += " delay " + formatTime64(c.Latency)
		if c.Jitter != 0 {
			s += "  " + formatTime64(c.Jitter)
			if corr.Delay != 0 {
				s += " " + corr.Delay.String()
			}
		}
	}
	if c.Loss != 0 {
		s += " loss " + c.Loss.String()
		if corr.Loss != 0 {
			s += " " + corr.Loss.String()
		}
	}
	if m := c.LossModel; m != nil && !m.GE {
		s += fmt.Sprintf(" loss state p13 %s p31 %s p32 %s p23 %s p14 %s", m.P13, m.P31, m.P32, m.P23, m.P14)
	}
	if m := c.LossModel; m != nil && m.GE {
		s += fmt.Sprintf(" loss gemodel p %s r %s 1-h %s 1-k %s", m.P, m.R, math.MaxUint32-m.H, m.K1)
	}
	if c.Duplicate != 0 {
		s += " duplicate " + c.Duplicate.String()
		if corr.Duplicate != 0 {
			s += " " + corr.Duplicate.String()
		}
	}
	for _, ch := range []struct {
		word string
		c    *Chance
	}{{"reorder", c.Reorder}, {"corrupt", c.Corrupt}} {
		if ch.c != nil && ch.c.Probability != 0 {
			s += " " + ch.word + " " + ch.c.Probability.String()
			if ch.c.Correlation != 0 {
				s += " " + ch.c.Correlation.String()
			}
		}
	}
	if r := c.Rate; r != nil && r.Rate != 0 {
		s += " rate " + rate.FormatRate(r.Rate)
		if r.PacketOverhead != 0 {
			s += fmt.Sprintf(" packetoverhead %d", r.PacketOverhead)
		}
		if r.CellSize != 0 {
			s += fmt.Sprintf(" cellsize %d", r.CellSize)
		}
		if r.CellOverhead != 0 {
			s += fmt.Sprintf(" celloverhead %d", r.CellOverhead)
		}
	}
	if sl := c.Slot; sl != nil {
		if sl.DistJitter > 0 {
			s += " slot distribution " + formatTime64(sl.DistDelay) + " " + formatTime64(sl.DistJitter)
		} else {
			s += " slot " + formatTime64(sl.MinDelay) + " " + formatTime64(sl.MaxDelay)
		}
		if sl.MaxPackets != 0 {
			s += fmt.Sprintf(" packets %d", sl.MaxPackets)
		}
		if sl.MaxBytes != 0 {
			s += fmt.Sprintf(" bytes %d", sl.MaxBytes)
		}
	}
	s += fmt.Sprintf(" seed %d", seed)
	if c.ECN {
		s += " ecn "
	}
	if c.Gap != 0 {
		s += fmt.Sprintf(" gap %d", c.Gap)
	}
	return s
}

// formatTime64 writes a time as iproute2's sprint_time64 does: three
// significant digits in s, ms or us, or whole ns.
func formatTime64(d time.Duration) string {
	ns := float64(d)
	switch {
	case d >= time.Second:
		return cFormatG(ns/1e9, 3) + "s"
	case d >= time.Millisecond:
		return cFormatG(ns/1e6, 3) + "ms"
	case d >= time.Microsecond:
		return cFormatG(ns/1e3, 3) + "us"
	default:
		return fmt.Sprintf("%dns", int64(d))
	}
}
