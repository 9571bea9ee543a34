package benchmarks

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

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
// timeline, with each run's configured rate as a dashed line), to path:
// .svg or .png.
func Chart(path string, sums []Summary, timeline []Summary) error {
	var plots []*plot.Plot
	if p, ok := throughputPlot(sums); ok {
		plots = append(plots, p)
	}
	if p, ok, err := rttPlot(sums); err != nil {
		return err
	} else if ok {
		plots = append(plots, p)
	}
	if len(timeline) > 0 {
		p, err := timelinePlot(timeline)
		if err != nil {
			return err
		}
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return fmt.Errorf("--chart: nothing to draw")
	}
	w, h := vg.Length(len(plots))*6*vg.Inch, 4*vg.Inch
	var canvas vg.CanvasSizer
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png":
		canvas = vgimg.New(w, h)
	case ".svg":
		canvas = vgsvg.New(w, h)
	default:
		return fmt.Errorf("--chart %s: give a .svg or .png file name", path)
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	switch cv := canvas.(type) {
	case *vgimg.Canvas:
		_, err = vgimg.PngCanvas{Canvas: cv}.WriteTo(f)
	case *vgsvg.Canvas:
		_, err = cv.WriteTo(f)
	}
	if err != nil {
		return err
	}
	return f.Close()
}

func throughputPlot(sums []Summary) (*plot.Plot, bool) {
	series := map[string]plotter.XYs{}
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
		series[name] = append(series[name], plotter.XY{X: float64(s.Rounds[0].Streams), Y: m})
	}
	if len(names) == 0 {
		return nil, false
	}
	p := plot.New()
	p.Title.Text = "Goodput against streams (ceiling 100 Gbit/s)"
	p.X.Label.Text = "TCP streams"
	p.Y.Label.Text = "goodput, Mbit/s"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.ConstantTicks(streamTicks(series))
	p.Y.Min = 0
	p.Legend.Left = false
	for i, name := range names {
		l, pts, err := plotter.NewLinePoints(series[name])
		if err != nil {
			continue
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	return p, true
}

func streamTicks(series map[string]plotter.XYs) []plot.Tick {
	seen := map[float64]bool{}
	var ticks []plot.Tick
	for _, xys := range series {
		for _, xy := range xys {
			if !seen[xy.X] {
				seen[xy.X] = true
				ticks = append(ticks, plot.Tick{Value: xy.X, Label: fmt.Sprint(xy.X)})
			}
		}
	}
	return ticks
}

// rttPlot draws the bufferbloat suite's TCP probe RTT over time at its
// first rate, one line per candidate (first round), on a log scale.
func rttPlot(sums []Summary) (*plot.Plot, bool, error) {
	p := plot.New()
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Label.Text = "seconds since the streams started"
	p.Y.Label.Text = "probe RTT, ms (log scale)"
	setting := ""
	for i, name := range BufferbloatNames {
		for _, s := range sums {
			if s.Suite != "bufferbloat" || s.Candidate.Name() != name || len(s.Rounds) == 0 || (setting != "" && s.Setting != setting) {
				continue
			}
			setting = s.Setting
			var xys plotter.XYs
			for _, pt := range s.Rounds[0].ProbeRTTs {
				xys = append(xys, plotter.XY{X: pt.At.Seconds(), Y: math.Max(float64(pt.RTT)/float64(time.Millisecond), 0.01)})
			}
			if len(xys) == 0 {
				continue
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, false, err
			}
			l.Color = plotutil.Color(i)
			p.Add(l)
			p.Legend.Add(name, l)
		}
	}
	if setting == "" {
		return nil, false, nil
	}
	p.Title.Text = "RTT of a sparse flow under 4 bulk streams, " + setting
	p.Legend.Top = true
	return p, true, nil
}

func timelinePlot(runs []Summary) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "On-wire rate over time"
	p.X.Label.Text = "seconds since the streams started"
	p.Y.Label.Text = "Mbit/s (100 ms samples)"
	p.Y.Min = 0
	maxT := 0.0
	for i, s := range runs {
		if len(s.Rounds) == 0 {
			continue
		}
		r := s.Rounds[0]
		xys := make(plotter.XYs, 0, len(r.Timeline))
		for _, pt := range r.Timeline {
			xys = append(xys, plotter.XY{X: pt.At.Seconds(), Y: pt.WireBps * 8 / 1e6})
			maxT = math.Max(maxT, pt.At.Seconds())
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		p.Add(l)
		label := s.Candidate.Name()
		if s.Setting != "" {
			label += " @ " + s.Setting
		}
		p.Legend.Add(label, l)
	}
	for i, s := range runs {
		if s.Candidate.Rate == 0 {
			continue
		}
		y := float64(s.Candidate.Rate) * 8 / 1e6
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: y}, {X: maxT, Y: y}})
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	return p, nil
}
