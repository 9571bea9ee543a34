package netem

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// TableOpener opens the distribution table a word names: tc reads
// NAME.dist from its library directory ($TC_LIB_DIR, or /usr/lib/tc).
type TableOpener func(name string) (io.ReadCloser, error)

// LibTable opens NAME.dist as tc does, from $TC_LIB_DIR or /usr/lib/tc;
// a name with a slash in it is a path of its own.
func LibTable(name string) (io.ReadCloser, error) {
	if strings.ContainsRune(name, '/') {
		return os.Open(name)
	}
	dir := os.Getenv("TC_LIB_DIR")
	if dir == "" {
		dir = "/usr/lib/tc"
	}
	return os.Open(filepath.Join(dir, name+".dist"))
}

// Parse reads tc-netem's words (iproute2's netem_parse_opt) into a
// Config, opening tables with LibTable.
func Parse(words string) (Config, error) { return ParseWith(words, LibTable) }

// ParseWith is Parse with distribution tables opened by open. uniform,
// normal, pareto and paretonormal are the tables generated here (tc
// reads the last three from files iproute2 ships, made by the same
// formulas; uniform is no table at all); any other name is read by open.
// A word is matched as tc matches it: any prefix of it, the first in
// tc's order that fits.
func ParseWith(words string, open TableOpener) (Config, error) {
	p := parser{args: strings.Fields(words), open: open}
	c := Config{Limit: DefaultLimit}
	if err := p.parse(&c); err != nil {
		return Config{}, fmt.Errorf("netem: %w", err)
	}
	return c, nil
}

// parser walks the words.
type parser struct {
	args []string
	i    int
	open TableOpener
}

// next returns the word after the current one, for w, or an error.
func (p *parser) next(w string) (string, error) {
	if p.i+1 >= len(p.args) {
		return "", fmt.Errorf("%q needs a value", w)
	}
	p.i++
	return p.args[p.i], nil
}

// nextIsNumber is tc's NEXT_IS_NUMBER: the next word starts with a digit
// (signed: or a minus).
func (p *parser) nextIsNumber(signed bool) bool {
	if p.i+1 >= len(p.args) {
		return false
	}
	r := rune(p.args[p.i+1][0])
	return unicode.IsDigit(r) || (signed && r == '-')
}

// matches is tc's matches(): w is a non-empty prefix of word.
func matches(w, word string) bool { return w != "" && strings.HasPrefix(word, w) }

func (p *parser) parse(c *Config) error {
	var present struct{ loss, corr, rate bool }
	corr := &Correlations{}
	rc := &RateConfig{}
	for ; p.i < len(p.args); p.i++ {
		w := p.args[p.i]
		var err error
		switch {
		case matches(w, "limit"):
			err = p.limit(c)
		case matches(w, "latency") || matches(w, "delay"):
			err = p.delay(c, corr, &present.corr)
		case matches(w, "loss") || matches(w, "drop"):
			if present.loss {
				return fmt.Errorf("%q: loss is given twice; give one loss model", w)
			}
			present.loss = true
			err = p.loss(c, corr, &present.corr)
		case matches(w, "seed"):
			var v string
			if v, err = p.next(w); err == nil {
				var n uint64
				if n, err = strconv.ParseUint(v, 10, 64); err != nil {
					err = fmt.Errorf("seed %q: give a whole number from 0 to %d", v, uint64(math.MaxUint64))
				}
				c.Seed = &n
			}
		case matches(w, "ecn"):
			c.ECN = true
		case matches(w, "reorder"):
			c.Reorder, err = p.chance(w, &present.corr)
		case matches(w, "corrupt"):
			c.Corrupt, err = p.chance(w, &present.corr)
		case matches(w, "gap"):
			var v string
			if v, err = p.next(w); err == nil {
				var n uint64
				if n, err = strconv.ParseUint(v, 0, 32); err != nil {
					err = fmt.Errorf("gap %q: give a count of packets", v)
				}
				c.Gap = uint32(n)
			}
		case matches(w, "duplicate"):
			// tc reads a duplicate's correlation but sends the
			// correlations only if another was given; here it counts.
			if c.Duplicate, err = p.percent(w); err == nil && p.nextIsNumber(false) {
				present.corr = true
				corr.Duplicate, err = p.percent(w + "'s correlation")
			}
		case matches(w, "distribution"):
			var v string
			if v, err = p.next(w); err == nil {
				c.DistName = v
				c.Dist, err = p.table(v)
			}
		case matches(w, "rate"):
			present.rate = true
			err = p.rate(rc)
		case matches(w, "slot"):
			c.Slot, err = p.slot(w)
		default:
			return fmt.Errorf("%q is not a word of tc-netem's (limit, delay, distribution, loss, corrupt, duplicate, reorder, gap, rate, slot, seed, ecn)", w)
		}
		if err != nil {
			return err
		}
	}
	if present.corr {
		c.Corr = corr
	}
	if present.rate {
		c.Rate = rc
	}
	return check(c)
}

// check is netem_parse_opt's checks after the words.
func check(c *Config) error {
	switch {
	case c.Reorder != nil && c.Reorder.Probability != 0:
		if c.Latency == 0 {
			return fmt.Errorf("reorder needs a delay: packets are reordered by sending some of them ahead of the delayed ones; give delay TIME")
		}
		if c.Gap == 0 {
			c.Gap = 1
		}
	case c.Gap > 0:
		return fmt.Errorf("gap %d without reorder: give reorder PERCENT", c.Gap)
	}
	if c.ECN && c.Loss == 0 && c.LossModel == nil {
		return fmt.Errorf("ecn without a loss model: ecn marks the packets loss would drop; give loss PERCENT")
	}
	if c.DistName != "" && (c.Latency == 0 || c.Jitter == 0) {
		return fmt.Errorf("distribution %s without a delay and a jitter: give delay TIME JITTER", c.DistName)
	}
	return nil
}

func (p *parser) limit(c *Config) error {
	v, err := p.next("limit")
	if err != nil {
		return err
	}
	n, err := rate.ParseSize(v)
	if err != nil || n > math.MaxUint32 {
		return fmt.Errorf("limit %q: give a count of packets", v)
	}
	c.Limit = uint32(n)
	return nil
}

// delay reads "delay TIME [JITTER [CORRELATION]]".
func (p *parser) delay(c *Config, corr *Correlations, present *bool) error {
	v, err := p.next("delay")
	if err != nil {
		return err
	}
	if c.Latency, err = parseTime64("delay", v); err != nil {
		return err
	}
	if !p.nextIsNumber(false) {
		return nil
	}
	v, _ = p.next("delay")
	if c.Jitter, err = parseTime64("jitter", v); err != nil {
		return err
	}
	if !p.nextIsNumber(false) {
		return nil
	}
	*present = true
	corr.Delay, err = p.percent("delay's correlation")
	return err
}

// loss reads "loss [random] PERCENT [CORRELATION]", "loss state ..." or
// "loss gemodel ...".
func (p *parser) loss(c *Config, corr *Correlations, present *bool) error {
	v, err := p.next("loss")
	if err != nil {
		return err
	}
	switch {
	case v != "" && unicode.IsDigit(rune(v[0])):
		p.i-- // the old syntax: loss PERCENT
		fallthrough
	case v == "random":
		if c.Loss, err = p.percent("loss random"); err != nil {
			return err
		}
		if p.nextIsNumber(false) {
			*present = true
			corr.Loss, err = p.percent("loss's correlation")
		}
		return err
	case v == "state":
		v, err := p.next("loss state")
		if err != nil {
			return err
		}
		p13, err := ParsePercent(v)
		if err != nil {
			return fmt.Errorf("loss state p13: %w", err)
		}
		m := &LossModel{P13: p13, P31: percentOf(1 - p13.Fraction()), P32: 0, P23: math.MaxUint32, P14: 0}
		c.LossModel = m
		for _, f := range []*Percent{&m.P31, &m.P32, &m.P23, &m.P14} {
			if !p.nextIsNumber(false) {
				break
			}
			if *f, err = p.percent("loss state"); err != nil {
				return err
			}
		}
		return nil
	case v == "gemodel":
		v, err := p.next("loss gemodel")
		if err != nil {
			return err
		}
		pp, err := ParsePercent(v)
		if err != nil {
			return fmt.Errorf("loss gemodel p: %w", err)
		}
		m := &LossModel{GE: true, P: pp, R: percentOf(1 - pp.Fraction())}
		c.LossModel = m
		for k, f := range []*Percent{&m.R, &m.H, &m.K1} {
			if !p.nextIsNumber(false) {
				break
			}
			if *f, err = p.percent("loss gemodel"); err != nil {
				return err
			}
			if k == 1 { // tc's word is 1-h; the kernel takes h
				*f = math.MaxUint32 - *f
			}
		}
		return nil
	case v == "average":
		// netqdisc's words: the Gilbert-Elliott chain of an average loss
		// in bursts of a mean length (GilbertFromBurst).
		avg, err := p.percent("loss average")
		if err != nil {
			return err
		}
		if p.i+2 >= len(p.args) || p.args[p.i+1] != "burst" {
			return fmt.Errorf("loss average %s: give loss average PERCENT burst PACKETS (the mean burst length)", avg)
		}
		p.i++
		bv, _ := p.next("loss average's burst")
		burst, err := strconv.ParseFloat(bv, 64)
		if err != nil {
			return fmt.Errorf("loss average's burst %q: give a mean number of packets, 1 or more", bv)
		}
		g, err := GilbertFromBurst(avg.Fraction(), burst)
		if err != nil {
			return fmt.Errorf("loss average %s burst %s: %w", avg, bv, err)
		}
		c.LossModel = g.model()
		return nil
	default:
		return fmt.Errorf("loss %q: give loss [random] PERCENT, loss state P13 ..., loss gemodel P ..., or loss average PERCENT burst PACKETS", v)
	}
}

// percent reads the next word as a percentage, for w.
func (p *parser) percent(w string) (Percent, error) {
	v, err := p.next(w)
	if err != nil {
		return 0, err
	}
	pc, err := ParsePercent(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w, err)
	}
	return pc, nil
}

// chance reads "WORD PERCENT [CORRELATION]".
func (p *parser) chance(w string, present *bool) (*Chance, error) {
	pr, err := p.percent(w)
	if err != nil {
		return nil, err
	}
	ch := &Chance{Probability: pr}
	if p.nextIsNumber(false) {
		*present = true
		ch.Correlation, err = p.percent(w + "'s correlation")
	}
	return ch, err
}

// rate reads "rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]".
func (p *parser) rate(rc *RateConfig) error {
	v, err := p.next("rate")
	if err != nil {
		return err
	}
	if rc.Rate, err = rate.ParseTCRate(v); err != nil {
		return fmt.Errorf("rate %q: %w", v, err)
	}
	*rc = RateConfig{Rate: rc.Rate}
	int32Word := func(what string) (int32, error) {
		v, _ := p.next("rate")
		n, err := strconv.ParseInt(v, 0, 32)
		if err != nil {
			return 0, fmt.Errorf("rate's %s %q: give a whole number of bytes", what, v)
		}
		return int32(n), nil
	}
	if p.nextIsNumber(true) {
		if rc.PacketOverhead, err = int32Word("packet overhead"); err != nil {
			return err
		}
	}
	if p.nextIsNumber(false) {
		v, _ := p.next("rate")
		n, err := strconv.ParseUint(v, 0, 32)
		if err != nil {
			return fmt.Errorf("rate's cell size %q: give a whole number of bytes", v)
		}
		rc.CellSize = uint32(n)
	}
	if p.nextIsNumber(true) {
		if rc.CellOverhead, err = int32Word("cell overhead"); err != nil {
			return err
		}
	}
	return nil
}

// slot reads "slot MIN [MAX] [packets N] [bytes N]" or "slot distribution
// NAME DELAY JITTER [packets N] [bytes N]".
func (p *parser) slot(w string) (*Slot, error) {
	s := &Slot{}
	if p.nextIsNumber(false) {
		v, _ := p.next(w)
		var err error
		if s.MinDelay, err = parseTime64("slot's least delay", v); err != nil {
			return nil, err
		}
		s.MaxDelay = s.MinDelay
		if p.nextIsNumber(false) {
			v, _ = p.next(w)
			if s.MaxDelay, err = parseTime64("slot's most delay", v); err != nil {
				return nil, err
			}
			if s.MaxDelay < s.MinDelay {
				return nil, fmt.Errorf("slot %v %v: the most delay is below the least; give the least first", s.MinDelay, s.MaxDelay)
			}
		}
	} else {
		v, err := p.next(w)
		if err != nil {
			return nil, err
		}
		if v != "distribution" {
			return nil, fmt.Errorf("slot %q: give slot MIN_DELAY [MAX_DELAY] or slot distribution NAME DELAY JITTER", v)
		}
		if s.DistName, err = p.next("slot distribution"); err != nil {
			return nil, err
		}
		if s.Dist, err = p.table(s.DistName); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			what string
			d    *time.Duration
		}{{"slot's delay", &s.DistDelay}, {"slot's jitter", &s.DistJitter}} {
			v, err := p.next("slot distribution")
			if err != nil {
				return nil, err
			}
			if *f.d, err = parseTime64(f.what, v); err != nil {
				return nil, err
			}
		}
		if s.DistJitter <= 0 {
			return nil, fmt.Errorf("slot distribution %s: a jitter of 0; give a jitter above 0", s.DistName)
		}
	}
	if p.i+1 < len(p.args) && matches(p.args[p.i+1], "packets") {
		p.i++
		v, err := p.next("slot packets")
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(v, 0, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("slot packets %q: give a count of packets", v)
		}
		s.MaxPackets = int32(n)
	}
	if p.i+1 < len(p.args) && matches(p.args[p.i+1], "bytes") {
		p.i++
		v, err := p.next("slot bytes")
		if err != nil {
			return nil, err
		}
		n, err := rate.ParseSize(v)
		if err != nil || n > math.MaxInt32 {
			return nil, fmt.Errorf("slot bytes %q: give a size up to %d bytes", v, math.MaxInt32)
		}
		s.MaxBytes = int32(n)
	}
	return s, nil
}

// table returns the distribution table named name.
func (p *parser) table(name string) (Table, error) {
	switch name {
	case "uniform":
		return nil, nil
	case "normal":
		return Normal(), nil
	case "pareto":
		return Pareto(), nil
	case "paretonormal":
		return ParetoNormal(), nil
	}
	if p.open == nil {
		return nil, fmt.Errorf("distribution %q: no table of that name (uniform, normal, pareto, paretonormal)", name)
	}
	f, err := p.open(name)
	if err != nil {
		return nil, fmt.Errorf("distribution %q: %v (give uniform, normal, pareto, paretonormal, or a table file in iproute2's format)", name, err)
	}
	defer f.Close()
	t, err := ParseTable(f)
	if err != nil {
		return nil, fmt.Errorf("distribution %q: %w", name, err)
	}
	return t, nil
}

// parseTime64 reads a time as iproute2's get_time64 does: a number and
// a unit (s, sec, secs, ms, msec, msecs, us, usec, usecs, ns, nsec,
// nsecs, any case), or nanoseconds with none.
func parseTime64(what, v string) (time.Duration, error) {
	num := strings.TrimRightFunc(v, unicode.IsLetter)
	unit := strings.ToLower(v[len(num):])
	f, err := strconv.ParseFloat(num, 64)
	scale := map[string]float64{"": 1, "s": 1e9, "sec": 1e9, "secs": 1e9, "ms": 1e6, "msec": 1e6, "msecs": 1e6, "us": 1e3, "usec": 1e3, "usecs": 1e3, "ns": 1, "nsec": 1, "nsecs": 1}[unit]
	if err != nil || scale == 0 || f < 0 || math.IsNaN(f) || f*scale >= math.MaxInt64 {
		return 0, fmt.Errorf("%s %q: give a time such as 100ms, 1.5s or 250us (a bare number is nanoseconds)", what, v)
	}
	return time.Duration(f * scale), nil
}
