package fq

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Config is fq's knobs, with tc-fq's names. The zero Config is Linux's
// defaults.
type Config struct {
	// Limit is the most packets queued in all (tc "limit"; default 10000).
	Limit uint32
	// FlowLimit is the most packets one flow may queue (tc "flow_limit";
	// default 1000): a flow past it has its packets dropped, the others'
	// are taken. Linux's default is 100, of skbs that carry up to 64 KiB
	// each on a TSO device; a link without host GSO hands fq packets of
	// one MTU, and a TCP whose small queues allow a millisecond of what
	// it estimates its rate to be (more than the link's where its RTT is
	// short, as between netstacks on one host) overran 100 of them in
	// slow start. A sparse flow's turn does not depend on it.
	FlowLimit uint32
	// Quantum is the bytes a flow may send per round (tc "quantum";
	// default twice the link's MTU plus header).
	Quantum uint32
	// InitialQuantum is the bytes a new flow, or one idle for longer than
	// RefillDelay, may send in its first round (tc "initial_quantum";
	// default ten times the link's MTU plus header).
	InitialQuantum uint32
	// RefillDelay is how long a flow must have been idle for its credit to
	// be refilled to a quantum when it comes back (tc "refill_delay";
	// default 40 ms).
	RefillDelay time.Duration
}

// Linux's defaults (sch_fq.c's fq_init) and bounds.
const (
	DefaultLimit       = 10000
	DefaultFlowLimit   = 1000
	DefaultRefillDelay = 40 * time.Millisecond
	// MaxQuantum is the largest quantum fq_change accepts (1 << 20).
	MaxQuantum = 1 << 20
)

// withDefaults fills in Linux's defaults for a link whose MTU plus header
// is mtu, and checks cfg as fq_change does.
func (c Config) withDefaults(mtu uint32) (Config, error) {
	mtu = max(mtu, 1)
	if c.Limit == 0 {
		c.Limit = DefaultLimit
	}
	if c.FlowLimit == 0 {
		c.FlowLimit = DefaultFlowLimit
	}
	if c.Quantum == 0 {
		c.Quantum = 2 * mtu
	}
	if c.InitialQuantum == 0 {
		c.InitialQuantum = 10 * mtu
	}
	if c.RefillDelay == 0 {
		c.RefillDelay = DefaultRefillDelay
	}
	if c.Quantum > MaxQuantum {
		return c, fmt.Errorf("fq quantum %d: at most %d bytes", c.Quantum, MaxQuantum)
	}
	if c.InitialQuantum > MaxQuantum {
		return c, fmt.Errorf("fq initial_quantum %d: at most %d bytes", c.InitialQuantum, MaxQuantum)
	}
	if c.RefillDelay < 0 {
		return c, fmt.Errorf("fq refill_delay %v: give a duration of 0 or more", c.RefillDelay)
	}
	return c, nil
}

// String writes the configuration in tc-fq's words, as `tc qdisc show`
// prints them (fq_print_opt's order), without pacing's, which netqdisc's
// fq does not do.
func (c Config) String() string {
	return fmt.Sprintf("limit %dp flow_limit %dp quantum %db initial_quantum %db refill_delay %s nopacing",
		c.Limit, c.FlowLimit, c.Quantum, c.InitialQuantum, rate.FormatTCTime(float64(c.RefillDelay.Microseconds())))
}

// show is `tc qdisc show`'s line: the kind, then String.
func (c Config) show() string { return "fq " + c.String() }

// Words writes the words set (Parse reads them back to c): "" for
// Linux's defaults.
func (c Config) Words() string {
	var w []string
	add := func(word string, v uint32, unit string) {
		if v != 0 {
			w = append(w, fmt.Sprintf("%s %d%s", word, v, unit))
		}
	}
	add("limit", c.Limit, "")
	add("flow_limit", c.FlowLimit, "")
	add("quantum", c.Quantum, "")
	add("initial_quantum", c.InitialQuantum, "")
	if c.RefillDelay != 0 {
		w = append(w, "refill_delay "+rate.FormatTCTime(float64(c.RefillDelay.Microseconds())))
	}
	return strings.Join(w, " ")
}

// Tighten returns pod, fq's words a container author asks for, if they
// hold no more of the host than operator's: a packet limit and a flow
// limit no larger (Linux's defaults where unset). Quantum and refill
// delay order only the pod's own packets.
func (operator Config) Tighten(pod Config) (Config, error) {
	for _, w := range []struct {
		word        string
		pod, op, df uint32
	}{
		{"limit", pod.Limit, operator.Limit, DefaultLimit},
		{"flow_limit", pod.FlowLimit, operator.FlowLimit, DefaultFlowLimit},
	} {
		p, op := w.pod, w.op
		if p == 0 {
			p = w.df
		}
		if op == 0 {
			op = w.df
		}
		if p > op {
			return Config{}, fmt.Errorf("fq %s %d is above the operator's %d; give %d or less", w.word, p, op, op)
		}
	}
	return pod, nil
}

// Parse reads tc-fq's words (tc/q_fq.c's fq_parse_opt) into a Config.
// Pacing's words (maxrate, pacing, low_rate_threshold, timer_slack,
// horizon...) are refused: netqdisc's fq schedules flows under a parent
// that shapes, and does not pace them itself.
func Parse(words string) (Config, error) {
	var c Config
	f := strings.Fields(words)
	for i := 0; i < len(f); i++ {
		w := f[i]
		value := func() (string, error) {
			if i+1 >= len(f) {
				return "", fmt.Errorf("fq %q needs a value", w)
			}
			i++
			return f[i], nil
		}
		switch w {
		case "limit", "flow_limit":
			v, err := value()
			if err != nil {
				return c, err
			}
			n, err := strconv.ParseUint(strings.TrimSuffix(v, "p"), 10, 32)
			if err != nil || n == 0 {
				return c, fmt.Errorf("fq %s %q: give a count of packets above 0", w, v)
			}
			if w == "limit" {
				c.Limit = uint32(n)
			} else {
				c.FlowLimit = uint32(n)
			}
		case "quantum", "initial_quantum":
			v, err := value()
			if err != nil {
				return c, err
			}
			n, err := rate.ParseSize(v)
			if err != nil || n == 0 || n > MaxQuantum {
				return c, fmt.Errorf("fq %s %q: give a size from 1 byte to %d", w, v, MaxQuantum)
			}
			if w == "quantum" {
				c.Quantum = uint32(n)
			} else {
				c.InitialQuantum = uint32(n)
			}
		case "refill_delay":
			v, err := value()
			if err != nil {
				return c, err
			}
			d, err := rate.ParseTCTime(v)
			if err != nil || d <= 0 {
				return c, fmt.Errorf("fq refill_delay %q: give a time above 0, as 40ms", v)
			}
			c.RefillDelay = d
		case "nopacing":
		default:
			return c, fmt.Errorf("fq %q: netqdisc's fq takes limit, flow_limit, quantum, initial_quantum, refill_delay and nopacing; it does not pace (its parent shapes), so pacing's words are not taken", w)
		}
	}
	return c, nil
}
