package benchmarks

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// JSONRun is one candidate at one setting in --json output: medians over
// rounds, and each round's on-wire rate.
type JSONRun struct {
	Suite       string      `json:"suite,omitempty"`
	Setting     string      `json:"setting,omitempty"`
	QDisc       string      `json:"qdisc"`
	Impl        string      `json:"impl"`
	Streams     int         `json:"streams"`
	RateBps     uint64      `json:"rate_Bps"`
	PaceBps     uint64      `json:"pace_Bps,omitempty"`
	WireBps     float64     `json:"wire_Bps"`
	GoodputBps  float64     `json:"goodput_Bps"`
	RTTIdleMs   float64     `json:"rtt_idle_ms"`
	RTTP50Ms    float64     `json:"rtt_p50_ms"`
	RTTP99Ms    float64     `json:"rtt_p99_ms"`
	Drops       uint64      `json:"drops"`
	CPUsPerGB   float64     `json:"cpu_s_per_GB"`
	CPUPercent  float64     `json:"cpu_percent"`
	LateP50us   float64     `json:"wake_late_p50_us,omitempty"`
	LateP99us   float64     `json:"wake_late_p99_us,omitempty"`
	WakeupsPerS float64     `json:"wakeups_per_s,omitempty"`
	Rounds      []JSONRound `json:"rounds"`
	Description string      `json:"description,omitempty"`
	// The bufferbloat suite's: the variant ("fq_codel"), the UDP echo's
	// RTT, the echoes lost, and Jain's index over the streams.
	Variant      string  `json:"variant,omitempty"`
	UDPRTTP50Ms  float64 `json:"udp_rtt_p50_ms,omitempty"`
	UDPRTTP99Ms  float64 `json:"udp_rtt_p99_ms,omitempty"`
	UDPLost      float64 `json:"udp_lost,omitempty"`
	JainFairness float64 `json:"jain,omitempty"`
	ECNMarks     float64 `json:"ecn_marks,omitempty"`
}

// JSONRound is one round of a JSONRun.
type JSONRound struct {
	WireBps    float64 `json:"wire_Bps"`
	GoodputBps float64 `json:"goodput_Bps"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// JSON returns {"runs": [...]} for sums.
func JSON(sums []Summary) ([]byte, error) {
	var runs []JSONRun
	for _, s := range sums {
		if len(s.Rounds) == 0 {
			continue
		}
		med := func(f func(measure.Result) float64) float64 { m, _, _ := s.Median(f); return m }
		r0 := s.Rounds[0]
		j := JSONRun{
			Suite: s.Suite, Setting: s.Setting,
			QDisc: s.Candidate.QDisc, Impl: s.Candidate.Impl, Streams: r0.Streams,
			RateBps: s.Candidate.Rate, PaceBps: r0.Pace,
			WireBps: med(Wire), GoodputBps: med(Goodput),
			RTTIdleMs:   med(func(r measure.Result) float64 { return ms(r.IdleRTT) }),
			RTTP50Ms:    med(func(r measure.Result) float64 { return ms(r.RTT(0.5)) }),
			RTTP99Ms:    med(func(r measure.Result) float64 { return ms(r.RTT(0.99)) }),
			Drops:       uint64(med(func(r measure.Result) float64 { return float64(r.Drops) })),
			CPUsPerGB:   med(CPUPerGB),
			CPUPercent:  med(CPUPct),
			WakeupsPerS: med(WakeupsPerSec),
			Description: r0.Describe,
			Variant:     s.Candidate.Variant,
		}
		if len(r0.StreamBps) > 0 {
			j.UDPRTTP50Ms = med(func(r measure.Result) float64 { return ms(r.UDPRTT(0.5)) })
			j.UDPRTTP99Ms = med(func(r measure.Result) float64 { return ms(r.UDPRTT(0.99)) })
			j.UDPLost = med(UDPLost)
			j.JainFairness = med(Fairness)
			j.ECNMarks = med(Marks)
		}
		if s.Candidate.QDisc == "none" {
			j.Impl = "netqdisc"
		}
		for _, r := range s.Rounds {
			j.Rounds = append(j.Rounds, JSONRound{WireBps: r.WireBps, GoodputBps: r.GoodputBps})
		}
		runs = append(runs, j)
	}
	return json.MarshalIndent(struct {
		Runs []JSONRun `json:"runs"`
	}{runs}, "", "  ")
}

// Chart draws, side by side, goodput against streams (when sums has a
// throughput suite), the probe's RTT over time under load (when sums has a
// bufferbloat suite) and on-wire rate over time (the timelines of
// timeline, with each run's configured rate as a dashed line), to path: an
// .svg file.
func Chart(path string, sums []Summary, timeline []Summary) error {
	if strings.ToLower(filepath.Ext(path)) != ".svg" {
		return fmt.Errorf("--chart %s: give a .svg file name", path)
	}
	var panels []chartPanel
	if p, ok := throughputPanel(sums); ok {
		panels = append(panels, p)
	}
	if p, ok := rttPanel(sums); ok {
		panels = append(panels, p)
	}
	if len(timeline) > 0 {
		panels = append(panels, timelinePanel(timeline))
	}
	if len(panels) == 0 {
		return fmt.Errorf("--chart: nothing to draw")
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeSVG(f, panels); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// throughputPanel draws the throughput suite's median goodput against the
// number of streams, a line with markers per candidate, on a log x axis
// ticked at the stream counts run.
func throughputPanel(sums []Summary) (chartPanel, bool) {
	series := map[string][]xy{}
	var names []string
	for _, s := range sums {
		if s.Suite != "throughput" || len(s.Rounds) == 0 {
			continue
		}
		name := s.Candidate.Name()
		if _, ok := series[name]; !ok {
			names = append(names, name)
		}
		m, _, _ := s.Median(Mbps(Goodput))
		series[name] = append(series[name], xy{X: float64(s.Rounds[0].Streams), Y: m})
	}
	if len(names) == 0 {
		return chartPanel{}, false
	}
	p := chartPanel{
		Title: "Goodput against streams (ceiling 100 Gbit/s)",
		X:     chartAxis{Label: "TCP streams", Log: true, Ticks: streamTicks(series)},
		Y:     chartAxis{Label: "goodput, Mbit/s", FromZero: true},
	}
	for i, name := range names {
		p.Series = append(p.Series, chartSeries{Name: name, Points: series[name], Colour: i, Markers: true})
	}
	return p, true
}

// streamTicks returns the stream counts of series, each once, in order.
func streamTicks(series map[string][]xy) []float64 {
	seen := map[float64]bool{}
	var ticks []float64
	for _, pts := range series {
		for _, pt := range pts {
			if !seen[pt.X] {
				seen[pt.X] = true
				ticks = append(ticks, pt.X)
			}
		}
	}
	slices.Sort(ticks)
	return ticks
}

// rttPanel draws the bufferbloat suite's TCP probe RTT over time at its
// first rate, one line per candidate (first round), on a log scale.
func rttPanel(sums []Summary) (chartPanel, bool) {
	p := chartPanel{
		X:         chartAxis{Label: "seconds since the streams started"},
		Y:         chartAxis{Label: "probe RTT, ms (log scale)", Log: true},
		LegendTop: true,
	}
	setting := ""
	for i, name := range BufferbloatNames {
		for _, s := range sums {
			if s.Suite != "bufferbloat" || s.Candidate.Name() != name || len(s.Rounds) == 0 || (setting != "" && s.Setting != setting) {
				continue
			}
			setting = s.Setting
			var pts []xy
			for _, pt := range s.Rounds[0].ProbeRTTs {
				// A log axis has no 0: an RTT under 10 µs is drawn at 0.01 ms.
				pts = append(pts, xy{X: pt.At.Seconds(), Y: math.Max(float64(pt.RTT)/float64(time.Millisecond), 0.01)})
			}
			if len(pts) == 0 {
				continue
			}
			p.Series = append(p.Series, chartSeries{Name: name, Points: pts, Colour: i})
		}
	}
	if setting == "" {
		return chartPanel{}, false
	}
	p.Title = "RTT of a sparse flow under 4 bulk streams, " + setting
	return p, true
}

// timelinePanel draws each run's on-wire rate over time (first round), and
// its configured rate, if it has one, as a dashed line in the same colour.
func timelinePanel(runs []Summary) chartPanel {
	p := chartPanel{
		Title: "On-wire rate over time",
		X:     chartAxis{Label: "seconds since the streams started"},
		Y:     chartAxis{Label: "Mbit/s (100 ms samples)", FromZero: true},
	}
	maxT := 0.0
	for i, s := range runs {
		if len(s.Rounds) == 0 {
			continue
		}
		r := s.Rounds[0]
		pts := make([]xy, 0, len(r.Timeline))
		for _, pt := range r.Timeline {
			pts = append(pts, xy{X: pt.At.Seconds(), Y: pt.WireBps * 8 / 1e6})
			maxT = math.Max(maxT, pt.At.Seconds())
		}
		label := s.Candidate.Name()
		if s.Setting != "" {
			label += " @ " + s.Setting
		}
		p.Series = append(p.Series, chartSeries{Name: label, Points: pts, Colour: i})
	}
	for i, s := range runs {
		if s.Candidate.Rate == 0 {
			continue
		}
		y := float64(s.Candidate.Rate) * 8 / 1e6
		p.Series = append(p.Series, chartSeries{Points: []xy{{X: 0, Y: y}, {X: maxT, Y: y}}, Colour: i, Dashed: true})
	}
	return p
}
