package netem

import (
	"fmt"
	"math"
	"strings"
)

// Words writes c in tc-netem's words, which Parse reads back to c (a
// table by its name, read again).
func (c Config) Words() string {
	var w []string
	add := func(f string, a ...any) { w = append(w, fmt.Sprintf(f, a...)) }
	if c.Limit != DefaultLimit {
		add("limit %d", c.Limit)
	}
	corr := c.Corr
	if corr == nil {
		corr = &Correlations{}
	}
	if c.Latency != 0 || c.Jitter != 0 {
		s := "delay " + timeWord(int64(c.Latency))
		if c.Jitter != 0 || corr.Delay != 0 {
			s += " " + timeWord(int64(c.Jitter))
			if corr.Delay != 0 {
				s += " " + corr.Delay.word()
			}
		}
		w = append(w, s)
	}
	if c.DistName != "" {
		add("distribution %s", c.DistName)
	}
	switch m := c.LossModel; {
	case m != nil && m.GE:
		add("loss gemodel %s %s %s %s", m.P.word(), m.R.word(), (math.MaxUint32 - m.H).word(), m.K1.word())
	case m != nil:
		add("loss state %s %s %s %s %s", m.P13.word(), m.P31.word(), m.P32.word(), m.P23.word(), m.P14.word())
	case c.Loss != 0 || corr.Loss != 0:
		s := "loss random " + c.Loss.word()
		if corr.Loss != 0 {
			s += " " + corr.Loss.word()
		}
		w = append(w, s)
	}
	if c.ECN {
		w = append(w, "ecn")
	}
	if c.Duplicate != 0 || corr.Duplicate != 0 {
		s := "duplicate " + c.Duplicate.word()
		if corr.Duplicate != 0 {
			s += " " + corr.Duplicate.word()
		}
		w = append(w, s)
	}
	for _, ch := range []struct {
		word string
		c    *Chance
	}{{"reorder", c.Reorder}, {"corrupt", c.Corrupt}} {
		// Written when given, 0% too: a change that says "corrupt 0%"
		// ends the corruption in force, as tc sends the attribute.
		if ch.c != nil {
			add("%s %s %s", ch.word, ch.c.Probability.word(), ch.c.Correlation.word())
		}
	}
	if c.Gap != 0 && !(c.Reorder != nil && c.Reorder.Probability != 0 && c.Gap == 1) {
		add("gap %d", c.Gap)
	}
	if r := c.Rate; r != nil {
		add("rate %dbps %d %d %d", r.Rate, r.PacketOverhead, r.CellSize, r.CellOverhead)
	}
	if s := c.Slot; s != nil {
		if s.DistJitter > 0 {
			add("slot distribution %s %s %s", s.DistName, timeWord(int64(s.DistDelay)), timeWord(int64(s.DistJitter)))
		} else {
			add("slot %s %s", timeWord(int64(s.MinDelay)), timeWord(int64(s.MaxDelay)))
		}
		if s.MaxPackets != 0 {
			add("packets %d", s.MaxPackets)
		}
		if s.MaxBytes != 0 {
			add("bytes %d", s.MaxBytes)
		}
	}
	if c.Seed != nil {
		add("seed %d", *c.Seed)
	}
	return strings.Join(w, " ")
}

// timeWord writes a time Parse reads back exactly: whole nanoseconds.
func timeWord(ns int64) string { return fmt.Sprintf("%dns", ns) }

// word writes p so that ParsePercent reads back exactly p: enough digits
// that the nearest step of 2^-32 is p.
func (p Percent) word() string {
	for prec := 6; prec <= 17; prec++ {
		s := cFormatG(100*p.Fraction(), prec)
		if q, err := ParsePercent(s); err == nil && q == p {
			return s + "%"
		}
	}
	return cFormatG(100*p.Fraction(), -1) + "%"
}
