// Package tracegen makes cellular-like traces in mahimahi's format: the
// millisecond times of a link's delivery opportunities, each for one
// MTU-sized packet, drawn from a seeded Markov-modulated process.
//
// What it models: a cellular base station schedules its users once per
// transmission time interval (TTI: 1 ms in LTE, 2 to 20 ms in 3G's
// UMTS/HSPA and EVDO) and gives each a share that follows its channel's
// quality, which changes as the user moves (fading, cell edges,
// handovers). Here the channel is a birth-death Markov chain over a few
// capacity states, stepped once per TTI; in each TTI the user is
// scheduled with some probability and, when it is, is given a binomial
// number of MTU-sized opportunities whose mean is the state's rate. The
// chain's stationary distribution is uniform (the chain moves up and down
// with the same probability, one state at a time), so the process's mean
// rate is the mean of its states' rates.
//
// Why generated and not recorded: the traces mahimahi ships were recorded
// on U.S. networks in 2013 and 2016 and are theirs; these are the
// project's own, reproducible from a seed byte for byte, and say what they
// model. They are not measurements of any network.
//
// Everything is integer arithmetic (probabilities are thresholds out of
// 2^32, drawn from splitmix64), so that a seed gives the same trace on
// every architecture and Go release.
package tracegen

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"strconv"
)

// OpportunityBits is what one opportunity carries, for rates: one
// 1500-byte packet (mahimahi's README: a line per ms is 12 Mbit/s).
const OpportunityBits = 1500 * 8

// Model is a Markov-modulated process of delivery opportunities.
type Model struct {
	// Name names the model ("lte").
	Name string
	// Seed seeds the generator.
	Seed uint64
	// DurationMS is the trace's length in ms: its last opportunity is
	// at DurationMS, so that it repeats with that period.
	DurationMS uint32
	// TTIMS is the time between scheduling instants, in ms (at least 1).
	TTIMS uint32
	// Scheduled is the probability, out of 2^32, that the user is
	// scheduled in a TTI (1<<32 and above: always).
	Scheduled uint64
	// Trials is the most opportunities a scheduled TTI gives: the
	// binomial draw's trials.
	Trials uint32
	// StatesKbps are the capacity states' mean rates, in kbit/s of
	// 1500-byte packets, lowest first.
	StatesKbps []uint32
	// MoveMS is the mean time, in ms, before the chain moves up, and
	// equally before it moves down: it stays in an inner state
	// MoveMS/2 on average, in the lowest and highest MoveMS.
	MoveMS uint32
}

// LTE is an LTE-like downlink: 1 ms TTIs, always scheduled, 8 trials a
// TTI, six states from 1.5 to 32 Mbit/s (the process's mean: 13.58
// Mbit/s), moving every 500 ms on average; 60 s long. The 60 s its seed
// gives have 77112 opportunities, 15.42 Mbit/s: a minute of a process
// that changes every half second is above its mean (an hour is within
// 3% of it).
var LTE = Model{
	Name:       "lte",
	Seed:       0x6d6d6c696e6b4c54, // "mmlinkLT"
	DurationMS: 60_000,
	TTIMS:      1,
	Scheduled:  1 << 32,
	Trials:     8,
	StatesKbps: []uint32{1_500, 4_000, 8_000, 14_000, 22_000, 32_000},
	MoveMS:     1_000,
}

// ThreeG is a 3G-like (UMTS/EVDO) downlink, lower and burstier: 10 ms
// TTIs in half of which the user is scheduled, 16 trials a TTI, five
// states from an outage (0) to 2.4 Mbit/s (the process's mean: 1
// Mbit/s), moving every 750 ms on average; 120 s long. Its opportunities
// come in bursts of several at one millisecond, 10 ms or more apart, and
// it has outages of 1.5 s on average. The 120 s its seed gives have
// 11372 opportunities, 1.14 Mbit/s.
var ThreeG = Model{
	Name:       "3g",
	Seed:       0x6d6d6c696e6b3347, // "mmlink3G"
	DurationMS: 120_000,
	TTIMS:      10,
	Scheduled:  1 << 31,
	Trials:     16,
	StatesKbps: []uint32{0, 300, 800, 1_500, 2_400},
	MoveMS:     1_500,
}

// Models are the models the project's traces are generated from.
var Models = []Model{LTE, ThreeG}

// Check returns an error saying what to change if m cannot be generated.
func (m Model) Check() error {
	switch {
	case m.TTIMS == 0 || m.DurationMS < m.TTIMS:
		return fmt.Errorf("tracegen %s: a TTI of %d ms in %d ms; give a TTI of 1 ms or more, no longer than the trace", m.Name, m.TTIMS, m.DurationMS)
	case len(m.StatesKbps) == 0:
		return fmt.Errorf("tracegen %s: no states; give at least one rate", m.Name)
	case m.Trials == 0 || m.Trials > 1024:
		return fmt.Errorf("tracegen %s: %d trials a TTI; give 1 to 1024", m.Name, m.Trials)
	case m.MoveMS < m.TTIMS:
		return fmt.Errorf("tracegen %s: moves every %d ms, within a TTI of %d ms; give a mean of at least one TTI", m.Name, m.MoveMS, m.TTIMS)
	}
	for _, k := range m.StatesKbps {
		if m.perTrial(k) > 1<<32 {
			return fmt.Errorf("tracegen %s: %d kbit/s needs more than %d opportunities a scheduled TTI; give more trials", m.Name, k, m.Trials)
		}
	}
	return nil
}

// scheduled returns m.Scheduled, at most 2^32 and at least 1.
func (m Model) scheduled() uint64 { return max(min(m.Scheduled, 1<<32), 1) }

// perTrial is the probability, out of 2^32, that a trial of a scheduled
// TTI in a state of kbps gives an opportunity: the state's mean
// opportunities a TTI (kbps*TTI/12000), over the share of TTIs scheduled,
// over the trials. Above 2^32 (more than Trials a TTI) it returns 2^33.
func (m Model) perTrial(kbps uint32) uint64 {
	den := uint64(OpportunityBits) * m.scheduled() * uint64(m.Trials) // < 2^57
	hi := uint64(kbps) * uint64(m.TTIMS)                              // the numerator is hi * 2^64
	if hi >= den {
		return 1 << 33
	}
	q, _ := bits.Div64(hi, 0, den)
	return q
}

// MeanKbps is the process's stationary mean rate in kbit/s, exactly as
// the integer thresholds give it (within a rounding of the nominal mean
// of StatesKbps).
func (m Model) MeanKbps() float64 {
	var sum float64
	for _, k := range m.StatesKbps {
		perTTI := float64(m.scheduled()) / (1 << 32) * float64(m.Trials) * float64(m.perTrial(k)) / (1 << 32)
		sum += perTTI * OpportunityBits / float64(m.TTIMS) // bits a ms: kbit/s
	}
	return sum / float64(len(m.StatesKbps))
}

// Generate returns the trace: the opportunities' times in ms, non
// decreasing, the last at DurationMS (the last TTI gives one at least, so
// that the trace repeats with period DurationMS).
func (m Model) Generate() ([]uint32, error) {
	if err := m.Check(); err != nil {
		return nil, err
	}
	r := splitmix{state: m.Seed}
	thresholds := make([]uint64, len(m.StatesKbps))
	for i, k := range m.StatesKbps {
		thresholds[i] = m.perTrial(k)
	}
	move := uint64(m.TTIMS) << 32 / uint64(m.MoveMS) // per TTI, each way
	state := len(m.StatesKbps) / 2
	var out []uint32
	for t := m.TTIMS; t <= m.DurationMS; t += m.TTIMS {
		n := 0
		if uint64(r.u32()) < m.scheduled() {
			for range m.Trials {
				if uint64(r.u32()) < thresholds[state] {
					n++
				}
			}
		}
		if t+m.TTIMS > m.DurationMS {
			n = max(n, 1) // the last TTI: the trace's period
			t = m.DurationMS
		}
		for range n {
			out = append(out, t)
		}
		switch c := uint64(r.u32()); {
		case c < move && state+1 < len(m.StatesKbps):
			state++
		case c >= move && c < 2*move && state > 0:
			state--
		}
	}
	return out, nil
}

// Write writes times as a mahimahi trace: one decimal number a line.
func Write(w io.Writer, times []uint32) error {
	b := bufio.NewWriter(w)
	var buf [16]byte
	for _, t := range times {
		if _, err := b.Write(strconv.AppendUint(buf[:0], uint64(t), 10)); err != nil {
			return err
		}
		if err := b.WriteByte('\n'); err != nil {
			return err
		}
	}
	return b.Flush()
}

// splitmix is splitmix64 (Steele, Lea and Flood): a small generator whose
// output is fixed by its seed.
type splitmix struct{ state uint64 }

func (s *splitmix) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// u32 returns the next draw's high 32 bits.
func (s *splitmix) u32() uint32 { return uint32(s.next() >> 32) }
